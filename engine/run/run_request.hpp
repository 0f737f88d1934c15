#pragma once

// A run request, in three parts that change for different reasons: the CheckpointPlan says what
// to checkpoint, the RunSettings how to run it (device, variant, RNG, batch, ...), the RunHooks
// what a test wants to watch or break. The RunResult is what one run of the engine gives back.
// Whether two requests run the same is one function, same_run(): the app's kept results, its
// ghost and pins, and the planner's cache all ask it.
//
// CONTRACT shared by engine/, ui/ and app/cli: this is the one header of engine/run the app and
// the UI include (the request's pipeline is engine/request/execute.hpp). Additions are fine;
// changing or removing a member needs every user updated in the same change.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/model/model.hpp"
#include "engine/ops/schema/op_schema.hpp"
#include "engine/trace/caching_allocator.hpp"
#include "engine/trace/trace.hpp"

namespace ckpt {

// A per-op policy inside checkpointed regions (PyTorch 2.4+'s selective activation
// checkpointing, torchtitan's per-op mode): the outputs of the ops of the named kinds (the op
// table's PolicyKind names: mm, conv, sdpa) are kept for backward instead of recomputed; with
// every = n only the 1st, (n+1)-th, (2n+1)-th ... such op of each region (torchtitan keeps
// every second matmul: every = 2). No kind: the whole region is recomputed.
struct SelectivePolicy {
  std::vector<std::string> save;  // kinds, sorted, each once
  int every = 1;

  bool empty() const { return save.empty(); }
  // "none", "save-matmul" (every kind, the engine's first policy) or "save:KIND[,KIND...][/N]".
  std::string spelling() const;
  // The inverse of spelling(); a bad text is a std::invalid_argument naming the problem (an
  // unknown kind: the kinds there are).
  static SelectivePolicy parse(const std::string& text);
  static SelectivePolicy save_matmul();

  bool operator==(const SelectivePolicy&) const = default;
};

// The optimizer a training step ends with (engine/run/optimizer.hpp): none (the run stops after
// backward), SGD, SGD with momentum 0.9, Adam, AdamW, with PyTorch's update rules.
enum class OptimizerKind : std::uint8_t { none, sgd, momentum, adam, adamw };
const char* optimizer_name(OptimizerKind kind);  // "none", "sgd", "momentum", "adam", "adamw"
// The kind named `name` (as optimizer_name spells it); throws std::invalid_argument naming the
// kinds there are.
OptimizerKind optimizer_from_name(const std::string& name);

struct OptimizerSettings {
  OptimizerKind kind = OptimizerKind::none;
  // Unset: the kind's default (optimizer.hpp: optimizer_hyper). Values change what the step
  // computes, never what it allocates.
  std::optional<double> lr;
  std::optional<double> weight_decay;

  bool operator==(const OptimizerSettings&) const = default;
};

// FSDP2 (fully_shard) per rank, issue 39: `ranks` > 0 shards every block, then the root, over
// that many ranks (engine/report/fsdp_memory.hpp models what one rank holds).
struct FsdpSettings {
  int ranks = 0;  // 0: not sharded
  bool reshard_after_forward = true;
  DType reduce_dtype = DType::f32;  // MixedPrecisionPolicy(reduce_dtype)
  bool operator==(const FsdpSettings&) const = default;
};

// Mixed precision: the forward and the loss under torch.autocast with this lower precision
// (engine/ops/autocast.hpp), parameters and their gradients in float32. fp16 adds the gradient
// scaler (engine/run/grad_scaler.hpp).
enum class AmpMode : std::uint8_t { off, bf16, fp16 };
const char* amp_name(AmpMode mode);              // "off", "bf16", "fp16"
AmpMode amp_from_name(const std::string& name);  // throws std::invalid_argument

// What to checkpoint.
struct CheckpointPlan {
  std::set<std::string> modules;  // module instance paths to checkpoint (nesting allowed)
  // Contiguous ranges of siblings, each checkpointed as one segment (first, last): module paths,
  // or ops that run directly in the common parent (see engine/model/module_range.hpp). A range
  // may hold or sit inside checkpointed modules, never overlap one partly.
  std::vector<std::pair<std::string, std::string>> ranges;
  int segments = 0;        // > 0: checkpoint_sequential over the top-level modules
  SelectivePolicy policy;  // in every checkpointed region without one of its own (below)
  // Regions with a policy of their own (a module path, or a range's label "first..last"): what
  // the planner chooses per block, full recompute (no entry, or an empty policy) or a per-op
  // policy.
  std::map<std::string, SelectivePolicy> policies;
  // Module instance paths whose saved tensors go to host memory instead of being recomputed
  // (torch.autograd.graph.save_on_cpu(pin_memory=True) around their call): on a device whose
  // host memory is apart from its own (cuda), engine/checkpoint/offload.hpp.
  std::set<std::string> offload;

  // Changes nothing from the plain run (a policy alone changes nothing: it acts inside
  // checkpointed regions).
  bool empty() const {
    return modules.empty() && ranges.empty() && segments == 0 && offload.empty();
  }
  // The policy of the checkpointed region `region` (a module path or a range's label).
  const SelectivePolicy& policy_for(const std::string& region) const {
    const auto it = policies.find(region);
    return it == policies.end() ? policy : it->second;
  }
  // Whether some region runs under a per-op policy.
  bool any_policy() const;
  // A canonical text of the plan: equal for equal plans whatever the order of their ranges (the
  // planner's cache key, and how tests compare plans).
  std::string key() const;
  // The plan that checkpoints nothing: the baseline every comparison figure is measured against.
  CheckpointPlan without() const { return {}; }
  // This plan without the module instance (or the range labelled) `path`.
  CheckpointPlan without(const std::string& path) const;

  bool operator==(const CheckpointPlan&) const = default;
};

// Explicit inputs compare by identity: two requests run the same when they hand the engine the
// same tensors (comparing values would cost a pass over every input).
struct ExplicitInputs : std::vector<Tensor> {
  using std::vector<Tensor>::vector;
  bool operator==(const ExplicitInputs& other) const;
};

// How to run it.
struct RunSettings {
  // Whose memory the run's figures are (engine/tensor/memory_semantics.hpp): cpu, PyTorch 1.13
  // on the CPU (this engine's own figures); cuda, what PyTorch 2.x holds on an NVIDIA GPU. A dry
  // run stands in for it on the meta device, so a CUDA dry run needs no GPU; a real run on cuda
  // needs one.
  Device device = Device::cpu;
  bool use_reentrant = true;  // PyTorch 1.13's default
  bool preserve_rng_state = true;
  bool early_stop = false;
  bool check_recompute = true;  // compare recomputed values with the forward's (checksums)
  std::uint64_t seed = 0;
  std::int64_t batch = 0;                   // 0: the scenario's
  std::optional<bool> input_requires_grad;  // unset: each input's own setting
  std::optional<LossKind> loss;             // unset: the scenario's
  int threads = 0;                          // 0: leave as is
  // The memory a real run may use: the memory guard's limit and the ledger's cap (0: the
  // guard's default share of the memory available now, and no cap).
  std::int64_t max_memory = 0;
  // The GPU's memory a cuda request is judged against (`--gpu-memory`): its reserved peak plus
  // the CUDA context must fit (engine/report/figures.hpp, gpu_fit).
  std::int64_t gpu_memory = std::int64_t{80} << 30;
  ExplicitInputs inputs;  // explicit inputs (in model input order), or empty
  bool backward = true;   // false: forward and loss only (inference)
  // A dry run: the whole run on the meta device (engine/tensor/device.hpp). Every allocation
  // and free is the real run's, byte for byte and in order, so its trace, peak and activation
  // states are exact; no kernel computes, so there are no values (loss, outputs, gradients
  // and the recompute check's value comparison are not available) and the step times are
  // estimates (run/time_estimate.hpp). The ledger's cap does not apply. A request that is a dry
  // run is answered by its dry run alone.
  bool dry_run = false;
  // The training step's end: the optimizer's step after backward, its state live from the
  // run's start as in every step after the first (none: the run stops after backward).
  OptimizerSettings optimizer;
  AmpMode amp = AmpMode::off;
  // MixedPrecisionPolicy(param_dtype): the forward and backward compute with the parameters
  // (and floating inputs and buffers) in this dtype; FSDP keeps the float32 shard for the
  // optimizer (fsdp_memory.hpp). float32: as loaded.
  DType param_dtype = DType::f32;
  FsdpSettings fsdp;
  // The host link's bandwidth an offloaded module's copies are timed at (`--pcie`, GB/s).
  double pcie_gb_per_s = 25;

  bool operator==(const RunSettings&) const = default;
};

// What a test wants to watch or break; the app and the CLI's users leave these alone.
struct RunHooks {
  // The ledger the run draws from; null: a fresh one. A test passes its own to count the run's
  // allocations and to see that a failed run leaves nothing behind.
  std::shared_ptr<MemoryLedger> ledger;
  // Fault injection: the run's k-th allocation (1-based, counted from its first parameter's)
  // fails with a named error, as MemoryLedger::fail_allocation_at says; 0 for none. Real runs
  // only, like the cap: the memory guard's dry run before a real run must not trip it.
  std::int64_t fail_allocation_at = 0;
  // PyTorch's anomaly mode: a NaN or Inf in any forward, recomputed or backward op's output
  // (or the loss) fails the run naming the op and phase (engine/autograd/anomaly.hpp). A dry
  // run has no values to check.
  bool detect_anomaly = false;

  bool operator==(const RunHooks&) const = default;
};

struct RunRequest {
  CheckpointPlan plan;
  RunSettings settings;
  RunHooks hooks;
};

// Whether two requests run the same: same plan, settings and hooks. What the app's kept results,
// its ghost and pins are keyed by.
bool same_run(const RunRequest& a, const RunRequest& b);

// The request a sample opens with: its default checkpointed modules, variant, RNG setting,
// segments, seed and batch.
RunRequest scenario_request(const Model& model);

struct PhaseTimes {
  double forward_ms = 0;
  double backward_ms = 0;  // includes recomputation
  double recompute_ms = 0;
  double optimizer_ms = 0;  // the optimizer's step
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
  // With an optimizer: every trainable parameter after its step, and the optimizer's state by
  // parameter name and state name ("exp_avg", "exp_avg_sq", "step", "momentum_buffer"), as
  // torch.optim's state_dict holds it after the step.
  std::map<std::string, Tensor> parameters;
  std::map<std::string, std::map<std::string, Tensor>> optimizer_state;
  PhaseTimes times;
  // A dry run's result: exact bytes, estimated times, and tensors (outputs, loss, gradients)
  // that have shapes and no values (on the meta device).
  bool dry_run = false;
  // A dry run's FLOPs and bytes per model node (its op-table rows' costs), what its estimated
  // times come from: the planner re-times them at another device's rates (time_estimate.hpp).
  std::unordered_map<std::string, OpCost> node_costs;
  // On a device with a caching allocator (cuda), the memory it reserves for the trace's
  // allocations (engine/trace/caching_allocator.hpp); absent on the cpu.
  std::optional<ReservedMemory> reserved;
  // With offloaded modules: the host memory their saved tensors took and the copies each way,
  // with the copies' time at the settings' bandwidth (an estimate, not in the phase times).
  struct Offload {
    std::int64_t host_peak_bytes = 0;
    std::int64_t to_host_bytes = 0;
    std::int64_t to_device_bytes = 0;
    double copy_ms = 0;
    double pcie_gb_per_s = 0;  // the bandwidth copy_ms assumes
  };
  std::optional<Offload> offload;

  void set_status(RunStatus s, std::string message = {}) {
    status = s;
    ok = s == RunStatus::ok;
    error = std::move(message);
  }
  bool cancelled() const { return status == RunStatus::cancelled; }
};

}  // namespace ckpt
