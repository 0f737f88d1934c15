#pragma once

// The Runner: Model + CheckpointConfig -> one real forward, loss and backward -> Trace,
// outputs and gradients (DESIGN.md "run").
//
// CONTRACT shared by engine/run, ui/ and app/cli. Additions are fine; changing or removing a
// member needs every user updated in the same change.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/model/model.hpp"
#include "engine/trace/caching_allocator.hpp"
#include "engine/trace/trace.hpp"

namespace ckpt {

enum class SelectivePolicy : std::uint8_t { none, save_matmul };

// Explicit inputs compare by identity: two configurations run the same when they hand the
// Runner the same tensors (comparing values would cost a pass over every input).
struct ExplicitInputs : std::vector<Tensor> {
  using std::vector<Tensor>::vector;
  bool operator==(const ExplicitInputs& other) const;
};

struct CheckpointConfig {
  std::set<std::string> modules;  // module instance paths to checkpoint (nesting allowed)
  // Contiguous ranges of siblings, each checkpointed as one segment (first, last): module paths,
  // or ops that run directly in the common parent (see engine/run/module_range.hpp). A range
  // may hold or sit inside checkpointed modules, never overlap one partly.
  std::vector<std::pair<std::string, std::string>> ranges;
  int segments = 0;           // > 0: checkpoint_sequential over the top-level modules
  bool use_reentrant = true;  // PyTorch 1.13's default
  bool preserve_rng_state = true;
  bool early_stop = false;
  bool check_recompute = true;  // compare recomputed values with the forward's (checksums)
  SelectivePolicy policy = SelectivePolicy::none;
  std::uint64_t seed = 0;
  std::int64_t batch = 0;                   // 0: the scenario's
  std::optional<bool> input_requires_grad;  // unset: each input's own setting
  std::optional<LossKind> loss;             // unset: the scenario's
  int threads = 0;                          // 0: leave as is
  std::int64_t max_memory = 0;              // the ledger's cap, 0 for none
  ExplicitInputs inputs;                    // explicit inputs (in model input order), or empty
  bool backward = true;                     // false: forward and loss only (inference)
  // A dry run: the whole run on the meta device (engine/tensor/device.hpp). Every allocation
  // and free is the real run's, byte for byte and in order, so its trace, peak and activation
  // states are exact; no kernel computes, so there are no values (loss, outputs, gradients
  // and the recompute check's value comparison are not available) and the step times are
  // estimates (run/time_estimate.hpp). The ledger's cap (max_memory) does not apply.
  bool dry_run = false;
  // Issue 26: whose memory the run's figures are (engine/tensor/memory_semantics.hpp): cpu,
  // PyTorch 1.13 on the CPU (this engine's own figures); cuda, what PyTorch 2.x holds on an
  // NVIDIA GPU. A dry run stands in for it on the meta device, so a CUDA dry run needs no GPU;
  // a real run on cuda needs one. Read in one place, Runner::run (moves to RunSettings with
  // issue 25's refactor of the run configuration).
  Device device = Device::cpu;
  // Fault injection: the run's k-th allocation (1-based, counted from its first parameter's)
  // fails with a named error, as MemoryLedger::fail_allocation_at says; 0 for none. Real runs
  // only, like the cap: the memory guard's dry run before a real run must not trip it.
  std::int64_t fail_allocation_at = 0;
  // The ledger the run draws from; null: a fresh one. A test passes its own to count the run's
  // allocations and to see that a failed run leaves nothing behind.
  std::shared_ptr<MemoryLedger> ledger;
  // PyTorch's anomaly mode: a NaN or Inf in any forward, recomputed or backward op's output
  // (or the loss) fails the run naming the op and phase (engine/autograd/anomaly.hpp). A dry
  // run has no values to check.
  bool detect_anomaly = false;

  // Every field: what the app's kept results, its ghost and the planner's cache are keyed by.
  bool operator==(const CheckpointConfig&) const = default;
};

struct PhaseTimes {
  double forward_ms = 0;
  double backward_ms = 0;  // includes recomputation
  double recompute_ms = 0;
  double total_ms = 0;
};

// How a run ended. A cancelled run (its cancel flag seen between ops) is not a failure to
// report: its caller asked for it to stop.
enum class RunStatus : std::uint8_t { ok, failed, cancelled };

struct RunResult {
  Trace trace;
  RunStatus status = RunStatus::failed;
  bool ok = false;    // status == RunStatus::ok (set together by set_status)
  std::string error;  // the engine's message when the run failed (the trace goes up to it)
  std::vector<Tensor> outputs;
  Tensor loss;
  std::map<std::string, Tensor> gradients;  // by parameter name (absent: no gradient)
  std::map<std::string, Tensor> input_gradients;
  // Buffers after the run (BatchNorm's running statistics, num_batches_tracked): a module
  // checkpointed around a BatchNorm updates them twice, as PyTorch does.
  std::map<std::string, Tensor> buffers;
  PhaseTimes times;
  // A dry run's result: exact bytes, estimated times, and tensors (outputs, loss, gradients)
  // that have shapes and no values (on the meta device).
  bool dry_run = false;
  // Issue 26: on a device with a caching allocator (cuda), the memory it reserves for the
  // trace's allocations (engine/trace/caching_allocator.hpp); absent on the cpu.
  std::optional<ReservedMemory> reserved;

  void set_status(RunStatus s, std::string message = {}) {
    status = s;
    ok = s == RunStatus::ok;
    error = std::move(message);
  }
  bool cancelled() const { return status == RunStatus::cancelled; }
};

class CompiledModel;

// The configuration a sample opens with: its default checkpointed modules, variant, RNG
// setting, segments, seed and batch.
CheckpointConfig scenario_config(const Model& model);

class Runner {
 public:
  explicit Runner(std::shared_ptr<const Model> model);
  // Thread-safe for distinct Runner objects; `cancel` is polled between ops (a cancelled run
  // returns status cancelled).
  RunResult run(const CheckpointConfig& config, const std::atomic<bool>* cancel = nullptr) const;
  const Model& model() const { return *model_; }
  const std::shared_ptr<const Model>& model_ptr() const { return model_; }

 private:
  // The Runner of the model loaded again at `batch` (a dynamic-batch ONNX file), compiled once:
  // the app runs every configuration at the Batch box's value, a dry run and then a real one.
  std::shared_ptr<const Runner> at_batch(std::int64_t batch) const;

  struct Rebatched;
  std::shared_ptr<const Model> model_;
  std::shared_ptr<const CompiledModel> compiled_;
  std::shared_ptr<Rebatched> rebatched_;
};

}  // namespace ckpt
