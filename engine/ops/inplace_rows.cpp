// Rows of the in-place ops (inplace.cpp): the op's output is its first input.
#include "engine/ops/inplace.hpp"
#include "engine/ops/schema/row_helpers.hpp"

namespace ckpt {

namespace {
TensorList run_relu_inplace(const OpCall&, const TensorList& x) {
  Tensor t = x[0];
  relu_(t);
  return {t};
}
TensorList run_add_inplace(const OpCall&, const TensorList& x) {
  Tensor t = x[0];
  add_(t, x[1]);
  return {t};
}
}  // namespace

void register_inplace_ops(OpTable& t) {
  t.add({.type = "relu_", .kernel = run_relu_inplace, .cost = rows::elementwise_cost});
  t.add({.type = "add_",
         .min_inputs = 2,
         .max_inputs = 2,
         .kernel = run_add_inplace,
         .cost = rows::elementwise_cost});
}

}  // namespace ckpt
