// ATen rules of the in-place ops (docs/capture_format.md): an in-place op's output is a new
// version of its operand, named anew in the model, as the engine's in-place ops make it.
#include "engine/ops/schema/op_schema.hpp"

namespace ckpt {

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

void aten_add_(AtenNode& n) {
  const std::string x = n.tensor("self");
  if (!n.is_tensor("other")) {
    // nn.BatchNorm's num_batches_tracked += 1: the batch_norm op that follows does it.
    if (n.is_parameter(x) && ends_with(x, "num_batches_tracked")) return n.define(0, x);
    n.fail("in-place addition of a number is supported only for num_batches_tracked");
  }
  if (n.number_or("alpha", 1) != 1) n.fail("in-place addition with alpha is not supported");
  n.emit1("add_", {x, n.tensor("other")});
}
void aten_relu_(AtenNode& n) {
  n.emit1("relu_", {n.tensor("self")});
}

}  // namespace

void register_inplace_aten(OpTable& t) {
  t.add_aten("add_", {{"aten::add_", aten_add_}});
  t.add_aten("relu_", {{"aten::relu_", aten_relu_}});
}

}  // namespace ckpt
