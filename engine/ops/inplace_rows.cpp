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
std::string python_relu_inplace(const OpCall&, const std::vector<std::string>& a, const Shape&) {
  return rows::arg(a, 0) + ".relu_()";
}
std::string python_add_inplace(const OpCall&, const std::vector<std::string>& a, const Shape&) {
  return rows::arg(a, 0) + ".add_(" + rows::arg(a, 1) + ")";
}
}  // namespace

void register_inplace_ops(OpTable& t) {
  t.add({.type = "relu_",
         .kernel = run_relu_inplace,
         .cost = rows::elementwise_cost,
         .python = python_relu_inplace});
  t.add({.type = "add_",
         .min_inputs = 2,
         .max_inputs = 2,
         .kernel = run_add_inplace,
         .cost = rows::elementwise_cost,
         .python = python_add_inplace});
}

}  // namespace ckpt
