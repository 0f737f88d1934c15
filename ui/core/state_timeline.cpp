#include "ui/core/state_timeline.hpp"

#include <algorithm>

namespace ckpt::ui {

StateTimeline buildStateTimeline(const Model& model, const Trace& trace) {
  StateTimeline out;
  out.tensorsPerOp.assign(model.ops.size(), 0);
  const auto& lives = trace.tensors();
  for (std::size_t i = 0; i < model.ops.size(); ++i) {
    for (const auto& value : model.ops[i].outputs) {
      if (value.empty()) continue;
      const std::int64_t t = trace.tensor_index(value);
      if (t < 0) continue;
      ++out.tensorsPerOp[i];
      ActivationState previous = ActivationState::pending;
      for (const auto& [step, state] : lives[static_cast<std::size_t>(t)].transitions) {
        out.changes.push_back({step, static_cast<std::int32_t>(i), previous, state});
        previous = state;
      }
    }
  }
  std::stable_sort(out.changes.begin(), out.changes.end(),
                   [](const StateChange& a, const StateChange& b) { return a.step < b.step; });
  return out;
}

}  // namespace ckpt::ui
