#include "engine/autograd/op_observer.hpp"

#include <vector>

namespace ckpt {

namespace {
thread_local std::vector<OpObserver*> t_observers;
}

OpObserverScope::OpObserverScope(OpObserver* observer) {
  t_observers.push_back(observer);
}

OpObserverScope::~OpObserverScope() {
  t_observers.pop_back();
}

void notify_op_outputs(std::string_view fallback_name, const TensorList& outputs,
                       const TensorList& saved) {
  if (t_observers.empty()) return;
  auto context = ExecutionContext::current();
  const LabelId op = context->current_op();
  const std::string_view name = op ? std::string_view(context->label(op)) : fallback_name;
  // Copy: an observer may open a nested scope while it runs.
  const auto observers = t_observers;
  for (auto it = observers.rbegin(); it != observers.rend(); ++it)
    (*it)->on_outputs(name, outputs, saved);
}

TensorList replay_saved_outputs(std::string_view op) {
  if (t_observers.empty()) return {};
  const auto observers = t_observers;
  TensorList result;
  // All are asked: a segment's forward observer notes that the next output is replayable.
  for (auto it = observers.rbegin(); it != observers.rend(); ++it) {
    TensorList r = (*it)->replay_outputs(op);
    if (result.empty()) result = std::move(r);
  }
  return result;
}

Tensor replay_saved_output(std::string_view op) {
  TensorList kept = replay_saved_outputs(op);
  return kept.empty() ? Tensor() : kept[0];
}

}  // namespace ckpt
