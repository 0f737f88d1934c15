// Rows of the reductions (reduce.cpp).
#include "engine/ops/reduce.hpp"
#include "engine/ops/schema/onnx_support.hpp"
#include "engine/ops/schema/row_helpers.hpp"

namespace ckpt {

namespace {

TensorList run_sum(const OpCall&, const TensorList& x) {
  return {sum(x[0])};
}
TensorList run_mean(const OpCall&, const TensorList& x) {
  return {mean(x[0])};
}
TensorList run_sum_dims(const OpCall& n, const TensorList& x) {
  return {sum(x[0], attr_ints(n, "dims"), attr_int(n, "keepdim", 0) != 0)};
}
TensorList run_mean_dims(const OpCall& n, const TensorList& x) {
  return {mean(x[0], attr_ints(n, "dims"), attr_int(n, "keepdim", 0) != 0)};
}

TensorList run_amax(const OpCall& n, const TensorList& x) {
  return {amax(x[0], attr_ints(n, "dims"), attr_int(n, "keepdim", 0) != 0)};
}

// ReduceMax: axes an attribute until opset 18, all dimensions when absent.
void onnx_reduce_max(OnnxNode& n) {
  std::vector<std::int64_t> axes = n.attr_ints("axes");
  if (axes.empty())
    for (std::int64_t d = 0; d < n.rank(); ++d) axes.push_back(d);
  n.define(n.y(), n.emit_op("amax", {n.input(0, "first").graph},
                            {{"dims", axes}, {"keepdim", n.attr_i("keepdims", 1)}}, n.y()));
}

// ReduceSum takes its axes as an input from opset 13; ReduceMean as an attribute until 18.
template <bool IsSum>
void onnx_reduce(OnnxNode& n) {
  std::vector<std::int64_t> axes =
      IsSum ? onnx_rules::axes_input_or_attr(n, 1, 13) : n.attr_ints("axes");
  const OnnxValue& x = n.input(0, "first");
  if (axes.empty()) {
    if (IsSum && n.attr_i("noop_with_empty_axes", 0)) return n.alias(n.y(), x);
    for (std::int64_t d = 0; d < n.rank(); ++d) axes.push_back(d);
  }
  n.define(n.y(), n.emit_op(IsSum ? "sum_dims" : "mean_dims", {x.graph},
                            {{"dims", axes}, {"keepdim", n.attr_i("keepdims", 1)}}, n.y()));
}

// x.sum(dim=(1,), keepdim=True) for sum_dims (Method "sum"), mean_dims ("mean").
template <const char* Method>
std::string python_dims(const OpCall& op, const std::vector<std::string>& a, const Shape&) {
  return rows::arg(a, 0) + "." + Method + "(dim=" + rows::ints(attr_ints(op, "dims")) +
         (attr_int(op, "keepdim", 0) ? ", keepdim=True" : "") + ")";
}
constexpr char kSum[] = "sum", kMean[] = "mean";

OpSchema row(const char* type, TensorList (*kernel)(const OpCall&, const TensorList&),
             PythonExpression python, std::vector<OnnxRule> onnx = {}) {
  return {.type = type,
          .kernel = kernel,
          .cost = rows::elementwise_cost,
          .python = python,
          .onnx = std::move(onnx)};
}

// CUDA's autocast sums a lower-precision tensor into float32 (sum(x, dtype=float32)).
OpSchema sum_in_fp32_on_cuda(OpSchema r) {
  r.autocast.cuda = AutocastPolicy::fp32_set_opt_dtype;
  return r;
}

}  // namespace

void register_reduce_ops(OpTable& t) {
  OpSchema sum = sum_in_fp32_on_cuda(row(kSum, run_sum, rows::python_method<kSum>));
  sum.native_layers = {{.name = kSum, .build = rows::layer_reduction}};
  t.add(std::move(sum));
  OpSchema mean = row(kMean, run_mean, rows::python_method<kMean>);
  mean.native_layers = {{.name = kMean, .build = rows::layer_reduction}};
  t.add(std::move(mean));
  t.add(sum_in_fp32_on_cuda(row("sum_dims", run_sum_dims, python_dims<kSum>,
                                {{.op_type = "ReduceSum", .translate = onnx_reduce<true>}})));
  t.add(row("amax", run_amax, nullptr,
            {{.op_type = "ReduceMax", .until = 17, .translate = onnx_reduce_max}}));
  t.add(row("mean_dims", run_mean_dims, python_dims<kMean>,
            {{.op_type = "ReduceMean", .translate = onnx_reduce<false>}}));
}

}  // namespace ckpt
