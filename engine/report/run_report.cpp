#include "engine/report/run_report.hpp"

#include "engine/report/config_text.hpp"
#include "engine/tensor/memory_semantics.hpp"

namespace ckpt {

namespace {

bool sharded(const RunSettings& settings) {
  return settings.fsdp.ranks > 0 || settings.param_dtype != DType::f32;
}

}  // namespace

MemorySeries series_of_run(const Model& model, const Trace& trace, const RunSettings& settings) {
  MemorySeries series = memory_series_from_trace(trace);
  if (sharded(settings))
    show_per_rank(series, std::make_shared<const RankTimeline>(
                              fsdp_rank_memory(model, trace, settings).timeline));
  return series;
}

RunReport report_run(const Model& model, const RunRequest& request, const RunResult& result,
                     const RunResult* baseline, ReportDetail detail,
                     const std::string& not_computed) {
  RunReport r;
  if (detail == ReportDetail::none) return r;
  r.config_text = describe_request(request);
  r.summary = summarize(model, result, r.config_text, baseline);
  r.summary.gpu = gpu_fit(result, request.settings);
  r.summary.device = request.settings.device;
  r.summary.memory_of = memory_semantics(request.settings.device).whose;
  const RunSettings& settings = request.settings;
  std::shared_ptr<const RankTimeline> rank;
  if (sharded(settings) && result.ok) {
    FsdpRankMemory m = fsdp_rank_memory(model, result.trace, settings);
    r.summary.per_rank = fsdp_summary(m, result.trace);
    rank = std::make_shared<const RankTimeline>(std::move(m.timeline));
  }
  if (detail == ReportDetail::summary) return r;
  auto series = std::make_shared<MemorySeries>(memory_series_from_trace(result.trace));
  series->failed = !result.ok;
  series->dry_run = result.dry_run;
  series->not_computed = not_computed;
  series->memory_of = r.summary.memory_of;
  if (result.reserved) {
    series->reserved = result.reserved->after_step;
    series->reserved_peak = result.reserved->peak_bytes;
    series->reserved_peak_step = result.reserved->peak_step;
  }
  for (const auto& m : result.trace.messages())
    if (m.severity == Severity::warning) series->warned = true;
  if (rank) show_per_rank(*series, std::move(rank));
  r.series = std::move(series);
  r.timeline = std::make_shared<const StateTimeline>(build_state_timeline(model, result.trace));
  r.lessons = lessons_of(model, result);
  return r;
}

}  // namespace ckpt
