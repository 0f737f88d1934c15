// Rows of the convolution and the transposed convolution (conv.cpp): one row each for 1, 2 and
// 3 spatial dimensions, the rank read from the weight.
#include "engine/ops/conv.hpp"
#include "engine/ops/schema/onnx_support.hpp"
#include "engine/ops/schema/row_helpers.hpp"
#include "engine/tensor/init.hpp"

namespace ckpt {

namespace {

// The spatial rank of a conv op: a window attribute with one value per dimension says it (a
// single value serves every rank); failing that, the first input's rank, as a batch.
std::size_t spatial_rank(const OpCall& op, const Shape& shape) {
  for (const char* key : {"stride", "padding", "dilation", "output_padding"}) {
    const auto v = attr_ints(op, key, {});
    if (v.size() > 1) return v.size();
  }
  return shape.size() > 2 ? shape.size() - 2 : 2;
}

std::string nd(const char* base, std::size_t dims) {
  return std::string(base) + std::to_string(dims) + "d";
}

TensorList run_conv(const OpCall& n, const TensorList& x) {
  return {conv(x[0], x[1], optional_input(x, 2), attr_ints(n, "stride", {1}),
               attr_ints(n, "padding", {0}), attr_ints(n, "dilation", {1}),
               attr_int(n, "groups", 1))};
}

// 2·(output elements)·(input channels per group · kernel volume).
OpCost conv_cost(const OpCall& op, const TensorList& in, const TensorList& out) {
  OpCost c = rows::elementwise_cost(op, in, out);
  const Shape& w = in[1].shape();
  double per_output = 1;
  for (std::size_t d = 1; d < w.size(); ++d) per_output *= static_cast<double>(w[d]);
  c.flops = 2.0 * static_cast<double>(out[0].numel()) * per_output;
  return c;
}

std::string python_conv(const OpCall& op, const std::vector<std::string>& a, const Shape& shape) {
  using rows::pair;
  return "F." + nd("conv", spatial_rank(op, shape)) + "(" + rows::arg(a, 0) + ", " +
         rows::arg(a, 1) + ", " + rows::arg_or_none(a, 2) +
         ", stride=" + pair(attr_ints(op, "stride", {1})) +
         ", padding=" + pair(attr_ints(op, "padding", {0})) +
         ", dilation=" + pair(attr_ints(op, "dilation", {1})) +
         ", groups=" + std::to_string(attr_int(op, "groups", 1)) + ")";
}

// Whether every value of a window attribute is `v`.
bool all_equal(const std::vector<std::int64_t>& xs, std::int64_t v) {
  for (std::int64_t x : xs)
    if (x != v) return false;
  return true;
}

// nn.Conv1d/2d/3d from the weight's [out, in / groups, *kernel]; only what differs from the
// defaults.
std::string module_conv(const OpCall& op, const std::vector<Shape>& params) {
  using rows::pair;
  const auto has = [&](std::size_t i) { return i < params.size() && !params[i].empty(); };
  if (!has(1) || params[1].size() < 3 || params[1].size() > 5) return "";
  const std::int64_t groups = attr_int(op, "groups", 1);
  const Shape& w = params[1];
  std::string s = "nn." + nd("Conv", w.size() - 2) + "(" + std::to_string(w[1] * groups) + ", " +
                  std::to_string(w[0]) + ", " + pair(Shape(w.begin() + 2, w.end()));
  const auto stride = attr_ints(op, "stride", {1});
  const auto padding = attr_ints(op, "padding", {0});
  const auto dilation = attr_ints(op, "dilation", {1});
  if (!all_equal(stride, 1)) s += ", stride=" + pair(stride);
  if (!all_equal(padding, 0)) s += ", padding=" + pair(padding);
  if (!all_equal(dilation, 1)) s += ", dilation=" + pair(dilation);
  if (groups != 1) s += ", groups=" + std::to_string(groups);
  return s + (has(2) ? "" : ", bias=False") + ")";
}

void onnx_conv(OnnxNode& n) {
  const auto w = onnx_rules::read_window(n, "Conv", onnx_rules::KernelShape::attribute_or_weight);
  n.define(n.y(), n.emit_op("conv", {n.input(0, "first").graph, n.operand(1), n.operand(2)},
                            {{"stride", w.strides},
                             {"padding", w.pads},
                             {"dilation", w.dilations},
                             {"groups", n.attr_i("group", 1)}},
                            n.y()));
}

TensorList run_conv_transpose(const OpCall& n, const TensorList& x) {
  return {conv_transpose(x[0], x[1], optional_input(x, 2), attr_ints(n, "stride", {1}),
                         attr_ints(n, "padding", {0}), attr_ints(n, "output_padding", {0}),
                         attr_ints(n, "dilation", {1}), attr_int(n, "groups", 1))};
}

// 2·(input elements)·(output channels per group · kernel volume): each input pixel scatters
// into a window of every output channel of its group.
OpCost conv_transpose_cost(const OpCall& op, const TensorList& in, const TensorList& out) {
  OpCost c = rows::elementwise_cost(op, in, out);
  const Shape& w = in[1].shape();
  double per_input = 1;
  for (std::size_t d = 1; d < w.size(); ++d) per_input *= static_cast<double>(w[d]);
  c.flops = 2.0 * static_cast<double>(in[0].numel()) * per_input;
  return c;
}

std::string python_conv_transpose(const OpCall& n, const std::vector<std::string>& a,
                                  const Shape& shape) {
  return "F." + nd("conv_transpose", spatial_rank(n, shape)) + "(" + rows::arg(a, 0) + ", " +
         rows::arg(a, 1) + ", " + rows::arg_or_none(a, 2) +
         ", stride=" + rows::ints(attr_ints(n, "stride", {1})) +
         ", padding=" + rows::ints(attr_ints(n, "padding", {0})) +
         ", output_padding=" + rows::ints(attr_ints(n, "output_padding", {0})) +
         ", groups=" + std::to_string(attr_int(n, "groups", 1)) +
         ", dilation=" + rows::ints(attr_ints(n, "dilation", {1})) + ")";
}

// ConvTranspose (opset 1 on; PyTorch exports ConvTranspose1d/2d/3d with explicit pads and
// output_padding). An output_shape attribute is accepted when it is the shape those give.
void onnx_conv_transpose(OnnxNode& n) {
  const auto w =
      onnx_rules::read_window(n, "ConvTranspose", onnx_rules::KernelShape::attribute_or_weight);
  onnx_rules::Ints output_padding = n.attr_ints("output_padding");
  if (output_padding.empty()) output_padding.assign(w.kernel.size(), 0);
  if (output_padding.size() != w.kernel.size())
    n.fail("output_padding " + shape_str(output_padding) + " does not have one value per " +
           "spatial dimension (" + std::to_string(w.kernel.size()) + ")");
  const OnnxValue& y =
      n.emit_op("conv_transpose", {n.input(0, "first").graph, n.operand(1), n.operand(2)},
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

// {"type": "conv1d" | "conv2d" | "conv3d", "in", "out", "kernel", "stride", "padding",
// "dilation", "groups", "bias"}; window values one per dimension, or one for all.
template <std::size_t Dims>
ValueNames layer_conv(NativeLayerCall& c) {
  const std::int64_t nin = c.get_int("in"), nout = c.get_int("out");
  const auto kernel = c.get_ints("kernel", Dims, -1);
  for (std::int64_t k : kernel)
    if (k <= 0) c.fail("needs a positive \"kernel\"");
  const std::int64_t groups = c.get_int("groups", 1);
  if (nin <= 0 || nout <= 0 || groups <= 0 || nin % groups || nout % groups)
    c.fail("\"in\" and \"out\" must be positive multiples of \"groups\"");
  std::int64_t fan_in = nin / groups;
  Shape wshape{nout, nin / groups};
  for (std::int64_t k : kernel) {
    fan_in *= k;
    wshape.push_back(k);
  }
  Generator& gen = c.generator();
  ValueNames args{c.one()[0],
                  c.param("weight", wshape, [&] { return default_weight(wshape, fan_in, gen); })};
  if (c.get_bool("bias", true))
    args.push_back(c.param("bias", {nout}, [&] { return default_weight({nout}, fan_in, gen); }));
  Attributes a{{"stride", c.get_ints("stride", Dims, 1)},
               {"padding", c.get_ints("padding", Dims, 0)},
               {"dilation", c.get_ints("dilation", Dims, 1)},
               {"groups", groups}};
  return c.emit_op("conv", args, std::move(a));
}

}  // namespace

void register_conv_ops(OpTable& t) {
  t.add({.type = "conv",
         .min_inputs = 2,
         .max_inputs = 3,
         .kernel = run_conv,
         .policy_kind = {.name = "conv", .aten = {"convolution"}},
         .cost = conv_cost,
         .python = python_conv,
         .python_module = module_conv,
         .onnx = {{.op_type = "Conv",
                   .translate = onnx_conv,
                   .module_class = "ConvNd",
                   .parameter_init = {InitKind::by_shape, InitKind::weight, InitKind::bias}}},
         .native_layers = {{.name = "conv1d",
                            .module_class = "Conv1d",
                            .parameters = true,
                            .build = layer_conv<1>},
                           {.name = "conv2d",
                            .module_class = "Conv2d",
                            .parameters = true,
                            .build = layer_conv<2>},
                           {.name = "conv3d",
                            .module_class = "Conv3d",
                            .parameters = true,
                            .build = layer_conv<3>}},
         .parameter_names = {"weight", "bias"},
         .autocast = {.cpu = AutocastPolicy::lower, .cuda = AutocastPolicy::lower}});
  t.add({.type = "conv_transpose",
         .min_inputs = 2,
         .max_inputs = 3,
         .kernel = run_conv_transpose,
         .policy_kind = {.name = "conv", .aten = {"convolution"}},
         .cost = conv_transpose_cost,
         .python = python_conv_transpose,
         .onnx = {{.op_type = "ConvTranspose",
                   .translate = onnx_conv_transpose,
                   .parameter_init = {InitKind::by_shape, InitKind::weight, InitKind::bias}}},
         // PyTorch 1.13's CPU list has the transposed convolutions in fp32, CUDA's in lower.
         .autocast = {.cpu = AutocastPolicy::fp32, .cuda = AutocastPolicy::lower}});
}

}  // namespace ckpt
