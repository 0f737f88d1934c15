#include "engine/ops/activation_patterns.hpp"

#include <cmath>
#include <numbers>

namespace ckpt::activation_patterns {

namespace {

using namespace pattern;

// The exporter writes its constants in the model's float type: 1/sqrt(2) is 0.70710677 in
// float32.
P near(double v) {
  return number(v, 1e-6);
}

bool emit_gelu(OnnxFusion& f) {
  f.emit_op("gelu", {f.operand("x")}, {});
  return true;
}
bool emit_gelu_tanh(OnnxFusion& f) {
  f.emit_op("gelu", {f.operand("x")}, {{"approximate", std::string("tanh")}});
  return true;
}
template <const char* Type>
bool emit_unary(OnnxFusion& f) {
  f.emit_op(Type, {f.operand("x")}, {});
  return true;
}
constexpr char kSilu[] = "silu", kMish[] = "mish", kHardswish[] = "hardswish", kRsqrt[] = "rsqrt";

// HardSigmoid with PyTorch's alpha 1/6 and beta 1/2 (the exporter's Hardswish below opset 14).
bool emit_hardswish_of_hardsigmoid(OnnxFusion& f) {
  const AttrValue* alpha = f.attr("hardsigmoid", "alpha");
  const AttrValue* beta = f.attr("hardsigmoid", "beta");
  const double a = alpha && std::holds_alternative<double>(*alpha) ? std::get<double>(*alpha) : 0.2;
  const double b = beta && std::holds_alternative<double>(*beta) ? std::get<double>(*beta) : 0.5;
  if (std::abs(a - 1.0 / 6) > 1e-6 || std::abs(b - 0.5) > 1e-6) return false;
  return emit_unary<kHardswish>(f);
}

}  // namespace

// Only the exporter's own spellings (torch.onnx's symbolic functions, opsets 9 to 19), in
// either operand order: a module that writes the same arithmetic in other groupings (nanoGPT's
// new_gelu, x * F.relu6(x + 3) / 6) runs it decomposed in PyTorch too, and keeps for backward
// what the decomposed graph keeps.
std::vector<OnnxPattern> gelu() {
  const P x = any("x");
  // (x · (erf(x / sqrt(2)) + 1)) · 0.5
  const P erf_form = commutative(
      "Mul",
      commutative(
          "Mul", x,
          commutative("Add", op("Erf", {op("Div", {x, near(std::numbers::sqrt2)})}), number(1))),
      number(0.5));
  // 0.5 · (x · (1 + tanh(sqrt(2/pi) · (x + 0.044715 · (x · (x · x)))))), approximate='tanh'
  const P cube = commutative("Mul", x, commutative("Mul", x, x));
  const P inner = commutative("Mul", near(std::numbers::sqrt2 * std::numbers::inv_sqrtpi),
                              commutative("Add", x, commutative("Mul", near(0.044715), cube)));
  const P tanh_form =
      commutative("Mul", number(0.5),
                  commutative("Mul", x, commutative("Add", number(1), op("Tanh", {inner}))));
  return {{.name = "GELU (Erf form)", .root = erf_form, .module_class = "GELU", .fuse = emit_gelu},
          {.name = "GELU (Tanh form)",
           .root = tanh_form,
           .module_class = "GELU",
           .fuse = emit_gelu_tanh}};
}

std::vector<OnnxPattern> silu() {
  const P x = any("x");
  return {{.name = "SiLU (x * Sigmoid(x))",
           .root = commutative("Mul", x, op("Sigmoid", {x})),
           .module_class = "SiLU",
           .fuse = emit_unary<kSilu>}};
}

std::vector<OnnxPattern> mish() {
  const P x = any("x");
  return {{.name = "Mish (x * Tanh(Softplus(x)))",
           .root = commutative("Mul", x, op("Tanh", {op("Softplus", {x})})),
           .module_class = "Mish",
           .fuse = emit_unary<kMish>}};
}

// Hardswish below opset 14 (from 14 it is an ONNX op). Hardsigmoid is an ONNX op at every
// opset the importer reads: its row translates it, no pattern needed.
std::vector<OnnxPattern> hardswish() {
  const P x = any("x");
  return {{.name = "Hardswish (x * HardSigmoid(x))",
           .root = commutative("Mul", x, as("hardsigmoid", op("HardSigmoid", {x}))),
           .until = 13,
           .module_class = "Hardswish",
           .fuse = emit_hardswish_of_hardsigmoid}};
}

// A value known at load time (a scale computed from a shape) stays to be folded there.
bool emit_rsqrt(OnnxFusion& f) {
  const OnnxValue* x = f.value("x");
  if (!x || x->constant) return false;
  return emit_unary<kRsqrt>(f);
}

// torch.rsqrt: 1.13's exporter writes Div(1, Sqrt(x)), the torch.export-based one (PyTorch 2.x)
// Reciprocal(Sqrt(x)). Either keeps the square root and the quotient where RsqrtBackward0 keeps
// only its result (RMSNorm: a [batch, sequence, 1] tensor more per norm).
std::vector<OnnxPattern> rsqrt() {
  const P x = any("x");
  return {{.name = "rsqrt (Div(1, Sqrt(x)))",
           .root = op("Div", {number(1), op("Sqrt", {x})}),
           .fuse = emit_rsqrt},
          {.name = "rsqrt (Reciprocal(Sqrt(x)))",
           .root = op("Reciprocal", {op("Sqrt", {x})}),
           .fuse = emit_rsqrt}};
}

namespace {

// The Split must halve its axis: no sizes (equal halves), or two equal constant ones.
bool emit_glu(OnnxFusion& f) {
  if (const OnnxValue* sizes = f.value("sizes")) {
    if (!sizes->constant || sizes->probe.numel() != 2) return false;
    const std::vector<double> v = sizes->probe.to_vector();
    if (v[0] != v[1]) return false;
  }
  if (const AttrValue* split = f.attr("split", "split")) {
    const auto* sizes = std::get_if<std::vector<std::int64_t>>(split);
    if (!sizes || sizes->size() != 2 || (*sizes)[0] != (*sizes)[1]) return false;
  }
  if (f.attr_i("split", "num_outputs", 2) != 2) return false;
  f.emit_op("glu", {f.operand("x")}, {{"dim", f.attr_i("split", "axis", 0)}});
  return true;
}

}  // namespace

// F.glu(x, dim): 1.13's exporter writes Split(x, axis=dim) into two outputs, then
// Mul(first, Sigmoid(second)). Decomposed, Sigmoid keeps its result and Mul both its operands:
// 1.5 times the input GluBackward0 keeps.
std::vector<OnnxPattern> glu() {
  const P x = any("x");
  const auto half = [&](int k) {
    return output("Split", k, 2, "split", {x, optional_constant("sizes")});
  };
  return {{.name = "GLU (Split, Sigmoid, Mul)",
           .root = commutative("Mul", half(0), op("Sigmoid", {half(1)})),
           .module_class = "GLU",
           .fuse = emit_glu}};
}

}  // namespace ckpt::activation_patterns
