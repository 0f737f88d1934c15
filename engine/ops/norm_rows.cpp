// Rows of batch_norm and layer_norm (norm.cpp).
#include "engine/ops/norm.hpp"
#include "engine/ops/schema/row_helpers.hpp"

namespace ckpt {

namespace {

TensorList run_batch_norm(const OpCall& n, const TensorList& x) {
  return {batch_norm(x[0], optional_input(x, 1), optional_input(x, 2), optional_input(x, 3),
                     optional_input(x, 4), attr_int(n, "training", 1) != 0,
                     attr_double(n, "momentum", 0.1), attr_double(n, "eps", 1e-5),
                     optional_input(x, 5))};
}
TensorList run_layer_norm(const OpCall& n, const TensorList& x) {
  return {layer_norm(x[0], attr_ints(n, "normalized_shape"), optional_input(x, 1),
                     optional_input(x, 2), attr_double(n, "eps", 1e-5))};
}

// Training mode: training_mode=1 from opset 14; below it, the extra outputs PyTorch's training
// export asks for (running mean and variance, saved mean and variance).
void onnx_batch_norm(OnnxNode& n) {
  const bool training = n.opset() >= 14 ? n.attr_i("training_mode", 0) != 0 : n.output_count() > 1;
  std::vector<std::string> args;
  for (std::size_t i = 0; i < 5; ++i) args.push_back(n.operand(i));
  n.define(n.y(), n.emit_op("batch_norm", args,
                            {{"eps", n.attr_f("epsilon", 1e-5)},
                             {"momentum", 1.0 - n.attr_f("momentum", 0.9)},  // ONNX: the old share
                             {"training", std::int64_t{training ? 1 : 0}}},
                            n.y()));
  for (int k = 1; k < n.output_count(); ++k)
    n.unavailable(k,
                  "the engine updates BatchNorm's running statistics in place and does not "
                  "expose them, or the batch statistics, as values");
}

void onnx_layer_norm(OnnxNode& n) {
  const OnnxValue& x = n.input(0, "first");
  const std::int64_t axis = wrap_dim(n.attr_i("axis", -1), n.rank(), "LayerNormalization");
  const Shape& s = x.probe.shape();
  const std::vector<std::int64_t> normalized(s.begin() + axis, s.end());
  n.define(n.y(), n.emit_op("layer_norm", {x.graph, n.operand(1), n.operand(2)},
                            {{"normalized_shape", normalized}, {"eps", n.attr_f("epsilon", 1e-5)}},
                            n.y()));
  n.unavailable(1, "the engine keeps LayerNorm's mean for backward only");
  n.unavailable(2, "the engine keeps LayerNorm's inverse std for backward only");
}

}  // namespace

void register_norm_ops(OpTable& t) {
  t.add({.type = "batch_norm",
         .min_inputs = 1,
         .max_inputs = 6,
         .kernel = run_batch_norm,
         .cost = rows::elementwise_cost,
         .onnx = {{.op_type = "BatchNormalization", .translate = onnx_batch_norm}}});
  t.add({.type = "layer_norm",
         .min_inputs = 1,
         .max_inputs = 3,
         .kernel = run_layer_norm,
         .cost = rows::elementwise_cost,
         .onnx = {{.op_type = "LayerNormalization", .translate = onnx_layer_norm}}});
}

}  // namespace ckpt
