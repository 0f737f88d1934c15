#pragma once

// Everything a run shows besides its trace, derived once per run in the engine: the memory
// series the plot draws, the state timeline the graph animates, the summary, the lessons and
// the configuration in words. The app builds it on its worker thread, the CLI after its run;
// both show the same figures and the same lessons.

#include <memory>
#include <string>
#include <vector>

#include "engine/report/lessons.hpp"
#include "engine/report/memory_series.hpp"
#include "engine/report/state_timeline.hpp"
#include "engine/run/run_summary.hpp"
#include "engine/run/runner.hpp"

namespace ckpt {

struct RunReport {
  std::string config_text;  // describe_config(config)
  MemorySeriesPtr series;
  std::shared_ptr<const StateTimeline> timeline;
  RunSummary summary;
  std::vector<Lesson> lessons;
};

RunReport report_run(const Model& model, const CheckpointConfig& config, const RunResult& result);

}  // namespace ckpt
