#pragma once

// The figures that compare runs, each defined once. The app's summary, pins, lessons and plot
// labels, every CLI table and JSON, and the planner's evaluations read them from here, so that
// "saved", "peak change" and "recompute overhead" mean the same thing wherever they are shown.

#include <cstdint>
#include <optional>
#include <vector>

#include "engine/trace/trace.hpp"

namespace ckpt {

struct RunSummary;
struct RunResult;
struct RunSettings;

// Bytes kept for the backward pass when the forward ends: activations saved for backward plus
// the inputs checkpoints keep. Not the RNG state checkpoints stash (a category of its own), not
// parameters, inputs or temporaries.
std::int64_t saved_for_backward(const CategoryBytes& live_at_forward_end);

// A peak against a reference peak (the plain run's, a pin's, the previous configuration's).
struct PeakChange {
  std::int64_t bytes = 0;  // peak - reference: negative when the peak is lower
  double percent = 0;      // bytes over the reference, in percent (0 for a reference of 0)
  double ratio = 0;        // peak over the reference (0 for a reference of 0)
  // The memory the peak saves against the reference (negative: it costs more).
  std::int64_t saving() const { return -bytes; }
};
PeakChange peak_change(std::int64_t peak, std::int64_t reference);

// Recomputed op executions over the forward's, in percent (0 without forward executions).
double recompute_overhead_percent(const PhaseCounts& executions);

// Whether a run on a device with a caching allocator (cuda) fits a GPU of `capacity` bytes: what
// the process takes from the card is the allocator's reserved peak plus the CUDA context (the
// driver's and the libraries' own memory, outside the allocator). The context is an estimate:
// PyTorch 2.x with cuBLAS and cuDNN loaded holds about kCudaContextBytes on an H100/H200
// (nvidia-smi's figure minus torch.cuda.memory_reserved on an idle process); it varies by
// driver and GPU, and the figure is labelled an estimate wherever it is shown.
inline constexpr std::int64_t kCudaContextBytes = std::int64_t{520} << 20;
struct GpuFit {
  std::int64_t reserved_peak = 0;
  std::int64_t context = kCudaContextBytes;
  std::int64_t capacity = 0;
  std::int64_t total() const { return reserved_peak + context; }
  bool fits() const { return total() <= capacity; }
};
// Empty for a run without a caching allocator (the cpu).
std::optional<GpuFit> gpu_fit(const RunResult& run, const RunSettings& settings);

// The memory of a training step's phases, as PyTorch's allocator statistics measure them around
// the phases of a step (the GPU oracle's fields, docs/reference/gpu-oracle.md, train/): what is
// live before the first op (parameters, buffers, the optimizer's state, the inputs), the highest
// point of forward, loss and backward (recomputation included), what is live once backward has
// ended (the gradients, and what the run still holds), and the optimizer step's own peak, which
// starts from that. Without an optimizer step the last two are the run's end.
struct StepPhases {
  std::int64_t start = 0;
  std::int64_t peak_forward_backward = 0;
  std::int64_t after_backward = 0;
  std::int64_t peak_optimizer_step = 0;
  bool has_optimizer_step = false;
};
// With `block_bytes` (ReservedMemory::block_bytes, a run with a caching allocator), each
// allocation counts its allocator block, as torch.cuda.memory_allocated does.
StepPhases step_phases(const Trace& trace, const std::vector<std::int64_t>* block_bytes = nullptr);

// A run against the same settings without any checkpoint (RunSummary::baseline).
struct AgainstPlain {
  PeakChange peak;
  std::int64_t extra_executions = 0;  // op executions beyond the plain run's
  double execution_ratio = 0;         // op executions over the plain run's (0 if it had none)
  double time_ratio = 0;              // total time over the plain run's (0 if it took none)
};
// Empty when the summary has no baseline. A failed run's figures are the failure's, not a
// saving: callers show them as not comparable (RunSummary::ok).
std::optional<AgainstPlain> against_plain(const RunSummary& s);

}  // namespace ckpt
