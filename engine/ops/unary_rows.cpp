// Rows of the unary ops (unary.cpp).
#include <cmath>

#include "engine/ops/activation.hpp"
#include "engine/ops/activation_patterns.hpp"
#include "engine/ops/schema/onnx_support.hpp"
#include "engine/ops/schema/row_helpers.hpp"
#include "engine/ops/unary.hpp"

namespace ckpt {

namespace {

using rows::arg;
using rows::elementwise_cost;
using rows::kF;
using rows::kTorch;
using rows::number;
using rows::python_function;
using rows::python_nn;
using rows::unary;

constexpr char kRelu[] = "relu", kSigmoid[] = "sigmoid", kTanh[] = "tanh", kExp[] = "exp",
               kLog[] = "log", kSqrt[] = "sqrt", kRsqrt[] = "rsqrt", kErf[] = "erf", kSin[] = "sin",
               kCos[] = "cos", kHardswish[] = "hardswish", kSoftplus[] = "softplus", kAbs[] = "abs",
               kSign[] = "sign", kGelu[] = "gelu";
constexpr char kReLUModule[] = "ReLU", kGELUModule[] = "GELU", kSigmoidModule[] = "Sigmoid",
               kTanhModule[] = "Tanh", kHardswishModule[] = "Hardswish",
               kHardsigmoidModule[] = "Hardsigmoid", kSoftplusModule[] = "Softplus";

TensorList run_clamp(const OpCall& n, const TensorList& x) {
  std::optional<double> lo, hi;
  if (has_attr(n, "min")) lo = attr_double(n, "min");
  if (has_attr(n, "max")) hi = attr_double(n, "max");
  return {clamp(x[0], lo, hi)};
}
TensorList run_hardtanh(const OpCall& n, const TensorList& x) {
  return {hardtanh(x[0], attr_double(n, "min", -1.0), attr_double(n, "max", 1.0))};
}

TensorList run_leaky_relu(const OpCall& n, const TensorList& x) {
  return {leaky_relu(x[0], attr_double(n, "slope", 0.01))};
}
TensorList run_elu(const OpCall& n, const TensorList& x) {
  return {elu(x[0], attr_double(n, "alpha", 1.0))};
}
void onnx_leaky_relu(OnnxNode& n) {
  n.define(n.y(), n.emit_op("leaky_relu", {n.input(0, "first").graph},
                            {{"slope", n.attr_f("alpha", 0.01)}}, n.y()));
}
void onnx_elu(OnnxNode& n) {
  n.define(n.y(), n.emit_op("elu", {n.input(0, "first").graph}, {{"alpha", n.attr_f("alpha", 1.0)}},
                            n.y()));
}
std::string python_leaky_relu(const OpCall& n, const std::vector<std::string>& a, const Shape&) {
  return "F.leaky_relu(" + a[0] + ", " + std::to_string(attr_double(n, "slope", 0.01)) + ")";
}
std::string python_elu(const OpCall& n, const std::vector<std::string>& a, const Shape&) {
  return "F.elu(" + a[0] + ", " + std::to_string(attr_double(n, "alpha", 1.0)) + ")";
}
std::string python_softplus(const OpCall&, const std::vector<std::string>& a, const Shape&) {
  return "F.softplus(" + a[0] + ")";
}
std::string python_abs(const OpCall&, const std::vector<std::string>& a, const Shape&) {
  return "torch.abs(" + a[0] + ")";
}

// ONNX HardSigmoid is alpha·x + beta clipped to [0, 1]; PyTorch's is alpha 1/6, beta 1/2.
void onnx_hardsigmoid(OnnxNode& n) {
  const double alpha = n.attr_f("alpha", 0.2), beta = n.attr_f("beta", 0.5);
  if (std::abs(alpha - 1.0 / 6) > 1e-6 || std::abs(beta - 0.5) > 1e-6)
    n.fail("HardSigmoid with alpha " + std::to_string(alpha) + " and beta " + std::to_string(beta) +
           " is not supported (only PyTorch's 1/6 and 1/2)");
  n.define(n.y(), n.emit_op("hardsigmoid", {n.input(0, "first").graph}, {}, n.y()));
}

std::string python_hardtanh(const OpCall& op, const std::vector<std::string>& a, const Shape&) {
  return "F.hardtanh(" + arg(a, 0) + ", " + number(attr_double(op, "min", -1)) + ", " +
         number(attr_double(op, "max", 1)) + ")";
}
std::string module_hardtanh(const OpCall& op, const std::vector<Shape>&) {
  const double lo = attr_double(op, "min", -1), hi = attr_double(op, "max", 1);
  if (lo == 0 && hi == 6) return "nn.ReLU6()";
  return "nn.Hardtanh(" + number(lo) + ", " + number(hi) + ")";
}
std::string python_clamp(const OpCall& op, const std::vector<std::string>& a, const Shape&) {
  return arg(a, 0) + ".clamp(" +
         (has_attr(op, "min") ? "min=" + number(attr_double(op, "min")) : "") +
         (has_attr(op, "min") && has_attr(op, "max") ? ", " : "") +
         (has_attr(op, "max") ? "max=" + number(attr_double(op, "max")) : "") + ")";
}

// F.gelu, exact (Erf) or approximate='tanh'.
TensorList run_gelu(const OpCall& n, const TensorList& x) {
  const std::string approximate = attr_string(n, "approximate", "none");
  if (approximate == "tanh") return {gelu_tanh(x[0])};
  if (approximate != "none")
    attr_error(n, "approximate", "must be 'none' or 'tanh', got '" + approximate + "'");
  return {gelu(x[0])};
}
std::string python_gelu(const OpCall& n, const std::vector<std::string>& a, const Shape&) {
  return attr_string(n, "approximate", "none") == "tanh"
             ? "F.gelu(" + arg(a, 0) + ", approximate='tanh')"
             : "F.gelu(" + arg(a, 0) + ")";
}
std::string module_gelu(const OpCall& n, const std::vector<Shape>&) {
  return attr_string(n, "approximate", "none") == "tanh" ? "nn.GELU(approximate='tanh')"
                                                         : "nn.GELU()";
}

std::string python_hardswish(const OpCall&, const std::vector<std::string>& a, const Shape&) {
  return "F.hardswish(" + a[0] + ")";
}
std::string python_hardsigmoid(const OpCall&, const std::vector<std::string>& a, const Shape&) {
  return "F.hardsigmoid(" + a[0] + ")";
}

bool fold_sqrt(OnnxNode& n) {
  if (!onnx_rules::all_inputs_constant(n)) return false;
  return n.fold_to(
      onnx_rules::fold_unary(n.input(0, "first").probe, [](double v) { return std::sqrt(v); }));
}

// Clip with both bounds is hardtanh, with one clamp.
void onnx_clip(OnnxNode& n) {
  Attributes a;
  if (n.has_input(1)) a["min"] = n.constant_input(1, "min").item();
  if (n.has_input(2)) a["max"] = n.constant_input(2, "max").item();
  const OnnxValue& x = n.input(0, "first");
  if (a.empty()) return n.alias(n.y(), x);
  n.define(n.y(), n.emit_op(a.size() == 2 ? "hardtanh" : "clamp", {x.graph}, std::move(a), n.y()));
}

// The native layers relu6 ({"type": "relu6"}), hardtanh ("min", "max") and clamp ("min"
// and/or "max").
ValueNames layer_relu6(NativeLayerCall& c) {
  return c.emit_op("hardtanh", c.one(), {{"min", 0.0}, {"max", 6.0}});
}
ValueNames layer_hardtanh(NativeLayerCall& c) {
  return c.emit_op("hardtanh", c.one(),
                   {{"min", c.get_double("min", -1.0)}, {"max", c.get_double("max", 1.0)}});
}
ValueNames layer_clamp(NativeLayerCall& c) {
  Attributes a;
  if (c.has("min")) a["min"] = c.get_double("min", 0);
  if (c.has("max")) a["max"] = c.get_double("max", 0);
  if (a.empty()) c.fail("clamp needs \"min\" or \"max\"");
  return c.emit_op("clamp", c.one(), std::move(a));
}

OpSchema simple(const char* type, TensorList (*kernel)(const OpCall&, const TensorList&),
                std::vector<OnnxRule> onnx = {}, PythonExpression python = nullptr,
                PythonModule python_module = nullptr, const char* module_class = nullptr) {
  return OpSchema{.type = type,
                  .kernel = kernel,
                  .cost = elementwise_cost,
                  .python = python,
                  .python_module = python_module,
                  .onnx = onnx,
                  .native_layers = {{.name = type, .module_class = module_class}}};
}

// torch.exp(x) and the like: the same name in torch and in the engine.
template <const char* Type>
OpSchema torch_unary(TensorList (*kernel)(const OpCall&, const TensorList&), OnnxRule onnx) {
  return simple(Type, kernel, {std::move(onnx)}, python_function<kTorch, Type>);
}
// CUDA's autocast computes exp, log, softplus (and pow) in float32; the CPU's runs them as given.
OpSchema in_fp32_on_cuda(OpSchema row) {
  row.autocast.cuda = AutocastPolicy::fp32;
  return row;
}
void add_torch_unary(OpTable& t) {
  t.add(in_fp32_on_cuda(
      torch_unary<kExp>(unary<exp>, {.op_type = "Exp", .translate = rows::onnx_unary<kExp>})));
  t.add(in_fp32_on_cuda(
      torch_unary<kLog>(unary<log>, {.op_type = "Log", .translate = rows::onnx_unary<kLog>})));
  t.add(torch_unary<kSqrt>(
      unary<sqrt>, {.op_type = "Sqrt", .translate = rows::onnx_unary<kSqrt>, .fold = fold_sqrt}));
  // RMSNorm's normaliser; CUDA's autocast runs it in float32 (its fp32 list), the CPU's as given.
  // ONNX has no Rsqrt: the exporter writes Reciprocal(Sqrt(x)), left to the importer's fusions.
  t.add(in_fp32_on_cuda(simple(kRsqrt, unary<rsqrt>, {}, python_function<kTorch, kRsqrt>)));
  t.add(torch_unary<kErf>(unary<erf>, {.op_type = "Erf", .translate = rows::onnx_unary<kErf>}));
  t.add(torch_unary<kSin>(unary<sin>, {.op_type = "Sin", .translate = rows::onnx_unary<kSin>}));
  t.add(torch_unary<kCos>(unary<cos>, {.op_type = "Cos", .translate = rows::onnx_unary<kCos>}));
}

}  // namespace

void register_unary_ops(OpTable& t) {
  t.add(simple(kRelu, unary<relu>,
               {{.op_type = "Relu", .translate = rows::onnx_unary<kRelu>, .module_class = "ReLU"}},
               python_function<kF, kRelu>, python_nn<kReLUModule>, kReLUModule));
  t.add(simple(
      kSigmoid, unary<sigmoid>,
      {{.op_type = "Sigmoid", .translate = rows::onnx_unary<kSigmoid>, .module_class = "Sigmoid"}},
      python_function<kTorch, kSigmoid>, python_nn<kSigmoidModule>, kSigmoidModule));
  t.add(simple(kTanh, unary<tanh>,
               {{.op_type = "Tanh", .translate = rows::onnx_unary<kTanh>, .module_class = "Tanh"}},
               python_function<kTorch, kTanh>, python_nn<kTanhModule>, kTanhModule));
  add_torch_unary(t);
  // ONNX has no Gelu op before opset 20: the exporter writes it through Erf (or Tanh), which
  // the importer fuses back.
  OpSchema gelu_row = simple(kGelu, run_gelu, {}, python_gelu, module_gelu, kGELUModule);
  gelu_row.onnx_patterns = activation_patterns::gelu();
  t.add(std::move(gelu_row));
  OpSchema clamp_row = simple("clamp", run_clamp, {}, python_clamp);
  clamp_row.native_layers = {{.name = "clamp", .build = layer_clamp}};
  t.add(std::move(clamp_row));
  t.add({.type = kHardswish,
         .kernel = unary<hardswish>,
         .cost = elementwise_cost,
         .python = python_hardswish,
         .python_module = python_nn<kHardswishModule>,
         .onnx = {{.op_type = "HardSwish", .since = 14, .translate = rows::onnx_unary<kHardswish>}},
         .onnx_patterns = activation_patterns::hardswish(),
         .native_layers = {{.name = "hardswish", .module_class = kHardswishModule}}});
  t.add({.type = "hardsigmoid",
         .kernel = unary<hardsigmoid>,
         .cost = elementwise_cost,
         .python = python_hardsigmoid,
         .python_module = python_nn<kHardsigmoidModule>,
         .onnx = {{.op_type = "HardSigmoid", .since = 6, .translate = onnx_hardsigmoid}},
         .native_layers = {{.name = "hardsigmoid", .module_class = kHardsigmoidModule}}});
  t.add({.type = "leaky_relu",
         .kernel = run_leaky_relu,
         .cost = elementwise_cost,
         .python = python_leaky_relu,
         .onnx = {{.op_type = "LeakyRelu", .since = 6, .translate = onnx_leaky_relu}}});
  t.add({.type = "elu",
         .kernel = run_elu,
         .cost = elementwise_cost,
         .python = python_elu,
         .onnx = {{.op_type = "Elu", .since = 6, .translate = onnx_elu}}});
  // ONNX Softplus is log(1 + exp(x)) without PyTorch's threshold: the two differ above 20 by
  // under exp(-20) relative.
  t.add({.type = kSoftplus,
         .kernel = unary<softplus>,
         .cost = elementwise_cost,
         .python = python_softplus,
         .python_module = python_nn<kSoftplusModule>,
         .onnx = {{.op_type = "Softplus", .translate = rows::onnx_unary<kSoftplus>}},
         .native_layers = {{.name = "softplus", .module_class = kSoftplusModule}},
         .autocast = {.cuda = AutocastPolicy::fp32}});
  t.add({.type = kAbs,
         .kernel = unary<abs>,
         .cost = elementwise_cost,
         .python = python_abs,
         .onnx = {{.op_type = "Abs", .since = 6, .translate = rows::onnx_unary<kAbs>}}});
  t.add({.type = kSign,
         .kernel = unary<sign>,
         .cost = elementwise_cost,
         .onnx = {{.op_type = "Sign", .since = 9, .translate = rows::onnx_unary<kSign>}}});
  // ReLU6 and Hardtanh export as Clip with both bounds.
  OpSchema hardtanh_row =
      simple("hardtanh", run_hardtanh,
             {{.op_type = "Clip", .translate = onnx_clip, .module_class = "ReLU6"}},
             python_hardtanh, module_hardtanh);
  hardtanh_row.native_layers = {
      {.name = "relu6", .module_class = "ReLU6", .build = layer_relu6},
      {.name = "hardtanh", .module_class = "Hardtanh", .build = layer_hardtanh}};
  t.add(std::move(hardtanh_row));
}

}  // namespace ckpt
