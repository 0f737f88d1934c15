// Rows of the pooling ops (pool.cpp).
#include <algorithm>

#include "engine/ops/pool.hpp"
#include "engine/ops/schema/onnx_support.hpp"
#include "engine/ops/schema/row_helpers.hpp"

namespace ckpt {

namespace {

using onnx_rules::Ints;

TensorList run_max_pool2d(const OpCall& n, const TensorList& x) {
  const auto kernel = attr_pair(n, "kernel", {0, 0});
  return {max_pool2d(x[0], kernel, attr_pair(n, "stride", kernel), attr_pair(n, "padding", {0, 0}),
                     attr_pair(n, "dilation", {1, 1}), attr_int(n, "ceil_mode", 0) != 0)};
}
TensorList run_avg_pool2d(const OpCall& n, const TensorList& x) {
  const auto kernel = attr_pair(n, "kernel", {0, 0});
  return {avg_pool2d(x[0], kernel, attr_pair(n, "stride", kernel), attr_pair(n, "padding", {0, 0}),
                     attr_int(n, "ceil_mode", 0) != 0, attr_int(n, "count_include_pad", 1) != 0)};
}
TensorList run_adaptive_avg_pool2d(const OpCall& n, const TensorList& x) {
  return {adaptive_avg_pool2d(x[0], attr_pair(n, "output_size", {1, 1}))};
}

std::string python_max_pool2d(const OpCall& op, const std::vector<std::string>& a, const Shape&) {
  using rows::pair;
  return "F.max_pool2d(" + rows::arg(a, 0) + ", " + pair(attr_ints(op, "kernel")) + ", " +
         pair(attr_ints(op, "stride")) + ", " + pair(attr_ints(op, "padding", {0, 0})) + ", " +
         pair(attr_ints(op, "dilation", {1, 1})) +
         (attr_int(op, "ceil_mode", 0) ? ", ceil_mode=True" : "") + ")";
}
std::string module_max_pool2d(const OpCall& op, const std::vector<Shape>&) {
  using rows::pair;
  return "nn.MaxPool2d(" + pair(attr_ints(op, "kernel")) +
         ", stride=" + pair(attr_ints(op, "stride")) +
         ", padding=" + pair(attr_ints(op, "padding", {0, 0})) +
         (attr_int(op, "ceil_mode", 0) ? ", ceil_mode=True" : "") + ")";
}
std::string python_avg_pool2d(const OpCall& op, const std::vector<std::string>& a, const Shape&) {
  using rows::pair;
  return "F.avg_pool2d(" + rows::arg(a, 0) + ", " + pair(attr_ints(op, "kernel")) + ", " +
         pair(attr_ints(op, "stride")) + ", " + pair(attr_ints(op, "padding", {0, 0})) +
         (attr_int(op, "ceil_mode", 0) ? ", ceil_mode=True" : "") +
         (attr_int(op, "count_include_pad", 1) ? "" : ", count_include_pad=False") + ")";
}
std::string module_avg_pool2d(const OpCall& op, const std::vector<Shape>&) {
  using rows::pair;
  return "nn.AvgPool2d(" + pair(attr_ints(op, "kernel")) +
         ", stride=" + pair(attr_ints(op, "stride")) +
         ", padding=" + pair(attr_ints(op, "padding", {0, 0})) +
         (attr_int(op, "ceil_mode", 0) ? ", ceil_mode=True" : "") +
         (attr_int(op, "count_include_pad", 1) ? "" : ", count_include_pad=False") + ")";
}
std::string python_adaptive_avg_pool2d(const OpCall& op, const std::vector<std::string>& a,
                                       const Shape&) {
  return "F.adaptive_avg_pool2d(" + rows::arg(a, 0) + ", " +
         rows::pair(attr_ints(op, "output_size")) + ")";
}
std::string module_adaptive_avg_pool2d(const OpCall& op, const std::vector<Shape>&) {
  return "nn.AdaptiveAvgPool2d(" + rows::pair(attr_ints(op, "output_size")) + ")";
}

void onnx_max_pool(OnnxNode& n) {
  if (n.attr_i("storage_order", 0) != 0) n.fail("storage_order=1 is not supported");
  const auto w = onnx_rules::read_window(n, "MaxPool");
  n.define(n.y(), n.emit_op("max_pool2d", {n.input(0, "first").graph},
                            {{"kernel", w.kernel},
                             {"stride", w.strides},
                             {"padding", w.pads},
                             {"dilation", w.dilations},
                             {"ceil_mode", n.attr_i("ceil_mode", 0)}},
                            n.y()));
  n.unavailable(1, "the engine's max_pool2d keeps its indices for backward only");
}

void onnx_average_pool(OnnxNode& n) {
  auto w = onnx_rules::read_window(n, "AveragePool");
  // Opset 19 gave AveragePool dilations, which PyTorch's avg_pool has not.
  for (const auto d : w.dilations)
    if (d != 1)
      n.fail("dilations " + shape_str(w.dilations) +
             " are not supported (PyTorch's "
             "average pooling has none)");
  const std::string source = n.input(0, "first").graph;
  const std::int64_t include_pad = n.attr_i("count_include_pad", 0);
  n.define(n.y(), n.emit_op("avg_pool2d", {source},
                            {{"kernel", w.kernel},
                             {"stride", w.strides},
                             {"padding", w.pads},
                             {"ceil_mode", n.attr_i("ceil_mode", 0)},
                             {"count_include_pad", include_pad}},
                            n.y()));
}

void onnx_global_average_pool(OnnxNode& n) {
  if (n.rank() != 4) n.fail("GlobalAveragePool is supported on [N, C, H, W] only");
  n.define(n.y(), n.emit_op("adaptive_avg_pool2d", {n.input(0, "first").graph},
                            {{"output_size", Ints{1, 1}}}, n.y()));
}

// {"type": "maxpool2d" | "avgpool2d", "kernel", "stride" (= kernel), "padding", "ceil_mode"},
// and "dilation" (max) or "count_include_pad" (average).
Attributes pooling_window(NativeLayerCall& c) {
  const auto kernel = c.get_ints("kernel", 2, -1);
  if (kernel[0] <= 0 || kernel[1] <= 0) c.fail("needs a positive \"kernel\"");
  Attributes a{{"kernel", kernel},
               {"stride", c.get_ints("stride", 2, -1)},
               {"padding", c.get_ints("padding", 2, 0)},
               {"ceil_mode", std::int64_t{c.get_bool("ceil_mode", false) ? 1 : 0}}};
  if (std::get<std::vector<std::int64_t>>(a["stride"])[0] < 0) a["stride"] = kernel;
  return a;
}
ValueNames layer_maxpool2d(NativeLayerCall& c) {
  Attributes a = pooling_window(c);
  a["dilation"] = c.get_ints("dilation", 2, 1);
  return c.emit_op("max_pool2d", c.one(), std::move(a));
}
ValueNames layer_avgpool2d(NativeLayerCall& c) {
  Attributes a = pooling_window(c);
  a["count_include_pad"] = std::int64_t{c.get_bool("count_include_pad", true) ? 1 : 0};
  return c.emit_op("avg_pool2d", c.one(), std::move(a));
}
ValueNames layer_adaptive_avgpool2d(NativeLayerCall& c) {
  return c.emit_op("adaptive_avg_pool2d", c.one(), {{"output_size", c.get_ints("output", 2, 1)}});
}

OpSchema with_layer(OpSchema row, NativeLayer layer) {
  row.native_layers = {layer};
  return row;
}

}  // namespace

void register_pool_ops(OpTable& t) {
  t.add(with_layer(
      rows::one_pass_row(
          "max_pool2d", run_max_pool2d, python_max_pool2d,
          {{.op_type = "MaxPool", .translate = onnx_max_pool, .module_class = "MaxPool2d"}},
          module_max_pool2d),
      {.name = "maxpool2d", .module_class = "MaxPool2d", .build = layer_maxpool2d}));
  t.add(with_layer(
      rows::one_pass_row(
          "avg_pool2d", run_avg_pool2d, python_avg_pool2d,
          {{.op_type = "AveragePool", .translate = onnx_average_pool, .module_class = "AvgPool2d"}},
          module_avg_pool2d),
      {.name = "avgpool2d", .module_class = "AvgPool2d", .build = layer_avgpool2d}));
  t.add(with_layer(
      rows::one_pass_row("adaptive_avg_pool2d", run_adaptive_avg_pool2d, python_adaptive_avg_pool2d,
                         {{.op_type = "GlobalAveragePool",
                           .translate = onnx_global_average_pool,
                           .module_class = "AdaptiveAvgPool2d"}},
                         module_adaptive_avg_pool2d),
      {.name = "adaptive_avgpool2d",
       .module_class = "AdaptiveAvgPool2d",
       .build = layer_adaptive_avgpool2d}));
}

}  // namespace ckpt
