// Rows of matmul and linear (matmul.cpp).
#include "engine/ops/matmul.hpp"
#include "engine/ops/schema/row_helpers.hpp"

namespace ckpt {

namespace {

TensorList run_linear(const OpCall&, const TensorList& x) {
  return {linear(x[0], x[1], optional_input(x, 2))};
}
TensorList run_matmul(const OpCall&, const TensorList& x) {
  return {matmul(x[0], x[1])};
}

// 2·(output elements)·(reduced dimension): a multiply and an add per term.
OpCost product_cost(const OpCall& op, const TensorList& in, const TensorList& out) {
  OpCost c = rows::elementwise_cost(op, in, out);
  const std::int64_t k = in[0].dim() > 0 ? in[0].shape().back() : 1;
  c.flops = 2.0 * static_cast<double>(out[0].numel()) * static_cast<double>(k);
  return c;
}

// PyTorch's nn.Linear exports as Gemm(x, W, b) with transB=1; anything else is matmul and add.
void onnx_gemm(OnnxNode& n) {
  const std::int64_t ta = n.attr_i("transA", 0), tb = n.attr_i("transB", 0);
  const double alpha = n.attr_f("alpha", 1.0), beta = n.attr_f("beta", 1.0);
  const bool has_c = n.has_input(2);
  const std::string& y = n.y();
  if (!ta && tb && alpha == 1.0 && (!has_c || (beta == 1.0 && n.input(2, "C").probe.dim() == 1)))
    return n.define(y, n.emit_op("linear", {n.operand(0), n.operand(1), n.operand(2)}, {}, y));
  const Attributes swap{{"dim0", std::int64_t{0}}, {"dim1", std::int64_t{1}}};
  std::string a = n.operand(0), b = n.operand(1);
  if (ta) a = n.emit_op("transpose", {a}, swap).graph;
  if (tb) b = n.emit_op("transpose", {b}, swap).graph;
  const OnnxValue* prod = &n.emit_op("matmul", {a, b}, {}, has_c || alpha != 1.0 ? "" : y);
  if (alpha != 1.0)
    prod = &n.emit_op("mul_scalar", {prod->graph}, {{"value", alpha}}, has_c ? "" : y);
  if (has_c) {
    std::string c = n.operand(2);
    if (beta != 1.0) c = n.emit_op("mul_scalar", {c}, {{"value", beta}}).graph;
    prod = &n.emit_op("add", {prod->graph, c}, {}, y);
  }
  n.define(y, *prod);
}

void onnx_matmul(OnnxNode& n) {
  n.define(n.y(), n.emit_op("matmul", {n.operand(0), n.operand(1)}, {}, n.y()));
}

}  // namespace

void register_matmul_ops(OpTable& t) {
  t.add({.type = "linear",
         .min_inputs = 2,
         .max_inputs = 3,
         .kernel = run_linear,
         .compute_heavy = true,
         .cost = product_cost,
         .onnx = {{.op_type = "Gemm", .translate = onnx_gemm}}});
  t.add({.type = "matmul",
         .min_inputs = 2,
         .max_inputs = 2,
         .kernel = run_matmul,
         .compute_heavy = true,
         .cost = product_cost,
         .onnx = {{.op_type = "MatMul", .translate = onnx_matmul}}});
}

}  // namespace ckpt
