#include "engine/ops/schema/aten_node.hpp"

#include <stdexcept>

namespace ckpt {

void AtenNode::fail(const std::string& what) const {
  throw std::invalid_argument(failure_message(what));
}

std::string AtenNode::emit1(const std::string& type, const std::vector<std::string>& inputs,
                            Attributes attrs) {
  return emit_op(type, inputs, std::move(attrs), {0}).at(0);
}

double AtenNode::number_or(const std::string& arg, double fallback) const {
  return has(arg) ? number(arg) : fallback;
}

std::int64_t AtenNode::integer_or(const std::string& arg, std::int64_t fallback) const {
  return has(arg) ? integer(arg) : fallback;
}

bool AtenNode::flag(const std::string& arg, bool fallback) const {
  return has(arg) ? number(arg) != 0 : fallback;
}

std::string AtenNode::transposed_source(const std::string& graph) const {
  const Producer* p = producer(graph);
  if (!p || p->type != "transpose" || p->inputs.size() != 1) return "";
  const Tensor& x = probe(p->inputs[0]);
  if (x.dim() != 2) return "";
  const auto dim = [&](const char* key) {
    auto it = p->attrs.find(key);
    if (it == p->attrs.end() || !std::holds_alternative<std::int64_t>(it->second)) return -9L;
    const std::int64_t d = std::get<std::int64_t>(it->second);
    return d < 0 ? d + 2 : d;
  };
  const std::int64_t a = dim("dim0"), b = dim("dim1");
  return (a == 0 && b == 1) || (a == 1 && b == 0) ? p->inputs[0] : "";
}

}  // namespace ckpt
