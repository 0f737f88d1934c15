#include "engine/ops/schema/row_helpers.hpp"

namespace ckpt::rows {

OpCost elementwise_cost(const OpCall&, const TensorList& inputs, const TensorList& outputs) {
  OpCost c;
  for (const Tensor& t : outputs)
    if (t.defined()) {
      c.flops += static_cast<double>(t.numel());
      c.bytes += static_cast<double>(t.nbytes());
    }
  for (const Tensor& t : inputs)
    if (t.defined()) c.bytes += static_cast<double>(t.nbytes());
  return c;
}

std::string python_call(const char* callee, const std::vector<std::string>& args) {
  std::string s = std::string(callee) + "(";
  bool first = true;
  for (const auto& a : args) {
    if (a.empty()) continue;
    s += (first ? "" : ", ") + a;
    first = false;
  }
  return s + ")";
}

}  // namespace ckpt::rows
