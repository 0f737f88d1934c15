#pragma once

// The figures of one run, as the CLI prints them and the GUI's summary dock shows them: both
// call summarize(), so they agree to the byte.

#include <optional>
#include <string>
#include <vector>

#include "engine/report/failure_advice.hpp"
#include "engine/report/figures.hpp"
#include "engine/report/fsdp_memory.hpp"
#include "engine/run/run_request.hpp"

namespace ckpt {

struct RunSummary {
  std::string model;
  std::string label;  // the configuration's label ("plain", "all", ...)
  bool ok = false;
  // A dry run's figures: bytes exact, times estimated, no loss and no values (runner.hpp).
  bool dry_run = false;
  std::string error;
  FailureAdvice failure;  // a failed run: why, and what fixes it (its figures are no saving)
  double loss = 0;

  PeakInfo peak;
  std::string peak_op;    // op executing at the peak
  std::string peak_node;  // model node of that op
  Phase peak_phase = Phase::forward;
  CategoryBytes end_of_forward{};  // live bytes by category when the forward ends
  std::int64_t end_of_forward_total = 0;
  PhaseCounts executions;
  StepPhases step_phases;  // the training step's phases (figures.hpp)
  PhaseTimes times;
  std::int64_t checkpoints = 0;  // checkpointed segments run in the forward
  std::vector<TraceMessage> messages;

  // On a device with a caching allocator (cuda): what it reserved (its peak, where, and the
  // fragmentation at the allocated peak), and whether that fits the GPU the request names.
  struct Reserved {
    std::int64_t peak_bytes = 0;
    std::int64_t peak_step = -1;
    std::int64_t fragmentation_at_peak = 0;  // reserved - allocated at the allocated peak
    std::int64_t segments = 0;
  };
  std::optional<Reserved> reserved;
  // Offloaded modules' host memory and copies (RunResult::offload).
  std::optional<RunResult::Offload> offload;
  std::optional<GpuFit> gpu;
  // FSDP2 per rank (--fsdp, --param-dtype): what one rank holds, by category (fsdp_memory.hpp).
  std::optional<FsdpSummary> per_rank;
  Device device = Device::cpu;  // whose memory semantics the figures follow
  std::string memory_of;        // in words ("PyTorch 2.x on an NVIDIA GPU (CUDA)")

  // Against the same model run without checkpointing in the same process.
  struct Baseline {
    std::int64_t peak_bytes = 0;
    std::int64_t executions = 0;  // total op executions
    double total_ms = 0;
  };
  std::optional<Baseline> baseline;

  std::int64_t total_executions() const {
    return executions.forward + executions.recompute + executions.backward + executions.optimizer;
  }
};

RunSummary summarize(const Model& model, const RunResult& run, const std::string& label,
                     const RunResult* baseline = nullptr);

// Human-readable report (what `ckptlab-cli run` prints).
std::string summary_text(const RunSummary& s);
// Messages one per line, each line starting with `prefix`; messages that differ only in a quoted
// name (one per checkpoint) are shown once with a count.
std::string grouped_messages_text(const std::vector<TraceMessage>& messages,
                                  const std::string& prefix);
// One JSON object with documented, stable keys (see README "ckptlab-cli --json").
std::string summary_json(const RunSummary& s, int indent = 2);
// A JSON array of summaries (`compare --json`).
std::string summaries_json(const std::vector<RunSummary>& s, int indent = 2);
std::string format_bytes(std::int64_t bytes);

}  // namespace ckpt
