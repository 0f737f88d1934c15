#include "engine/report/run_report.hpp"

#include "engine/report/config_text.hpp"

namespace ckpt {

RunReport report_run(const Model& model, const CheckpointConfig& config, const RunResult& result) {
  RunReport r;
  r.config_text = describe_config(config);
  auto series = std::make_shared<MemorySeries>(memory_series_from_trace(result.trace));
  series->failed = !result.ok;
  series->dry_run = result.dry_run;
  for (const auto& m : result.trace.messages())
    if (m.severity == Severity::warning) series->warned = true;
  r.series = std::move(series);
  r.timeline = std::make_shared<const StateTimeline>(build_state_timeline(model, result.trace));
  r.summary = summarize(model, result, r.config_text);
  r.lessons = lessons_of(model, config, result);
  return r;
}

}  // namespace ckpt
