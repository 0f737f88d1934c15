// Rows of the pooling ops (pool.cpp, pool_avg.cpp, pool_adaptive.cpp): one row per kind for 1, 2
// and 3 spatial dimensions.
#include <algorithm>

#include "engine/ops/pool.hpp"
#include "engine/ops/schema/onnx_support.hpp"
#include "engine/ops/schema/row_helpers.hpp"

namespace ckpt {

namespace {

using onnx_rules::Ints;

// The spatial rank of a pool op: its window (or output size) attribute holds one value per
// dimension; a single value (one for all) leaves it to the first input's rank, as a batch.
int pool_rank(const OpCall& op, const char* key, std::int64_t input_rank) {
  const auto v = attr_ints(op, key, {});
  if (v.size() > 1) return static_cast<int>(v.size());
  return static_cast<int>(std::max<std::int64_t>(input_rank - 2, 1));
}
int pool_rank(const OpCall& op, const char* key, const Shape& shape) {
  return pool_rank(op, key, static_cast<std::int64_t>(shape.size()));
}

std::string nd(const char* base, int dims, const char* suffix = "d") {
  return std::string(base) + std::to_string(dims) + suffix;
}

TensorList run_max_pool(const OpCall& n, const TensorList& x) {
  const auto kernel = attr_ints(n, "kernel");
  return {max_pool(x[0], pool_rank(n, "kernel", x[0].dim()), kernel, attr_ints(n, "stride", kernel),
                   attr_ints(n, "padding", {0}), attr_ints(n, "dilation", {1}),
                   attr_int(n, "ceil_mode", 0) != 0)};
}
TensorList run_avg_pool(const OpCall& n, const TensorList& x) {
  const auto kernel = attr_ints(n, "kernel");
  return {avg_pool(x[0], pool_rank(n, "kernel", x[0].dim()), kernel, attr_ints(n, "stride", kernel),
                   attr_ints(n, "padding", {0}), attr_int(n, "ceil_mode", 0) != 0,
                   attr_int(n, "count_include_pad", 1) != 0)};
}
TensorList run_adaptive_avg_pool(const OpCall& n, const TensorList& x) {
  return {adaptive_avg_pool(x[0], pool_rank(n, "output_size", x[0].dim()),
                            attr_ints(n, "output_size", {1}))};
}
TensorList run_adaptive_max_pool(const OpCall& n, const TensorList& x) {
  return {adaptive_max_pool(x[0], pool_rank(n, "output_size", x[0].dim()),
                            attr_ints(n, "output_size", {1}))};
}

std::string python_max_pool(const OpCall& op, const std::vector<std::string>& a,
                            const Shape& shape) {
  using rows::pair;
  return "F." + nd("max_pool", pool_rank(op, "kernel", shape)) + "(" + rows::arg(a, 0) + ", " +
         pair(attr_ints(op, "kernel")) + ", " + pair(attr_ints(op, "stride")) + ", " +
         pair(attr_ints(op, "padding", {0})) + ", " + pair(attr_ints(op, "dilation", {1})) +
         (attr_int(op, "ceil_mode", 0) ? ", ceil_mode=True" : "") + ")";
}
std::string module_max_pool(const OpCall& op, const std::vector<Shape>&) {
  using rows::pair;
  return "nn." + nd("MaxPool", pool_rank(op, "kernel", 4)) + "(" + pair(attr_ints(op, "kernel")) +
         ", stride=" + pair(attr_ints(op, "stride")) +
         ", padding=" + pair(attr_ints(op, "padding", {0})) +
         (attr_int(op, "ceil_mode", 0) ? ", ceil_mode=True" : "") + ")";
}
std::string python_avg_pool(const OpCall& op, const std::vector<std::string>& a,
                            const Shape& shape) {
  using rows::pair;
  return "F." + nd("avg_pool", pool_rank(op, "kernel", shape)) + "(" + rows::arg(a, 0) + ", " +
         pair(attr_ints(op, "kernel")) + ", " + pair(attr_ints(op, "stride")) + ", " +
         pair(attr_ints(op, "padding", {0})) +
         (attr_int(op, "ceil_mode", 0) ? ", ceil_mode=True" : "") +
         (attr_int(op, "count_include_pad", 1) ? "" : ", count_include_pad=False") + ")";
}
std::string module_avg_pool(const OpCall& op, const std::vector<Shape>&) {
  using rows::pair;
  return "nn." + nd("AvgPool", pool_rank(op, "kernel", 4)) + "(" + pair(attr_ints(op, "kernel")) +
         ", stride=" + pair(attr_ints(op, "stride")) +
         ", padding=" + pair(attr_ints(op, "padding", {0})) +
         (attr_int(op, "ceil_mode", 0) ? ", ceil_mode=True" : "") +
         (attr_int(op, "count_include_pad", 1) ? "" : ", count_include_pad=False") + ")";
}
template <const char* Function>
std::string python_adaptive(const OpCall& op, const std::vector<std::string>& a,
                            const Shape& shape) {
  return "F." + nd(Function, pool_rank(op, "output_size", shape)) + "(" + rows::arg(a, 0) + ", " +
         rows::pair(attr_ints(op, "output_size")) + ")";
}
template <const char* Class>
std::string module_adaptive(const OpCall& op, const std::vector<Shape>&) {
  return "nn." + nd(Class, pool_rank(op, "output_size", 4)) + "(" +
         rows::pair(attr_ints(op, "output_size")) + ")";
}
constexpr char kAdaptiveAvg[] = "adaptive_avg_pool";
constexpr char kAdaptiveMax[] = "adaptive_max_pool";
constexpr char kAdaptiveAvgClass[] = "AdaptiveAvgPool";
constexpr char kAdaptiveMaxClass[] = "AdaptiveMaxPool";

void onnx_max_pool(OnnxNode& n) {
  if (n.attr_i("storage_order", 0) != 0) n.fail("storage_order=1 is not supported");
  const auto w = onnx_rules::read_window(n, "MaxPool");
  n.define(n.y(), n.emit_op("max_pool", {n.input(0, "first").graph},
                            {{"kernel", w.kernel},
                             {"stride", w.strides},
                             {"padding", w.pads},
                             {"dilation", w.dilations},
                             {"ceil_mode", n.attr_i("ceil_mode", 0)}},
                            n.y()));
  n.unavailable(1, "the engine's max_pool keeps its indices for backward only");
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
  n.define(n.y(), n.emit_op("avg_pool", {source},
                            {{"kernel", w.kernel},
                             {"stride", w.strides},
                             {"padding", w.pads},
                             {"ceil_mode", n.attr_i("ceil_mode", 0)},
                             {"count_include_pad", include_pad}},
                            n.y()));
}

// GlobalAveragePool and GlobalMaxPool: the adaptive pool to 1 over every spatial dim.
template <const char* Type>
void onnx_global_pool(OnnxNode& n) {
  const std::int64_t rank = n.rank();
  if (rank < 3 || rank > 5)
    n.fail(std::string(n.op_type()) + " is supported on [N, C, *] with 1, 2 or 3 spatial " +
           "dimensions, got rank " + std::to_string(rank));
  n.define(n.y(), n.emit_op(Type, {n.input(0, "first").graph},
                            {{"output_size", Ints(static_cast<std::size_t>(rank - 2), 1)}}, n.y()));
}

// {"type": "maxpool1d/2d/3d" | "avgpool1d/2d/3d", "kernel", "stride" (= kernel), "padding",
// "ceil_mode"}, and "dilation" (max) or "count_include_pad" (average).
template <std::size_t Dims>
Attributes pooling_window(NativeLayerCall& c) {
  const auto kernel = c.get_ints("kernel", Dims, -1);
  for (std::int64_t k : kernel)
    if (k <= 0) c.fail("needs a positive \"kernel\"");
  Attributes a{{"kernel", kernel},
               {"stride", c.get_ints("stride", Dims, -1)},
               {"padding", c.get_ints("padding", Dims, 0)},
               {"ceil_mode", std::int64_t{c.get_bool("ceil_mode", false) ? 1 : 0}}};
  if (std::get<std::vector<std::int64_t>>(a["stride"])[0] < 0) a["stride"] = kernel;
  return a;
}
template <std::size_t Dims>
ValueNames layer_maxpool(NativeLayerCall& c) {
  Attributes a = pooling_window<Dims>(c);
  a["dilation"] = c.get_ints("dilation", Dims, 1);
  return c.emit_op("max_pool", c.one(), std::move(a));
}
template <std::size_t Dims>
ValueNames layer_avgpool(NativeLayerCall& c) {
  Attributes a = pooling_window<Dims>(c);
  a["count_include_pad"] = std::int64_t{c.get_bool("count_include_pad", true) ? 1 : 0};
  return c.emit_op("avg_pool", c.one(), std::move(a));
}
template <const char* Type, std::size_t Dims>
ValueNames layer_adaptive(NativeLayerCall& c) {
  return c.emit_op(Type, c.one(), {{"output_size", c.get_ints("output", Dims, 1)}});
}

OpSchema with_layers(OpSchema row, std::vector<NativeLayer> layers) {
  row.native_layers = std::move(layers);
  return row;
}

}  // namespace

void register_pool_ops(OpTable& t) {
  t.add(with_layers(
      rows::one_pass_row(
          "max_pool", run_max_pool, python_max_pool,
          {{.op_type = "MaxPool", .translate = onnx_max_pool, .module_class = "MaxPoolNd"}},
          module_max_pool),
      {{.name = "maxpool1d", .module_class = "MaxPool1d", .build = layer_maxpool<1>},
       {.name = "maxpool2d", .module_class = "MaxPool2d", .build = layer_maxpool<2>},
       {.name = "maxpool3d", .module_class = "MaxPool3d", .build = layer_maxpool<3>}}));
  t.add(with_layers(
      rows::one_pass_row(
          "avg_pool", run_avg_pool, python_avg_pool,
          {{.op_type = "AveragePool", .translate = onnx_average_pool, .module_class = "AvgPoolNd"}},
          module_avg_pool),
      {{.name = "avgpool1d", .module_class = "AvgPool1d", .build = layer_avgpool<1>},
       {.name = "avgpool2d", .module_class = "AvgPool2d", .build = layer_avgpool<2>},
       {.name = "avgpool3d", .module_class = "AvgPool3d", .build = layer_avgpool<3>}}));
  t.add(with_layers(
      rows::one_pass_row("adaptive_avg_pool", run_adaptive_avg_pool, python_adaptive<kAdaptiveAvg>,
                         {{.op_type = "GlobalAveragePool",
                           .translate = onnx_global_pool<kAdaptiveAvg>,
                           .module_class = "AdaptiveAvgPoolNd"}},
                         module_adaptive<kAdaptiveAvgClass>),
      {{.name = "adaptive_avgpool1d",
        .module_class = "AdaptiveAvgPool1d",
        .build = layer_adaptive<kAdaptiveAvg, 1>},
       {.name = "adaptive_avgpool2d",
        .module_class = "AdaptiveAvgPool2d",
        .build = layer_adaptive<kAdaptiveAvg, 2>},
       {.name = "adaptive_avgpool3d",
        .module_class = "AdaptiveAvgPool3d",
        .build = layer_adaptive<kAdaptiveAvg, 3>}}));
  t.add(with_layers(
      rows::one_pass_row("adaptive_max_pool", run_adaptive_max_pool, python_adaptive<kAdaptiveMax>,
                         {{.op_type = "GlobalMaxPool",
                           .translate = onnx_global_pool<kAdaptiveMax>,
                           .module_class = "AdaptiveMaxPoolNd"}},
                         module_adaptive<kAdaptiveMaxClass>),
      {{.name = "adaptive_maxpool1d",
        .module_class = "AdaptiveMaxPool1d",
        .build = layer_adaptive<kAdaptiveMax, 1>},
       {.name = "adaptive_maxpool2d",
        .module_class = "AdaptiveMaxPool2d",
        .build = layer_adaptive<kAdaptiveMax, 2>},
       {.name = "adaptive_maxpool3d",
        .module_class = "AdaptiveMaxPool3d",
        .build = layer_adaptive<kAdaptiveMax, 3>}}));
}

}  // namespace ckpt
