#include "engine/report/state_timeline.hpp"

#include <algorithm>
#include <unordered_map>

namespace ckpt {

StateTimeline build_state_timeline(const Model& model, const Trace& trace) {
  StateTimeline out;
  out.tensors_per_op.assign(model.ops.size(), 0);
  out.step_op.resize(static_cast<std::size_t>(trace.step_count()));
  // Node names are interned by the trace: one lookup per distinct name, not per step.
  std::unordered_map<const std::string*, std::int32_t> op_of_name;
  for (std::int64_t k = 0; k < trace.step_count(); ++k) {
    const std::string& node = trace.step_node(k);
    auto [it, is_new] = op_of_name.try_emplace(&node, -1);
    if (is_new && !node.empty()) it->second = static_cast<std::int32_t>(model.op_index(node));
    out.step_op[static_cast<std::size_t>(k)] = it->second;
  }
  const auto& lives = trace.tensors();
  for (std::size_t i = 0; i < model.ops.size(); ++i) {
    for (const auto& value : model.ops[i].outputs) {
      if (value.empty()) continue;
      const std::int64_t t = trace.tensor_index(value);
      if (t < 0) continue;
      ++out.tensors_per_op[i];
      ActivationState previous = ActivationState::pending;
      for (const auto& [step, state] : lives[static_cast<std::size_t>(t)].transitions) {
        out.changes.push_back({step, static_cast<std::int32_t>(i), previous, state});
        previous = state;
      }
    }
  }
  // Into step order by counting (stable, linear): a comparison sort of HeavyModel's 300,000
  // changes took as long as the rest of the run's derived data together.
  if (out.changes.empty()) return out;
  std::int64_t lo = out.changes.front().step, hi = lo;
  for (const auto& c : out.changes) {
    lo = std::min(lo, c.step);
    hi = std::max(hi, c.step);
  }
  std::vector<std::size_t> start(static_cast<std::size_t>(hi - lo) + 2, 0);
  for (const auto& c : out.changes) ++start[static_cast<std::size_t>(c.step - lo) + 1];
  for (std::size_t i = 1; i < start.size(); ++i) start[i] += start[i - 1];
  std::vector<StateChange> sorted(out.changes.size());
  for (const auto& c : out.changes) sorted[start[static_cast<std::size_t>(c.step - lo)]++] = c;
  out.changes = std::move(sorted);
  return out;
}

}  // namespace ckpt
