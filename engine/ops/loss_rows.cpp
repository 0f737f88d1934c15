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

OpSchema row(const char* type, TensorList (*kernel)(const OpCall&, const TensorList&)) {
  return {.type = type,
          .min_inputs = 2,
          .max_inputs = 2,
          .kernel = kernel,
          .cost = rows::elementwise_cost};
}

}  // namespace

void register_loss_ops(OpTable& t) {
  t.add(row("cross_entropy", run_cross_entropy));
  t.add(row("nll_loss", run_nll_loss));
  t.add(row("mse_loss", run_mse_loss));
}

}  // namespace ckpt
