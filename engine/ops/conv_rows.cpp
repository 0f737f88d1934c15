// Rows of conv2d (conv.cpp).
#include "engine/ops/conv.hpp"
#include "engine/ops/schema/onnx_support.hpp"
#include "engine/ops/schema/row_helpers.hpp"
#include "engine/tensor/init.hpp"

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

std::string python_conv2d(const OpCall& op, const std::vector<std::string>& a, const Shape&) {
  using rows::pair;
  return "F.conv2d(" + rows::arg(a, 0) + ", " + rows::arg(a, 1) + ", " + rows::arg_or_none(a, 2) +
         ", stride=" + pair(attr_ints(op, "stride", {1, 1})) +
         ", padding=" + pair(attr_ints(op, "padding", {0, 0})) +
         ", dilation=" + pair(attr_ints(op, "dilation", {1, 1})) +
         ", groups=" + std::to_string(attr_int(op, "groups", 1)) + ")";
}
// nn.Conv2d from the weight's [out, in / groups, kh, kw]; only what differs from the defaults.
std::string module_conv2d(const OpCall& op, const std::vector<Shape>& params) {
  using rows::pair;
  const auto has = [&](std::size_t i) { return i < params.size() && !params[i].empty(); };
  if (!has(1) || params[1].size() != 4) return "";
  const std::int64_t groups = attr_int(op, "groups", 1);
  const Shape& w = params[1];
  std::string s = "nn.Conv2d(" + std::to_string(w[1] * groups) + ", " + std::to_string(w[0]) +
                  ", " + pair({w[2], w[3]});
  const auto stride = attr_ints(op, "stride", {1, 1});
  const auto padding = attr_ints(op, "padding", {0, 0});
  const auto dilation = attr_ints(op, "dilation", {1, 1});
  if (stride != std::vector<std::int64_t>{1, 1}) s += ", stride=" + pair(stride);
  if (padding != std::vector<std::int64_t>{0, 0}) s += ", padding=" + pair(padding);
  if (dilation != std::vector<std::int64_t>{1, 1}) s += ", dilation=" + pair(dilation);
  if (groups != 1) s += ", groups=" + std::to_string(groups);
  return s + (has(2) ? "" : ", bias=False") + ")";
}

void onnx_conv(OnnxNode& n) {
  const auto w = onnx_rules::read_window(n, "Conv", onnx_rules::KernelShape::attribute_or_weight);
  n.define(n.y(), n.emit_op("conv2d", {n.input(0, "first").graph, n.operand(1), n.operand(2)},
                            {{"stride", w.strides},
                             {"padding", w.pads},
                             {"dilation", w.dilations},
                             {"groups", n.attr_i("group", 1)}},
                            n.y()));
}

TensorList run_conv_transpose2d(const OpCall& n, const TensorList& x) {
  return {conv_transpose2d(x[0], x[1], optional_input(x, 2), attr_pair(n, "stride", {1, 1}),
                           attr_pair(n, "padding", {0, 0}), attr_pair(n, "output_padding", {0, 0}),
                           attr_pair(n, "dilation", {1, 1}), attr_int(n, "groups", 1))};
}

// 2·(input elements)·(output channels per group · kernel area): each input pixel scatters
// into a window of every output channel of its group.
OpCost conv_transpose_cost(const OpCall& op, const TensorList& in, const TensorList& out) {
  OpCost c = rows::elementwise_cost(op, in, out);
  const Shape& w = in[1].shape();
  double per_input = 1;
  for (std::size_t d = 1; d < w.size(); ++d) per_input *= static_cast<double>(w[d]);
  c.flops = 2.0 * static_cast<double>(in[0].numel()) * per_input;
  return c;
}

void append_pair(std::string& s, const OpCall& n, const char* key,
                 std::array<std::int64_t, 2> fallback) {
  const auto p = attr_pair(n, key, fallback);
  s += '(';
  s += std::to_string(p[0]);
  s += ", ";
  s += std::to_string(p[1]);
  s += ')';
}

std::string python_conv_transpose2d(const OpCall& n, const std::vector<std::string>& a,
                                    const Shape&) {
  std::string s = "F.conv_transpose2d(";
  s += a[0];
  s += ", ";
  s += a[1];
  s += ", ";
  s += a.size() > 2 && !a[2].empty() ? a[2] : std::string("None");
  s += ", stride=";
  append_pair(s, n, "stride", {1, 1});
  s += ", padding=";
  append_pair(s, n, "padding", {0, 0});
  s += ", output_padding=";
  append_pair(s, n, "output_padding", {0, 0});
  s += ", groups=";
  s += std::to_string(attr_int(n, "groups", 1));
  s += ", dilation=";
  append_pair(s, n, "dilation", {1, 1});
  s += ')';
  return s;
}

// ConvTranspose (opset 1 on; PyTorch exports ConvTranspose2d with explicit pads and
// output_padding). An output_shape attribute is accepted when it is the shape those give.
void onnx_conv_transpose(OnnxNode& n) {
  const auto w =
      onnx_rules::read_window(n, "ConvTranspose", onnx_rules::KernelShape::attribute_or_weight);
  onnx_rules::Ints output_padding = n.attr_ints("output_padding");
  if (output_padding.empty()) output_padding = {0, 0};
  if (output_padding.size() != 2)
    n.fail("output_padding " + shape_str(output_padding) + " is not 2-D");
  const OnnxValue& y =
      n.emit_op("conv_transpose2d", {n.input(0, "first").graph, n.operand(1), n.operand(2)},
                {{"stride", w.strides},
                 {"padding", w.pads},
                 {"output_padding", output_padding},
                 {"dilation", w.dilations},
                 {"groups", n.attr_i("group", 1)}},
                n.y());
  const onnx_rules::Ints output_shape = n.attr_ints("output_shape");
  if (!output_shape.empty()) {
    const Shape& s = y.probe.shape();
    const Shape spatial(s.end() - static_cast<std::ptrdiff_t>(output_shape.size()), s.end());
    if (spatial != output_shape)
      n.fail("output_shape " + shape_str(output_shape) + " differs from " + shape_str(spatial) +
             ", the shape that pads and output_padding give (only that one is supported)");
  }
  n.define(n.y(), y);
}

// {"type": "conv2d", "in", "out", "kernel", "stride", "padding", "dilation", "groups", "bias"}.
ValueNames layer_conv2d(NativeLayerCall& c) {
  const std::int64_t nin = c.get_int("in"), nout = c.get_int("out");
  const auto kernel = c.get_ints("kernel", 2, -1);
  if (kernel[0] <= 0 || kernel[1] <= 0) c.fail("needs a positive \"kernel\"");
  const std::int64_t groups = c.get_int("groups", 1);
  if (nin <= 0 || nout <= 0 || groups <= 0 || nin % groups || nout % groups)
    c.fail("\"in\" and \"out\" must be positive multiples of \"groups\"");
  const std::int64_t fan_in = nin / groups * kernel[0] * kernel[1];
  const Shape wshape{nout, nin / groups, kernel[0], kernel[1]};
  Generator& gen = c.generator();
  ValueNames args{c.one()[0],
                  c.param("weight", wshape, [&] { return default_weight(wshape, fan_in, gen); })};
  if (c.get_bool("bias", true))
    args.push_back(c.param("bias", {nout}, [&] { return default_weight({nout}, fan_in, gen); }));
  Attributes a{{"stride", c.get_ints("stride", 2, 1)},
               {"padding", c.get_ints("padding", 2, 0)},
               {"dilation", c.get_ints("dilation", 2, 1)},
               {"groups", groups}};
  return c.emit_op("conv2d", args, std::move(a));
}

}  // namespace

void register_conv_ops(OpTable& t) {
  t.add({.type = "conv2d",
         .min_inputs = 2,
         .max_inputs = 3,
         .kernel = run_conv2d,
         .policy_kind = {.name = "conv", .aten = {"convolution"}},
         .cost = conv_cost,
         .python = python_conv2d,
         .python_module = module_conv2d,
         .onnx = {{.op_type = "Conv",
                   .translate = onnx_conv,
                   .module_class = "Conv2d",
                   .parameter_init = {InitKind::by_shape, InitKind::weight, InitKind::bias}}},
         .native_layers = {{.name = "conv2d",
                            .module_class = "Conv2d",
                            .parameters = true,
                            .build = layer_conv2d}},
         .parameter_names = {"weight", "bias"},
         .autocast = {.cpu = AutocastPolicy::lower, .cuda = AutocastPolicy::lower}});
  t.add({.type = "conv_transpose2d",
         .min_inputs = 2,
         .max_inputs = 3,
         .kernel = run_conv_transpose2d,
         .policy_kind = {.name = "conv", .aten = {"convolution"}},
         .cost = conv_transpose_cost,
         .python = python_conv_transpose2d,
         .onnx = {{.op_type = "ConvTranspose",
                   .translate = onnx_conv_transpose,
                   .parameter_init = {InitKind::by_shape, InitKind::weight, InitKind::bias}}},
         // PyTorch 1.13's CPU list has the transposed convolutions in fp32, CUDA's in lower.
         .autocast = {.cpu = AutocastPolicy::fp32, .cuda = AutocastPolicy::lower}});
}

}  // namespace ckpt
