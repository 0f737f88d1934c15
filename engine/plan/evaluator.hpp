#pragma once

// The one door through which the planner judges a plan: every strategy's result, every point of
// the frontier and every candidate's cost comes from evaluate(), never from a cost model alone.
//
// An evaluation is a dry run of the engine on one thread (a dry-run request through
// engine/request/execute.hpp: the real run's allocations byte for byte, no arithmetic), so a
// plan's peak is exact at any size and costs a few percent of a real run. The recompute cost
// unit, each node's forward time, is the dry run's estimate from the op table's FLOPs and bytes
// against this machine's rates; with `measure_times`, the least of three real runs of the
// unplanned model when the memory guard lets them run (seconds, and a real run's memory, on a
// real-sized model).

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/request/run_target.hpp"

namespace ckpt {

struct Evaluation {
  // False when the run failed, or when a parameter the plain run trains gets no gradient (a
  // reentrant checkpoint whose inputs do not require grad): such a plan would not train.
  bool ok = false;
  std::string error;
  std::int64_t peak_bytes = 0;
  // Recompute cost: each recomputed op costs the forward time the baseline run measured for
  // its node (so that equal plans cost the same, whatever the machine's noise), in ns.
  std::int64_t recompute_ns = 0;
  std::int64_t recompute_ops = 0;  // op executions in recompute steps
  std::int64_t saved_bytes = 0;    // activations + checkpoint inputs at the end of the forward
  std::int64_t rng_bytes = 0;      // RNG states stashed by checkpoints at the end of the forward
  // On a device with a caching allocator (cuda): torch.cuda.max_memory_reserved of the dry run.
  std::int64_t reserved_peak = 0;
  // Copies of offloaded saved tensors to host memory and back (CheckpointPlan::offload), at the
  // settings' link bandwidth (--pcie), in ns.
  std::int64_t transfer_ns = 0;
  double recompute_ms() const { return static_cast<double>(recompute_ns) / 1e6; }
  // What the plan costs in time: its recompute and its copies (what the planner minimises).
  std::int64_t cost_ns() const { return recompute_ns + transfer_ns; }
  double cost_ms() const { return static_cast<double>(cost_ns()) / 1e6; }
};

// One storage the plain run's forward keeps for backward (parameters and model inputs left out):
// its bytes, the value it holds ("" for a copy an op made itself) and the first and last op
// that save it (indices into Model::ops; ops.size() for the loss and steps of no model op).
struct SavedUse {
  std::string value;
  std::int64_t bytes = 0;
  std::int64_t first_op = 0, last_op = 0;
};

class PlanEvaluator {
 public:
  // Plans are run with `settings` (variant, RNG, seed, batch, loss); `policy` is the per-op
  // policy the planner may give each region (a plan says which regions run under it:
  // CheckpointPlan::policies). Measures the baseline (no checkpoint) once: one dry run, and three
  // real runs for the per-node times when `measure_times` (and the memory guard lets them).
  // `gpu_times`: per-node times from the dry run's op costs at a reference GPU's rates, on the
  // clock of the offload's copies (the planner's offload choice, CandidateOptions::offload).
  PlanEvaluator(std::shared_ptr<const Model> model, RunSettings settings,
                SelectivePolicy policy = {}, const std::atomic<bool>* cancel = nullptr,
                bool measure_times = false, bool gpu_times = false);

  // Thread-safe; the same plan is run once (results are cached by its key).
  Evaluation evaluate(const CheckpointPlan& plan) const;
  const Evaluation& baseline() const { return baseline_; }
  // The baseline's dry run: its trace is what the planner's peak model is made of.
  const RunResult& plain_run() const { return *plain_; }
  // The forward time the baseline measured per op node, in ns (the recompute cost unit).
  const std::unordered_map<std::string, std::int64_t>& op_cost_ns() const { return op_ns_; }
  // From the baseline's trace: bytes each node saved for backward, forward steps per node, and
  // bytes of each named value (the cost model's inputs; plans are still judged by evaluate()).
  const std::unordered_map<std::string, std::int64_t>& saved_by_node() const { return saved_; }
  const std::unordered_map<std::string, std::int64_t>& node_steps() const { return steps_; }
  const std::unordered_map<std::string, std::int64_t>& value_bytes() const { return values_; }
  // Whether the plain run's value requires grad (it depends on a trainable parameter or on an
  // input that requires grad): a reentrant checkpoint none of whose inputs does cuts its
  // parameters off their gradients.
  bool requires_grad(const std::string& value) const { return grad_values_.count(value) > 0; }
  // Every storage the plain forward keeps for backward, with the ops that save it: one
  // forward-only dry run, on the first call (the peak model's input).
  const std::vector<SavedUse>& saved_uses() const;
  // Bytes the plan's forward keeps for backward, as PyTorch's saved_tensors_hooks count them
  // (distinct storages, parameters and buffers left out): a forward-only run.
  std::int64_t saved_for_backward(const CheckpointPlan& plan) const;
  // Runs made so far (cache misses), for the benchmarks and the report.
  std::int64_t runs() const;
  // Whether the per-node times behind recompute costs were measured (real baseline runs) or
  // estimated (the model does not fit this machine: dry-run estimates).
  bool times_measured() const { return times_measured_; }
  // Whether the per-node times are a reference GPU's estimates (`gpu_times`).
  bool gpu_times() const { return gpu_times_; }
  const Model& model() const { return target_.model(); }
  const RunSettings& settings() const { return settings_; }
  const SelectivePolicy& policy() const { return policy_; }
  // The plan as the evaluator runs it: with the settings as asked (the request a user runs,
  // and the code export writes).
  RunRequest request(const CheckpointPlan& plan) const;

 private:
  Evaluation measure(const RunResult& r) const;
  void check_gradients(const RunResult& r, Evaluation& e) const;

  // The plan as evaluate() runs it: a dry run on one thread, without the recompute check.
  RunRequest evaluation_request(const CheckpointPlan& plan) const;

  RunTarget target_;
  RunSettings settings_;
  SelectivePolicy policy_;
  const std::atomic<bool>* cancel_;
  std::unordered_map<std::string, std::int64_t> op_ns_, saved_, steps_, values_;
  std::unordered_set<std::string> grad_values_;
  Evaluation baseline_;
  std::shared_ptr<const RunResult> plain_;
  std::vector<std::string> gradients_;  // parameters the baseline gives a gradient
  mutable std::mutex mutex_;
  mutable std::map<std::string, Evaluation> cache_;
  mutable std::int64_t runs_ = 0;
  mutable std::once_flag uses_once_;
  mutable std::vector<SavedUse> uses_;
  bool times_measured_ = false;
  bool gpu_times_ = false;
};

}  // namespace ckpt
