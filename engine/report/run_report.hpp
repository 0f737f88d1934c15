#pragma once

// Everything a run shows besides its trace, derived once per run in the engine: the memory
// series the plot draws, the state timeline the graph animates, the summary, the lessons and
// the request in words. The request's pipeline (engine/request/execute.hpp) builds it for the
// app, the CLI and the lessons alike, so all of them show the same figures and lessons.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/report/lessons.hpp"
#include "engine/report/memory_series.hpp"
#include "engine/report/run_summary.hpp"
#include "engine/report/state_timeline.hpp"
#include "engine/run/run_request.hpp"

namespace ckpt {

// How much of a report a caller needs: none (the planner judges results itself), the summary
// (the CLI's tables), or everything a view draws.
enum class ReportDetail : std::uint8_t { none, summary, full };

struct RunReport {
  std::string config_text;                        // describe_request(request)
  MemorySeriesPtr series;                         // full only
  std::shared_ptr<const StateTimeline> timeline;  // full only
  RunSummary summary;
  std::vector<Lesson> lessons;  // full only
};

// `baseline`: the same settings run without checkpoints (the summary's comparison), or null.
// `not_computed`: why the real run was not started (the memory guard), for a dry run shown in
// its place.
// The memory series of a run of `model` as the plot draws it: the trace's, made one rank's when
// `settings` shard the run (FSDP2, fsdp_memory.hpp). report_run's series is this one.
MemorySeries series_of_run(const Model& model, const Trace& trace, const RunSettings& settings);

RunReport report_run(const Model& model, const RunRequest& request, const RunResult& result,
                     const RunResult* baseline = nullptr, ReportDetail detail = ReportDetail::full,
                     const std::string& not_computed = {});

}  // namespace ckpt
