// Rows of matmul and linear (matmul.cpp).
#include <string>

#include "engine/ops/matmul.hpp"
#include "engine/ops/schema/row_helpers.hpp"
#include "engine/tensor/init.hpp"

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

std::string python_linear(const OpCall&, const std::vector<std::string>& a, const Shape&) {
  const auto arg = [&](std::size_t i) { return rows::arg(a, i); };
  return "F.linear(" + arg(0) + ", " + arg(1) + (arg(2).empty() ? "" : ", " + arg(2)) + ")";
}
// nn.Linear(in, out) from the weight's [out, in]; params are by input position, so a weight
// shape means the op has one.
std::string module_linear(const OpCall&, const std::vector<Shape>& params) {
  const auto has = [&](std::size_t i) { return i < params.size() && !params[i].empty(); };
  if (!has(1) || params[1].size() != 2) return "";
  const Shape& w = params[1];
  return "nn.Linear(" + std::to_string(w[1]) + ", " + std::to_string(w[0]) +
         (has(2) ? "" : ", bias=False") + ")";
}
constexpr char kMatmul[] = " @ ";

// {"type": "linear", "in", "out", "bias"}: nn.Linear, weight and bias drawn as PyTorch does.
ValueNames layer_linear(NativeLayerCall& c) {
  const std::int64_t nin = c.get_int("in"), nout = c.get_int("out");
  if (nin <= 0 || nout <= 0) c.fail("\"in\" and \"out\" must be positive");
  Generator& gen = c.generator();
  ValueNames args{c.one()[0], c.param("weight", {nout, nin}, [&] {
                    return default_weight({nout, nin}, nin, gen);
                  })};
  if (c.get_bool("bias", true))
    args.push_back(c.param("bias", {nout}, [&] { return default_weight({nout}, nin, gen); }));
  return c.emit_op("linear", args, {});
}
ValueNames layer_matmul(NativeLayerCall& c) {
  return c.emit_op("matmul", c.expect(2, "a, b"), {});
}

// PyTorch's nn.Linear exports as Gemm(x, W, b) with transB=1; anything else is matmul and add.
// Gemm's operands are matrices whose inner dimensions agree, and C broadcasts to the product
// one way: checked here, where the node can be named, not deep inside a kernel.
void check_gemm_shapes(OnnxNode& n, bool ta, bool tb, bool has_c) {
  const Shape& a = n.input(0, "A").probe.shape();
  const Shape& b = n.input(1, "B").probe.shape();
  if (a.size() != 2 || b.size() != 2)
    n.fail("Gemm multiplies matrices; A is " + shape_str(a) + " and B " + shape_str(b));
  const std::int64_t m = a[ta ? 1 : 0], k = a[ta ? 0 : 1];
  const std::int64_t kb = b[tb ? 1 : 0], cols = b[tb ? 0 : 1];
  if (k != kb)
    n.fail("Gemm's A" + std::string(ta ? "^T " : " ") + shape_str(a) + " and B" +
           (tb ? "^T " : " ") + shape_str(b) + " do not multiply (inner dimensions " +
           std::to_string(k) + " and " + std::to_string(kb) + ")");
  if (!has_c) return;
  const Shape& c = n.input(2, "C").probe.shape();
  const Shape product{m, cols};
  bool fits = c.size() <= 2;
  for (std::size_t i = 0; fits && i < c.size(); ++i) {
    const std::int64_t want = product[2 - c.size() + i];
    fits = c[i] == want || c[i] == 1;
  }
  if (!fits)
    n.fail("Gemm's C " + shape_str(c) + " does not broadcast to the product " + shape_str(product));
}

void onnx_gemm(OnnxNode& n) {
  const std::int64_t ta = n.attr_i("transA", 0), tb = n.attr_i("transB", 0);
  const double alpha = n.attr_f("alpha", 1.0), beta = n.attr_f("beta", 1.0);
  const bool has_c = n.has_input(2);
  check_gemm_shapes(n, ta != 0, tb != 0, has_c);
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

// Einsum as a batched matrix product, the two forms attention is written in (MaxViT's
// "bghid,bghjd->bghij" and "bghij,bghjd->bghid"): the same batch letters on every operand,
// then a product over one shared letter, the second operand transposed when the shared letter
// is last in both. Other equations are a named error.
std::string letters(const std::string& s) {
  std::string out;
  for (char ch : s)
    if (ch != ' ') out += ch;
  return out;
}
void onnx_einsum(OnnxNode& n) {
  const std::string eq = letters(n.attr_s("equation", ""));
  const auto comma = eq.find(','), arrow = eq.find("->");
  if (n.input_count() != 2 || comma == std::string::npos || arrow == std::string::npos ||
      arrow < comma)
    n.fail("only two-operand einsum equations with an explicit output are supported, got '" + eq +
           "'");
  const std::string a = eq.substr(0, comma), b = eq.substr(comma + 1, arrow - comma - 1),
                    y = eq.substr(arrow + 2);
  const bool sizes = a.size() >= 2 && a.size() == b.size() && a.size() == y.size();
  const std::size_t r = a.size();
  const std::string batch = sizes ? a.substr(0, r - 2) : "";
  const bool same_batch =
      sizes && b.compare(0, r - 2, batch) == 0 && y.compare(0, r - 2, batch) == 0;
  const char i = sizes ? a[r - 2] : 0, k = sizes ? a[r - 1] : 0;
  // y = a @ b: a "..ik", b "..kj", y "..ij"; y = a @ b^T: b "..jk".
  const bool plain = same_batch && b[r - 2] == k && y[r - 2] == i && y[r - 1] == b[r - 1];
  const bool transposed = same_batch && b[r - 1] == k && y[r - 2] == i && y[r - 1] == b[r - 2];
  if (!plain && !transposed)
    n.fail("einsum '" + eq + "' is not a batched matrix product this importer translates");
  std::string rhs = n.operand(1);
  if (transposed)
    rhs = n.emit_op("transpose", {rhs}, {{"dim0", std::int64_t{-2}}, {"dim1", std::int64_t{-1}}})
              .graph;
  n.define(n.y(), n.emit_op("matmul", {n.operand(0), rhs}, {}, n.y()));
}

}  // namespace

std::vector<OnnxPattern> linear_patterns();  // linear_patterns.cpp

void register_matmul_ops(OpTable& t) {
  t.add({.type = "linear",
         .min_inputs = 2,
         .max_inputs = 3,
         .kernel = run_linear,
         .policy_kind = {.name = "mm", .aten = {"addmm", "mm"}},
         .cost = product_cost,
         .python = python_linear,
         .python_module = module_linear,
         .onnx = {{.op_type = "Gemm",
                   .translate = onnx_gemm,
                   .module_class = "Linear",
                   .parameter_init = {InitKind::by_shape, InitKind::weight, InitKind::bias}}},
         .onnx_patterns = linear_patterns(),
         .native_layers = {{.name = "linear",
                            .module_class = "Linear",
                            .parameters = true,
                            .build = layer_linear}},
         .parameter_names = {"weight", "bias"},
         .autocast = {.cpu = AutocastPolicy::lower, .cuda = AutocastPolicy::lower}});
  t.add({.type = "matmul",
         .min_inputs = 2,
         .max_inputs = 2,
         .kernel = run_matmul,
         .policy_kind = {.name = "mm", .aten = {"mm", "bmm"}},
         .cost = product_cost,
         .python = rows::python_infix<kMatmul>,
         .onnx = {{.op_type = "MatMul", .translate = onnx_matmul},
                  {.op_type = "Einsum", .since = 12, .translate = onnx_einsum}},
         .native_layers = {{.name = "matmul", .build = layer_matmul}},
         .autocast = {.cpu = AutocastPolicy::lower, .cuda = AutocastPolicy::lower}});
}

}  // namespace ckpt
