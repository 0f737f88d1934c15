// Rows of the unary ops (unary.cpp).
#include <cmath>

#include "engine/ops/schema/onnx_support.hpp"
#include "engine/ops/schema/row_helpers.hpp"
#include "engine/ops/unary.hpp"

namespace ckpt {

namespace {

using rows::elementwise_cost;
using rows::unary;

constexpr char kRelu[] = "relu", kSigmoid[] = "sigmoid", kTanh[] = "tanh", kExp[] = "exp",
               kLog[] = "log", kSqrt[] = "sqrt", kErf[] = "erf", kSin[] = "sin", kCos[] = "cos";

TensorList run_clamp(const OpCall& n, const TensorList& x) {
  std::optional<double> lo, hi;
  if (has_attr(n, "min")) lo = attr_double(n, "min");
  if (has_attr(n, "max")) hi = attr_double(n, "max");
  return {clamp(x[0], lo, hi)};
}
TensorList run_hardtanh(const OpCall& n, const TensorList& x) {
  return {hardtanh(x[0], attr_double(n, "min", -1.0), attr_double(n, "max", 1.0))};
}

bool fold_sqrt(OnnxNode& n) {
  if (!onnx_rules::all_inputs_constant(n)) return false;
  return n.fold_to(
      onnx_rules::fold_unary(n.input(0, "first").probe, [](double v) { return std::sqrt(v); }));
}

// ReLU6 and Hardtanh export as Clip with both bounds.
void onnx_clip(OnnxNode& n) {
  Attributes a;
  if (n.has_input(1)) a["min"] = n.constant_input(1, "min").item();
  if (n.has_input(2)) a["max"] = n.constant_input(2, "max").item();
  const OnnxValue& x = n.input(0, "first");
  if (a.empty()) return n.alias(n.y(), x);
  n.define(n.y(), n.emit_op(a.size() == 2 ? "hardtanh" : "clamp", {x.graph}, std::move(a), n.y()));
}

OpSchema simple(const char* type, TensorList (*kernel)(const OpCall&, const TensorList&),
                std::vector<OnnxRule> onnx = {}) {
  return OpSchema{.type = type, .kernel = kernel, .cost = elementwise_cost, .onnx = onnx};
}

}  // namespace

void register_unary_ops(OpTable& t) {
  t.add(simple(kRelu, unary<relu>, {{.op_type = "Relu", .translate = rows::onnx_unary<kRelu>}}));
  t.add(simple(kSigmoid, unary<sigmoid>,
               {{.op_type = "Sigmoid", .translate = rows::onnx_unary<kSigmoid>}}));
  t.add(simple(kTanh, unary<tanh>, {{.op_type = "Tanh", .translate = rows::onnx_unary<kTanh>}}));
  t.add(simple(kExp, unary<exp>, {{.op_type = "Exp", .translate = rows::onnx_unary<kExp>}}));
  t.add(simple(kLog, unary<log>, {{.op_type = "Log", .translate = rows::onnx_unary<kLog>}}));
  t.add(simple(kSqrt, unary<sqrt>,
               {{.op_type = "Sqrt", .translate = rows::onnx_unary<kSqrt>, .fold = fold_sqrt}}));
  t.add(simple(kErf, unary<erf>, {{.op_type = "Erf", .translate = rows::onnx_unary<kErf>}}));
  t.add(simple(kSin, unary<sin>, {{.op_type = "Sin", .translate = rows::onnx_unary<kSin>}}));
  t.add(simple(kCos, unary<cos>, {{.op_type = "Cos", .translate = rows::onnx_unary<kCos>}}));
  t.add(simple("gelu", unary<gelu>));  // ONNX exports it decomposed through Erf
  t.add(simple("clamp", run_clamp));
  t.add(simple("hardtanh", run_hardtanh, {{.op_type = "Clip", .translate = onnx_clip}}));
}

}  // namespace ckpt
