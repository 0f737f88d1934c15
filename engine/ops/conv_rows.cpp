// Rows of conv2d (conv.cpp).
#include "engine/ops/conv.hpp"
#include "engine/ops/schema/onnx_support.hpp"
#include "engine/ops/schema/row_helpers.hpp"

namespace ckpt {

namespace {

TensorList run_conv2d(const OpCall& n, const TensorList& x) {
  return {conv2d(x[0], x[1], optional_input(x, 2), attr_pair(n, "stride", {1, 1}),
                 attr_pair(n, "padding", {0, 0}), attr_pair(n, "dilation", {1, 1}),
                 attr_int(n, "groups", 1))};
}

// 2·(output elements)·(input channels per group · kernel area).
OpCost conv_cost(const OpCall& op, const TensorList& in, const TensorList& out) {
  OpCost c = rows::elementwise_cost(op, in, out);
  const Shape& w = in[1].shape();
  double per_output = 1;
  for (std::size_t d = 1; d < w.size(); ++d) per_output *= static_cast<double>(w[d]);
  c.flops = 2.0 * static_cast<double>(out[0].numel()) * per_output;
  return c;
}

void onnx_conv(OnnxNode& n) {
  const auto w = onnx_rules::read_window(n, "Conv");
  n.define(n.y(), n.emit_op("conv2d", {n.input(0, "first").graph, n.operand(1), n.operand(2)},
                            {{"stride", w.strides},
                             {"padding", w.pads},
                             {"dilation", w.dilations},
                             {"groups", n.attr_i("group", 1)}},
                            n.y()));
}

}  // namespace

void register_conv_ops(OpTable& t) {
  t.add({.type = "conv2d",
         .min_inputs = 2,
         .max_inputs = 3,
         .kernel = run_conv2d,
         .compute_heavy = true,
         .cost = conv_cost,
         .onnx = {{.op_type = "Conv", .translate = onnx_conv}}});
}

}  // namespace ckpt
