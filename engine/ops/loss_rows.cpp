// Rows of the losses (loss.cpp). ONNX exports carry no loss: the Runner adds the scenario's.
#include "engine/ops/loss.hpp"
#include "engine/ops/schema/row_helpers.hpp"

namespace ckpt {

namespace {

TensorList run_cross_entropy(const OpCall& n, const TensorList& x) {
  return {cross_entropy(x[0], x[1], attr_string(n, "reduction", "mean"),
                        attr_int(n, "ignore_index", -100))};
}
TensorList run_nll_loss(const OpCall& n, const TensorList& x) {
  return {
      nll_loss(x[0], x[1], attr_string(n, "reduction", "mean"), attr_int(n, "ignore_index", -100))};
}
TensorList run_mse_loss(const OpCall& n, const TensorList& x) {
  return {mse_loss(x[0], x[1], attr_string(n, "reduction", "mean"))};
}

// F.cross_entropy(input, target) and the like: the same name in F and in the engine.
template <const char* Type>
std::string python_loss(const OpCall&, const std::vector<std::string>& a, const Shape&) {
  return std::string("F.") + Type + "(" + rows::arg(a, 0) + ", " + rows::arg(a, 1) + ")";
}

template <const char* Type>
OpSchema row(TensorList (*kernel)(const OpCall&, const TensorList&)) {
  return {.type = Type,
          .min_inputs = 2,
          .max_inputs = 2,
          .kernel = kernel,
          .cost = rows::elementwise_cost,
          .python = python_loss<Type>,
          .autocast = {.cpu = AutocastPolicy::fp32, .cuda = AutocastPolicy::fp32}};
}

constexpr char kCrossEntropy[] = "cross_entropy", kNllLoss[] = "nll_loss", kMseLoss[] = "mse_loss";

}  // namespace

void register_loss_ops(OpTable& t) {
  t.add(row<kCrossEntropy>(run_cross_entropy));
  t.add(row<kNllLoss>(run_nll_loss));
  t.add(row<kMseLoss>(run_mse_loss));
}

}  // namespace ckpt
