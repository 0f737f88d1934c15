#pragma once

// The figures of a run, as the run summary dock shows them and the CLI prints them: peak and
// where it happens, bytes by category at the peak, op executions per phase and the recompute
// overhead, checkpoint count and RNG-state bytes. Qt-free.

#include <cstdint>
#include <string>
#include <vector>

#include "engine/run/runner.hpp"

namespace ckpt::ui {

struct RunSummary {
  bool ok = false;
  std::string error;
  std::int64_t peakBytes = 0;
  std::int64_t peakStep = -1;
  std::string peakOp;  // op (and node) at the peak
  Phase peakPhase = Phase::forward;
  CategoryBytes peakByCategory{};
  PhaseCounts counts;
  double recomputeOverhead = 0;         // recompute op executions / forward op executions
  std::int64_t checkpointSegments = 0;  // forward passes of checkpointed segments
  std::int64_t recomputeSegments = 0;   // recompute spans
  std::int64_t rngStateBytesMax = 0;    // the most RNG-state bytes held at once
  std::int64_t forwardEndBytes = 0;     // live at the end of the forward
  std::int64_t warnings = 0;
  std::int64_t errors = 0;
  PhaseTimes times;
  std::int64_t traceFootprint = 0;
};

RunSummary summarize(const RunResult& result);

// Plain-text table, the same lines the CLI prints.
std::string formatSummary(const RunSummary& summary);

// "none", "features.denseblock1", "features.denseblock1 + 2 more"; then the variant.
std::string describeConfig(const CheckpointConfig& config);

}  // namespace ckpt::ui
