#include "engine/plan/evaluator.hpp"

#include <algorithm>
#include <stdexcept>

#include "engine/autograd/saved_tensors.hpp"
#include "engine/run/memory_guard.hpp"

namespace ckpt {

namespace {

std::int64_t category(const CategoryBytes& b, MemoryCategory c) {
  return b[static_cast<std::size_t>(c)];
}

}  // namespace

std::string plan_key(const CheckpointConfig& plan) {
  std::string key;
  for (const auto& m : plan.modules) key += m + ";";
  auto ranges = plan.ranges;
  std::sort(ranges.begin(), ranges.end());
  key += "|";
  for (const auto& [a, b] : ranges) key += a + ".." + b + ";";
  if (plan.segments > 0) key += "|segments=" + std::to_string(plan.segments);
  return key;
}

PlanEvaluator::PlanEvaluator(std::shared_ptr<const Model> model, CheckpointConfig base,
                             const std::atomic<bool>* cancel)
    : runner_(std::move(model)), base_(std::move(base)), cancel_(cancel) {
  base_.modules.clear();
  base_.ranges.clear();
  base_.segments = 0;
  // Per node: its forward time over the number of its forward steps, so that a recompute of
  // the node's steps costs what its forward did; the least of three real runs (the first one
  // pays for cold caches and first allocations), or one dry run's estimates when a real run
  // would not fit in memory.
  CheckpointConfig timing = run_config(base_);
  times_measured_ = check_memory_guard(runner_, timing).fits;
  timing.dry_run = !times_measured_;
  RunResult r;
  std::unordered_map<std::string, std::int64_t> steps;
  for (int attempt = 0; attempt < (times_measured_ ? 3 : 1); ++attempt) {
    r = runner_.run(timing, cancel_);
    if (!r.ok)
      throw std::runtime_error("planning " + runner_.model().source +
                               ": the model does not run without checkpointing: " + r.error);
    std::unordered_map<std::string, std::int64_t> total;
    steps.clear();
    for (std::int64_t k = 0; k < r.trace.step_count(); ++k) {
      if (r.trace.step_phase(k) != Phase::forward) continue;
      const TraceStep s = r.trace.step(k);
      total[s.node] += std::max<std::int64_t>(s.duration_ns, 1);
      ++steps[s.node];
    }
    for (const auto& [node, ns] : total) {
      const std::int64_t per_step = ns / steps[node];
      auto it = op_ns_.find(node);
      if (it == op_ns_.end() || per_step < it->second) op_ns_[node] = per_step;
    }
  }
  steps_ = std::move(steps);
  // Bytes and saved tensors from a dry run: the same as the real run's, event for event.
  if (!r.dry_run) r = runner_.run(run_config(base_), cancel_);
  for (const TensorLife& t : r.trace.tensors()) values_.emplace(t.name, t.bytes);
  saved_ = forward_saved_bytes_by_node(r.trace);
  baseline_ = measure(r);
  for (const auto& [name, g] : r.gradients) gradients_.push_back(name);
  cache_[plan_key(base_)] = baseline_;
  runs_ = 1;
}

CheckpointConfig PlanEvaluator::run_config(const CheckpointConfig& plan) const {
  CheckpointConfig c = base_;
  c.modules = plan.modules;
  c.ranges = plan.ranges;
  c.segments = plan.segments;
  c.threads = 1;
  c.dry_run = true;
  c.check_recompute = false;
  return c;
}

Evaluation PlanEvaluator::measure(const RunResult& r) const {
  Evaluation e;
  e.ok = r.ok;
  e.error = r.error;
  e.peak_bytes = r.trace.peak().bytes;
  for (std::int64_t k = 0; k < r.trace.step_count(); ++k) {
    if (r.trace.step_phase(k) != Phase::recompute) continue;
    ++e.recompute_ops;
    auto it = op_ns_.find(r.trace.step(k).node);
    if (it != op_ns_.end()) e.recompute_ns += it->second;
  }
  const CategoryBytes end = r.trace.memory_at(r.trace.forward_end());
  e.saved_bytes =
      category(end, MemoryCategory::activation) + category(end, MemoryCategory::checkpoint_input);
  e.rng_bytes = category(end, MemoryCategory::rng_state);
  return e;
}

Evaluation PlanEvaluator::evaluate(const CheckpointConfig& plan) const {
  const std::string key = plan_key(plan);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  }
  const RunResult r = runner_.run(run_config(plan), cancel_);
  if (r.cancelled()) return Evaluation{false, "cancelled"};
  Evaluation e = measure(r);
  if (e.ok) check_gradients(r, e);
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

std::int64_t PlanEvaluator::saved_for_backward(const CheckpointConfig& plan) const {
  CheckpointConfig c = run_config(plan);
  c.backward = false;
  const RunResult r = runner_.run(c, cancel_);
  if (!r.ok) throw std::runtime_error("the plan's forward failed: " + r.error);
  TensorList roots = r.outputs;
  if (r.loss.defined()) roots.push_back(r.loss);
  return saved_tensor_bytes(roots);
}

std::int64_t PlanEvaluator::runs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return runs_;
}

}  // namespace ckpt
