#include "engine/plan/evaluator.hpp"

#include <algorithm>
#include <stdexcept>

#include "engine/autograd/saved_tensors.hpp"
#include "engine/report/figures.hpp"
#include "engine/report/fsdp_memory.hpp"
#include "engine/request/execute.hpp"
#include "engine/run/time_estimate.hpp"

namespace ckpt {

namespace {

// The forward of a request alone, for what it saves: no backward, so no optimizer step either.
RunRequest forward_only(RunRequest request) {
  request.settings.backward = false;
  request.settings.optimizer.kind = OptimizerKind::none;
  return request;
}

// The pipeline's result alone: the planner reads figures from traces, it wants no report.
std::shared_ptr<const RunResult> run_plain(const RunTarget& target, const RunRequest& request,
                                           const std::atomic<bool>* cancel) {
  RequestOptions options;
  options.report = ReportDetail::none;
  options.cancel = cancel;
  RunOutcome outcome = execute(target, request, options);
  if (outcome.result) return std::move(outcome.result);
  auto cancelled = std::make_shared<RunResult>();
  cancelled->set_status(RunStatus::cancelled, "cancelled");
  return cancelled;
}

}  // namespace

PlanEvaluator::PlanEvaluator(std::shared_ptr<const Model> model, RunSettings settings,
                             SelectivePolicy policy, const std::atomic<bool>* cancel,
                             bool measure_times, bool gpu_times)
    : target_(std::move(model)),
      settings_(std::move(settings)),
      policy_(policy),
      cancel_(cancel),
      gpu_times_(gpu_times) {
  // Per node: its forward time over the number of its forward steps, so that a recompute of
  // the node's steps costs what its forward did. From the dry run's estimates; or, when asked,
  // the least of three real runs (the first one pays for cold caches and first allocations),
  // when the memory guard lets a real run start.
  RunRequest timing = evaluation_request({});
  timing.settings.dry_run = !measure_times || gpu_times;
  // Op times are this machine's CPU's whatever the device whose bytes are planned: they are the
  // recompute cost's unit, compared with each other, never shown as a GPU's time. Where a plan
  // weighs copies to host memory against recompute, both are the GPU's: the dry run's op costs
  // at a reference GPU's rates.
  if (!gpu_times) timing.settings.device = Device::cpu;
  std::shared_ptr<const RunResult> r;
  std::unordered_map<std::string, std::int64_t> steps;
  for (int attempt = 0; attempt < (timing.settings.dry_run ? 1 : 3); ++attempt) {
    r = run_plain(target_, timing, cancel_);
    if (!r->ok)
      throw std::runtime_error("planning " + target_.model().source +
                               ": the model does not run without checkpointing: " + r->error);
    times_measured_ = !r->dry_run;
    if (!times_measured_) attempt = 3;  // refused by the guard: one dry run's estimates
    std::vector<std::int64_t> gpu;
    if (gpu_times) gpu = estimate_step_durations(r->trace, r->node_costs, reference_gpu_rates());
    std::unordered_map<std::string, std::int64_t> total;
    steps.clear();
    for (std::int64_t k = 0; k < r->trace.step_count(); ++k) {
      if (r->trace.step_phase(k) != Phase::forward) continue;
      const TraceStep s = r->trace.step(k);
      const std::int64_t ns = gpu_times ? gpu[static_cast<std::size_t>(k)] : s.duration_ns;
      total[s.node] += std::max<std::int64_t>(ns, 1);
      ++steps[s.node];
    }
    for (const auto& [node, ns] : total) {
      const std::int64_t per_step = ns / steps[node];
      auto it = op_ns_.find(node);
      if (it == op_ns_.end() || per_step < it->second) op_ns_[node] = per_step;
    }
  }
  steps_ = std::move(steps);
  // Bytes and saved tensors from a dry run on the planned device: the same as the real run's,
  // event for event.
  if (!r->dry_run || timing.settings.device != settings_.device)
    r = run_plain(target_, evaluation_request({}), cancel_);
  for (const TensorLife& t : r->trace.tensors()) values_.emplace(t.name, t.bytes);
  saved_ = forward_saved_bytes_by_node(r->trace);
  baseline_ = measure(*r);
  for (const auto& [name, g] : r->gradients) gradients_.push_back(name);
  plain_ = r;
  const Model& m = target_.model();
  for (const auto& in : m.inputs)
    if (!in.is_target && settings_.input_requires_grad.value_or(in.requires_grad))
      grad_values_.insert(in.name);
  for (const auto& p : m.parameters)
    if (p.requires_grad && !p.is_buffer) grad_values_.insert(p.name);
  for (const OpNode& op : m.ops) {
    bool any = false;
    for (const auto& v : op.inputs) any = any || grad_values_.count(v) > 0;
    if (any)
      for (const auto& v : op.outputs) grad_values_.insert(v);
  }
  cache_[evaluation_request({}).plan.key()] = baseline_;
  runs_ = 1;
}

RunRequest PlanEvaluator::request(const CheckpointPlan& plan) const {
  RunRequest r;
  r.plan = plan;
  r.settings = settings_;
  return r;
}

RunRequest PlanEvaluator::evaluation_request(const CheckpointPlan& plan) const {
  RunRequest r = request(plan);
  r.settings.threads = 1;
  r.settings.dry_run = true;
  r.settings.check_recompute = false;
  return r;
}

Evaluation PlanEvaluator::measure(const RunResult& r) const {
  Evaluation e;
  e.ok = r.ok;
  e.error = r.error;
  e.peak_bytes = r.trace.peak().bytes;
  if (r.reserved) e.reserved_peak = r.reserved->peak_bytes;
  // Sharded (FSDP2, --fsdp / --param-dtype): a plan is judged by what one rank holds.
  if (r.ok && (settings_.fsdp.ranks > 0 || settings_.param_dtype != DType::f32)) {
    e.peak_bytes = fsdp_rank_memory(model(), r.trace, settings_).peak_bytes;
    e.reserved_peak = 0;
  }
  for (std::int64_t k = 0; k < r.trace.step_count(); ++k) {
    if (r.trace.step_phase(k) != Phase::recompute) continue;
    const TraceStep step = r.trace.step(k);
    // A per-op policy's kept output is handed back, not computed: it costs no recompute.
    if (step.replayed) continue;
    ++e.recompute_ops;
    auto it = op_ns_.find(step.node);
    if (it != op_ns_.end()) e.recompute_ns += it->second;
  }
  // Offloaded saved tensors: the copies each way at the settings' link bandwidth.
  if (r.offload) e.transfer_ns = static_cast<std::int64_t>(r.offload->copy_ms * 1e6);
  const CategoryBytes end = r.trace.memory_at(r.trace.forward_end());
  e.saved_bytes = ckpt::saved_for_backward(end);
  e.rng_bytes = end[static_cast<std::size_t>(MemoryCategory::rng_state)];
  return e;
}

Evaluation PlanEvaluator::evaluate(const CheckpointPlan& plan) const {
  const RunRequest request = evaluation_request(plan);
  const std::string key = request.plan.key();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  }
  const auto r = run_plain(target_, request, cancel_);
  if (r->cancelled()) return Evaluation{false, "cancelled"};
  Evaluation e = measure(*r);
  if (e.ok) check_gradients(*r, e);
  std::lock_guard<std::mutex> lock(mutex_);
  ++runs_;
  cache_.emplace(key, e);
  return e;
}

void PlanEvaluator::check_gradients(const RunResult& r, Evaluation& e) const {
  std::string missing;
  int count = 0;
  for (const auto& name : gradients_)
    if (!r.gradients.count(name) && count++ < 3) missing += (missing.empty() ? "" : ", ") + name;
  if (count == 0) return;
  e.ok = false;
  e.error = std::to_string(count) + " parameter(s) get no gradient under this plan (" + missing +
            (count > 3 ? ", ..." : "") +
            "): a reentrant checkpoint whose inputs do not require grad cuts them off";
}

std::int64_t PlanEvaluator::saved_for_backward(const CheckpointPlan& plan) const {
  const auto r = run_plain(target_, forward_only(evaluation_request(plan)), cancel_);
  if (!r->ok) throw std::runtime_error("the plan's forward failed: " + r->error);
  TensorList roots = r->outputs;
  if (r->loss.defined()) roots.push_back(r->loss);
  return saved_tensor_bytes(roots);
}

const std::vector<SavedUse>& PlanEvaluator::saved_uses() const {
  std::call_once(uses_once_, [this] {
    const auto r = run_plain(target_, forward_only(evaluation_request({})), cancel_);
    if (!r->ok) throw std::runtime_error("the plain forward failed: " + r->error);
    // The value each allocation holds, from the forward's trace.
    std::unordered_map<std::uint32_t, std::string> names;
    const auto& tensors = r->trace.tensors();
    for (std::int64_t i = 0; i < r->trace.event_count(); ++i) {
      const TraceEvent e = r->trace.event(i);
      if (e.tensor >= 0)
        names.emplace(e.allocation, tensors[static_cast<std::size_t>(e.tensor)].name);
    }
    const Model& m = target_.model();
    std::unordered_map<std::string, std::int64_t> op_index;
    for (std::size_t k = 0; k < m.ops.size(); ++k)
      op_index.emplace(m.ops[k].name, static_cast<std::int64_t>(k));
    const auto past = static_cast<std::int64_t>(m.ops.size());
    TensorList roots = r->outputs;
    if (r->loss.defined()) roots.push_back(r->loss);
    for (const SavedStorageUsers& s : saved_tensor_users(roots)) {
      if (s.category == MemoryCategory::input) continue;  // kept whatever the plan
      SavedUse u;
      u.bytes = s.bytes;
      if (auto it = names.find(static_cast<std::uint32_t>(s.storage->id())); it != names.end())
        u.value = it->second;
      u.first_op = past;
      u.last_op = 0;
      for (const Node* n : s.users) {
        const auto it =
            n->context() ? op_index.find(n->context()->label(n->node_label())) : op_index.end();
        const std::int64_t k = it == op_index.end() ? past : it->second;
        u.first_op = std::min(u.first_op, k);
        u.last_op = std::max(u.last_op, k);
      }
      uses_.push_back(std::move(u));
    }
  });
  return uses_;
}

std::int64_t PlanEvaluator::runs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return runs_;
}

}  // namespace ckpt
