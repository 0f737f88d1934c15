// Rows of the elementwise arithmetic ops (elementwise.cpp).
#include <cmath>
#include <string>

#include "engine/ops/elementwise.hpp"
#include "engine/ops/schema/onnx_support.hpp"
#include "engine/ops/schema/row_helpers.hpp"

namespace ckpt {

namespace {

using onnx_rules::is_scalar;
using rows::binary;
using rows::elementwise_cost;
using rows::python_infix;
using rows::python_scalar;
using rows::unary;
using rows::with_scalar;

Tensor add_tt(const Tensor& a, const Tensor& b) {
  return add(a, b);
}
Tensor sub_tt(const Tensor& a, const Tensor& b) {
  return sub(a, b);
}
Tensor mul_tt(const Tensor& a, const Tensor& b) {
  return mul(a, b);
}
Tensor div_tt(const Tensor& a, const Tensor& b) {
  return div(a, b);
}
Tensor add_ts(const Tensor& a, double b) {
  return add(a, b);
}
Tensor sub_ts(const Tensor& a, double b) {
  return sub(a, b);
}
Tensor mul_ts(const Tensor& a, double b) {
  return mul(a, b);
}
Tensor div_ts(const Tensor& a, double b) {
  return div(a, b);
}

// ONNX Max and Min take one or more inputs, broadcast: a chain of two-input ops.
template <bool Max>
void onnx_extremum(OnnxNode& n) {
  if (n.input_count() == 0) n.fail(std::string(Max ? "Max" : "Min") + " needs at least one input");
  if (n.input_count() == 1) return n.alias(n.y(), n.input(0, "first"));
  const OnnxValue* cur = nullptr;
  for (std::size_t i = 1; i < n.input_count(); ++i)
    cur = &n.emit_op(Max ? "maximum" : "minimum", {cur ? cur->graph : n.operand(0), n.operand(i)},
                     {}, i + 1 == n.input_count() ? n.y() : "");
  n.define(n.y(), *cur);
}

TensorList run_pow(const OpCall& n, const TensorList& x) {
  return {pow(x[0], attr_double(n, "exponent"))};
}

// Add, Sub, Mul, Div and Pow on known values (shape arithmetic); integer division truncates.
bool fold_arithmetic(OnnxNode& n) {
  if (!onnx_rules::all_inputs_constant(n) || !n.has_input(0)) return false;
  const Tensor& a = n.input(0, "first").probe;
  const Tensor b = n.constant_input(1, "second");
  const std::string& t = n.op_type();
  const bool integer = a.dtype() == DType::i64;
  std::function<double(double, double)> f;
  if (t == "Add") f = [](double p, double q) { return p + q; };
  if (t == "Sub") f = [](double p, double q) { return p - q; };
  if (t == "Mul") f = [](double p, double q) { return p * q; };
  if (t == "Div") f = [integer](double p, double q) { return integer ? std::trunc(p / q) : p / q; };
  if (t == "Pow") f = [](double p, double q) { return std::pow(p, q); };
  return n.fold_to(onnx_rules::fold_binary(a, b, f, t.c_str()));
}

// x op c becomes the scalar form (what PyTorch records for a Python scalar); c op x for the
// non-commutative ops goes through neg or a reciprocal.
template <const char* Op>
void onnx_arithmetic(OnnxNode& n) {
  const OnnxValue& a = n.input(0, "first");
  const OnnxValue& b = n.input(1, "second");
  const std::string op = Op;
  const std::string& y = n.y();
  if (is_scalar(&b) && !a.constant)
    return n.define(y, n.emit_op(op + "_scalar", {a.graph}, {{"value", b.probe.item()}}, y));
  if (is_scalar(&a) && !b.constant) {
    const double c = a.probe.item();
    if (op == "add" || op == "mul")
      return n.define(y, n.emit_op(op + "_scalar", {b.graph}, {{"value", c}}, y));
    if (op == "sub") {
      const std::string neg = n.emit_op("neg", {b.graph}, {}).graph;
      return n.define(y, n.emit_op("add_scalar", {neg}, {{"value", c}}, y));
    }
    const std::string inv = n.emit_op("pow", {b.graph}, {{"exponent", -1.0}}).graph;
    return n.define(y, n.emit_op("mul_scalar", {inv}, {{"value", c}}, y));
  }
  n.define(y, n.emit_op(op, {n.operand(0), n.operand(1)}, {}, y));
}

constexpr char kAdd[] = "add", kSub[] = "sub", kMul[] = "mul", kDiv[] = "div", kNeg[] = "neg";

bool fold_neg(OnnxNode& n) {
  if (!onnx_rules::all_inputs_constant(n) || !n.has_input(0)) return false;
  return n.fold_to(onnx_rules::fold_unary(n.input(0, "first").probe, [](double v) { return -v; }));
}

void onnx_pow(OnnxNode& n) {
  if (!is_scalar(n.input_or_null(1)))
    n.fail("Pow with an exponent that is not one known number is not supported");
  n.define(n.y(), n.emit_op("pow", {n.input(0, "first").graph},
                            {{"exponent", n.input_or_null(1)->probe.item()}}, n.y()));
}

std::string python_neg(const OpCall&, const std::vector<std::string>& a, const Shape&) {
  // Appended, not "-" + arg: GCC 12's -Wrestrict misreads operator+(const char*, string&&).
  std::string s = "-";
  return s += rows::arg(a, 0);
}
std::string python_pow(const OpCall& op, const std::vector<std::string>& a, const Shape&) {
  return rows::arg(a, 0) + " ** " + rows::number(attr_double(op, "exponent"));
}

// The Python operators: "x + y" for add, "x + 2.0" for add_scalar.
constexpr char kPlus[] = " + ", kMinus[] = " - ", kTimes[] = " * ", kOver[] = " / ";

template <const char* Op>
OnnxRule arithmetic_rule(const char* onnx_type) {
  return {.op_type = onnx_type, .translate = onnx_arithmetic<Op>, .fold = fold_arithmetic};
}

ValueNames layer_pow(NativeLayerCall& c) {
  return c.emit_op("pow", c.one(), {{"exponent", c.get_double("exponent", 2.0)}});
}

OpSchema row(const char* type, int inputs, TensorList (*kernel)(const OpCall&, const TensorList&),
             PythonExpression python, std::vector<OnnxRule> onnx = {},
             std::vector<NativeLayer> layers = {}) {
  return OpSchema{.type = type,
                  .min_inputs = inputs,
                  .max_inputs = inputs,
                  .kernel = kernel,
                  .cost = elementwise_cost,
                  .python = python,
                  .onnx = std::move(onnx),
                  .native_layers = std::move(layers)};
}

template <const char* Type>
std::vector<NativeLayer> arithmetic_layer() {
  return {{.name = Type, .build = rows::layer_arithmetic}};
}

}  // namespace

void register_elementwise_ops(OpTable& t) {
  t.add(row(kAdd, 2, binary<add_tt>, python_infix<kPlus>, {arithmetic_rule<kAdd>("Add")},
            arithmetic_layer<kAdd>()));
  t.add(row(kSub, 2, binary<sub_tt>, python_infix<kMinus>, {arithmetic_rule<kSub>("Sub")},
            arithmetic_layer<kSub>()));
  t.add(row(kMul, 2, binary<mul_tt>, python_infix<kTimes>, {arithmetic_rule<kMul>("Mul")},
            arithmetic_layer<kMul>()));
  t.add(row(kDiv, 2, binary<div_tt>, python_infix<kOver>, {arithmetic_rule<kDiv>("Div")},
            arithmetic_layer<kDiv>()));
  t.add(row("maximum", 2, binary<maximum>, nullptr,
            {{.op_type = "Max", .translate = onnx_extremum<true>}}));
  t.add(row("minimum", 2, binary<minimum>, nullptr,
            {{.op_type = "Min", .translate = onnx_extremum<false>}}));
  t.add(row("add_scalar", 1, with_scalar<add_ts>, python_scalar<kPlus>));
  t.add(row("sub_scalar", 1, with_scalar<sub_ts>, python_scalar<kMinus>));
  t.add(row("mul_scalar", 1, with_scalar<mul_ts>, python_scalar<kTimes>));
  t.add(row("div_scalar", 1, with_scalar<div_ts>, python_scalar<kOver>));
  t.add(row(kNeg, 1, unary<neg>, python_neg,
            {{.op_type = "Neg", .translate = rows::onnx_unary<kNeg>, .fold = fold_neg}},
            {{.name = kNeg}}));
  OpSchema pow_row = row("pow", 1, run_pow, python_pow,
                         {{.op_type = "Pow", .translate = onnx_pow, .fold = fold_arithmetic}},
                         {{.name = "pow", .build = layer_pow}});
  pow_row.autocast.cuda = AutocastPolicy::fp32;  // CUDA's fp32 list; the CPU's runs it as given
  t.add(std::move(pow_row));
}

}  // namespace ckpt
