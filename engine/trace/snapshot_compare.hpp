#pragma once

// A measured snapshot beside the engine's prediction for the same model and configuration.
// Device-agnostic: the prediction is any Trace (today the engine's dry run; the CUDA dry run of
// issue 26 when it lands), the measurement any MeasuredTimeline.

#include <cstdint>
#include <string>
#include <vector>

#include "engine/snapshot/measured_timeline.hpp"
#include "engine/trace/trace.hpp"

namespace ckpt {

struct SnapshotComparison {
  std::int64_t measured_peak = 0;   // torch.cuda.max_memory_allocated() over the recording
  std::int64_t measured_start = 0;  // allocated when recording began (workspaces, kept state)
  // What the recorded step itself added at its peak: measured_peak - measured_start. The
  // figure to set beside the engine's peak when the step builds its model (as the GPU oracle's
  // do); a training loop's snapshot starts with parameters and optimizer state already there.
  std::int64_t measured_step_peak = 0;
  std::int64_t predicted_peak = 0;  // Trace::peak(): parameters and inputs included
  std::int64_t predicted_start = 0;
  // The libraries' buffers the prediction holds from before its first op (cuBLAS's workspace
  // under CUDA semantics, MemoryCategory::workspace): a process has them before any recording
  // begins, so the measured start counts them too and the step's peak does not.
  std::int64_t predicted_workspace = 0;
  // What the predicted step adds at its peak: predicted_peak - predicted_workspace.
  std::int64_t predicted_step_peak = 0;
  std::int64_t difference = 0;  // measured_step_peak - predicted_step_peak
  double ratio = 0;             // measured_step_peak / predicted_step_peak (0 without a prediction)
};

SnapshotComparison compare_snapshot(const MeasuredTimeline& measured, const Trace& predicted);

// A curve on a shared horizontal axis: x from 0 (the start) to 1 (the end of the recording or
// of the run), so that a trace of 700 GPU events and one of 400 engine steps overlay.
struct OverlayCurve {
  std::vector<double> x;
  std::vector<std::int64_t> bytes;
  double peak_x = 0;
  std::int64_t peak_bytes = 0;
};

// The measured bytes after each event (after a point at x = 0 for the start itself):
// allocated absolute (what memory_allocated() said), or above the recording's start (its peak
// is then the comparison's measured_step_peak); reserved absolute.
enum class CurveBase { absolute, above_start };
OverlayCurve allocated_curve(const MeasuredTimeline& measured, CurveBase base);
OverlayCurve reserved_curve(const MeasuredTimeline& measured);
// The engine's live total after each step (after a point for the state before the first).
OverlayCurve predicted_curve(const Trace& predicted);

}  // namespace ckpt
