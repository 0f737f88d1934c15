// Rows of the reductions (reduce.cpp).
#include <optional>

#include "engine/ops/reduce.hpp"
#include "engine/ops/schema/onnx_support.hpp"
#include "engine/ops/schema/row_helpers.hpp"
#include "engine/ops/vector_norm.hpp"

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

// The reduced axes: an attribute, or from opset 13 (ReduceSum) and 18 (every other Reduce*) an
// optional input; none means every axis, unless noop_with_empty_axes (input form only) makes
// the node an identity (nullopt).
std::optional<std::vector<std::int64_t>> reduced_axes(OnnxNode& n, std::int64_t input_since) {
  std::vector<std::int64_t> axes = onnx_rules::axes_input_or_attr(n, 1, input_since);
  if (!axes.empty()) return axes;
  if (n.opset() >= input_since && n.attr_i("noop_with_empty_axes", 0)) return std::nullopt;
  for (std::int64_t d = 0; d < n.rank(); ++d) axes.push_back(d);
  return axes;
}

// ReduceMax (amax), ReduceSum (sum_dims), ReduceMean (mean_dims).
template <const char* Type, int InputSince>
void onnx_reduce(OnnxNode& n) {
  const OnnxValue& x = n.input(0, "first");
  const auto axes = reduced_axes(n, InputSince);
  if (!axes) return n.alias(n.y(), x);
  n.define(n.y(), n.emit_op(Type, {x.graph},
                            {{"dims", *axes}, {"keepdim", n.attr_i("keepdims", 1)}}, n.y()));
}

// x.sum(dim=(1,), keepdim=True) for sum_dims (Method "sum"), mean_dims ("mean").
template <const char* Method>
std::string python_dims(const OpCall& op, const std::vector<std::string>& a, const Shape&) {
  return rows::arg(a, 0) + "." + Method + "(dim=" + rows::ints(attr_ints(op, "dims")) +
         (attr_int(op, "keepdim", 0) ? ", keepdim=True" : "") + ")";
}
constexpr char kSum[] = "sum", kMean[] = "mean";
constexpr char kSumDims[] = "sum_dims", kMeanDims[] = "mean_dims", kAmax[] = "amax";

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

TensorList run_vector_norm(const OpCall& n, const TensorList& x) {
  return {vector_norm(x[0], attr_double(n, "p", 2), attr_ints(n, "dims", {}),
                      attr_int(n, "keepdim", 0) != 0)};
}
std::string python_vector_norm(const OpCall& n, const std::vector<std::string>& a, const Shape&) {
  return "torch.linalg.vector_norm(" + rows::arg(a, 0) + ", " +
         rows::number(attr_double(n, "p", 2)) + ", dim=" + rows::ints(attr_ints(n, "dims", {})) +
         ", keepdim=" + (attr_int(n, "keepdim", 0) ? "True" : "False") + ")";
}

}  // namespace

void register_reduce_ops(OpTable& t) {
  t.add(row("vector_norm", run_vector_norm, python_vector_norm));
  OpSchema sum = sum_in_fp32_on_cuda(row(kSum, run_sum, rows::python_method<kSum>));
  sum.native_layers = {{.name = kSum, .build = rows::layer_reduction}};
  t.add(std::move(sum));
  OpSchema mean = row(kMean, run_mean, rows::python_method<kMean>);
  mean.native_layers = {{.name = kMean, .build = rows::layer_reduction}};
  t.add(std::move(mean));
  t.add(
      sum_in_fp32_on_cuda(row(kSumDims, run_sum_dims, python_dims<kSum>,
                              {{.op_type = "ReduceSum", .translate = onnx_reduce<kSumDims, 13>}})));
  t.add(row(kAmax, run_amax, nullptr,
            {{.op_type = "ReduceMax", .translate = onnx_reduce<kAmax, 18>}}));
  t.add(row(kMeanDims, run_mean_dims, python_dims<kMean>,
            {{.op_type = "ReduceMean", .translate = onnx_reduce<kMeanDims, 18>}}));
}

}  // namespace ckpt
