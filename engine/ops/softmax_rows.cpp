// Rows of softmax and log_softmax (softmax.cpp).
#include "engine/ops/schema/row_helpers.hpp"
#include "engine/ops/softmax.hpp"

namespace ckpt {

namespace {

TensorList run_softmax(const OpCall& n, const TensorList& x) {
  return {softmax(x[0], attr_int(n, "dim"))};
}
TensorList run_log_softmax(const OpCall& n, const TensorList& x) {
  return {log_softmax(x[0], attr_int(n, "dim"))};
}

// Below opset 13 the input is seen as 2-D, [prod(dims before axis), prod(the rest)].
template <const char* Op>
void onnx_softmax(OnnxNode& n) {
  const OnnxValue& x = n.input(0, "first");
  const std::int64_t rank = n.rank();
  const std::int64_t axis =
      wrap_dim(n.attr_i("axis", n.opset() >= 13 ? -1 : 1), rank, n.op_type().c_str());
  if (n.opset() >= 13 || axis == rank - 1)
    return n.define(n.y(), n.emit_op(Op, {x.graph}, {{"dim", axis}}, n.y()));
  const Shape& s = x.probe.shape();
  std::int64_t outer = 1;
  for (std::int64_t d = 0; d < axis; ++d) outer *= s[static_cast<std::size_t>(d)];
  const std::string flat =
      n.emit_op("reshape", {x.graph}, {{"shape", std::vector<std::int64_t>{outer, -1}}}).graph;
  const std::string soft = n.emit_op(Op, {flat}, {{"dim", std::int64_t{1}}}).graph;
  n.define(n.y(), n.emit_op("reshape", {soft},
                            {{"shape", std::vector<std::int64_t>(s.begin(), s.end())}}, n.y()));
}

constexpr char kSoftmax[] = "softmax", kLogSoftmax[] = "log_softmax";

// F.softmax(x, dim=d) and F.log_softmax (Op); nn.Softmax(dim=d) and nn.LogSoftmax (Class).
template <const char* Op>
std::string python_softmax(const OpCall& op, const std::vector<std::string>& a, const Shape&) {
  return std::string("F.") + Op + "(" + rows::arg(a, 0) +
         ", dim=" + std::to_string(attr_int(op, "dim")) + ")";
}
template <const char* Class>
std::string module_softmax(const OpCall& op, const std::vector<Shape>&) {
  return std::string("nn.") + Class + "(dim=" + std::to_string(attr_int(op, "dim")) + ")";
}
constexpr char kSoftmaxModule[] = "Softmax", kLogSoftmaxModule[] = "LogSoftmax";

}  // namespace

void register_softmax_ops(OpTable& t) {
  t.add({.type = kSoftmax,
         .kernel = run_softmax,
         .cost = rows::elementwise_cost,
         .python = python_softmax<kSoftmax>,
         .python_module = module_softmax<kSoftmaxModule>,
         .onnx = {{.op_type = "Softmax",
                   .translate = onnx_softmax<kSoftmax>,
                   .module_class = kSoftmaxModule}},
         .native_layers = {{.name = kSoftmax,
                            .module_class = kSoftmaxModule,
                            .build = rows::layer_with_dim}},
         .autocast = {.cuda = AutocastPolicy::fp32_set_opt_dtype}});
  t.add({.type = kLogSoftmax,
         .kernel = run_log_softmax,
         .cost = rows::elementwise_cost,
         .python = python_softmax<kLogSoftmax>,
         .python_module = module_softmax<kLogSoftmaxModule>,
         .onnx = {{.op_type = "LogSoftmax", .translate = onnx_softmax<kLogSoftmax>}},
         .native_layers = {{.name = kLogSoftmax,
                            .module_class = kLogSoftmaxModule,
                            .build = rows::layer_with_dim}},
         .autocast = {.cuda = AutocastPolicy::fp32_set_opt_dtype}});
}

}  // namespace ckpt
