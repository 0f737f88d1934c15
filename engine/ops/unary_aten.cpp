// ATen rules of the unary ops and activations (docs/capture_format.md): one engine op each,
// which saves what the ATen op's backward saves.
#include <limits>

#include "engine/ops/schema/op_schema.hpp"

namespace ckpt {

namespace {

constexpr char kRelu[] = "relu", kSigmoid[] = "sigmoid", kTanh[] = "tanh", kExp[] = "exp",
               kLog[] = "log", kSqrt[] = "sqrt", kRsqrt[] = "rsqrt", kErf[] = "erf", kSin[] = "sin",
               kCos[] = "cos", kAbs[] = "abs", kSilu[] = "silu", kMish[] = "mish",
               kHardswish[] = "hardswish", kHardsigmoid[] = "hardsigmoid", kSoftplus[] = "softplus";

void aten_gelu(AtenNode& n) {
  n.emit1("gelu", {n.tensor("self")},
          {{"approximate", n.has("approximate") ? n.text("approximate") : "none"}});
}
void aten_hardtanh(AtenNode& n) {
  n.emit1("hardtanh", {n.tensor("self")},
          {{"min", n.number_or("min_val", -1)}, {"max", n.number_or("max_val", 1)}});
}
// clamp and clamp_min with numbers (F.normalize's norm.clamp_min(eps), Swin V2's logit scale):
// hardtanh's bounds, open where not given. ClampBackward1 and ClampMinBackward0 save the input
// as HardtanhBackward0 does; at a value equal to a bound clamp passes the gradient, hardtanh not.
void aten_clamp(AtenNode& n) {
  if ((n.has("min") && n.is_tensor("min")) || (n.has("max") && n.is_tensor("max")))
    n.fail("clamp with tensor bounds is not supported (numbers are)");
  constexpr double kInf = std::numeric_limits<double>::infinity();
  n.emit1("hardtanh", {n.tensor("self")},
          {{"min", n.number_or("min", -kInf)}, {"max", n.number_or("max", kInf)}});
}
void aten_leaky_relu(AtenNode& n) {
  n.emit1("leaky_relu", {n.tensor("self")}, {{"slope", n.number_or("negative_slope", 0.01)}});
}
void aten_softplus(AtenNode& n) {
  if (n.number_or("beta", 1) != 1 || n.number_or("threshold", 20) != 20)
    n.fail("softplus with a beta or threshold of its own is not supported");
  n.emit1(kSoftplus, {n.tensor("self")});
}
void aten_elu(AtenNode& n) {
  if (n.number_or("scale", 1) != 1 || n.number_or("input_scale", 1) != 1)
    n.fail("elu with a scale (selu, celu) is not supported");
  n.emit1("elu", {n.tensor("self")}, {{"alpha", n.number_or("alpha", 1)}});
}

// silu_, hardswish_, hardsigmoid_ and hardtanh_ (nn.SiLU(inplace=True), F.relu6(inplace=True))
// save a clone of their input in PyTorch 1.13 (CloneBackward0), since their backward needs it:
// the same bytes as the out-of-place op saving its input, which the engine's op is.
template <void (*Rule)(AtenNode&)>
void out_of_place(AtenNode& n) {
  Rule(n);
}

}  // namespace

namespace {

// F.glu(x, dim) (nn.GLU: dim -1).
void aten_glu(AtenNode& n) {
  n.emit1("glu", {n.tensor("self")}, {{"dim", n.integer_or("dim", -1)}});
}

}  // namespace

void register_unary_aten(OpTable& t) {
  t.add_aten(kRelu, {{"aten::relu", aten_unary<kRelu>}});
  t.add_aten(kSigmoid, {{"aten::sigmoid", aten_unary<kSigmoid>}});
  t.add_aten(kTanh, {{"aten::tanh", aten_unary<kTanh>}});
  t.add_aten(kExp, {{"aten::exp", aten_unary<kExp>}});
  t.add_aten(kLog, {{"aten::log", aten_unary<kLog>}});
  t.add_aten(kSqrt, {{"aten::sqrt", aten_unary<kSqrt>}});
  t.add_aten(kRsqrt, {{"aten::rsqrt", aten_unary<kRsqrt>}});
  t.add_aten(kErf, {{"aten::erf", aten_unary<kErf>}});
  t.add_aten(kSin, {{"aten::sin", aten_unary<kSin>}});
  t.add_aten(kCos, {{"aten::cos", aten_unary<kCos>}});
  t.add_aten(kAbs, {{"aten::abs", aten_unary<kAbs>}});
  t.add_aten(kSilu,
             {{"aten::silu", aten_unary<kSilu>}, {"aten::silu_", out_of_place<aten_unary<kSilu>>}});
  t.add_aten(kMish, {{"aten::mish", aten_unary<kMish>}});
  t.add_aten("glu", {{"aten::glu", aten_glu}});
  t.add_aten(kHardswish, {{"aten::hardswish", aten_unary<kHardswish>},
                          {"aten::hardswish_", out_of_place<aten_unary<kHardswish>>}});
  t.add_aten(kHardsigmoid, {{"aten::hardsigmoid", aten_unary<kHardsigmoid>},
                            {"aten::hardsigmoid_", out_of_place<aten_unary<kHardsigmoid>>}});
  t.add_aten(kSoftplus, {{"aten::softplus", aten_softplus}});
  t.add_aten("gelu", {{"aten::gelu", aten_gelu}});
  t.add_aten("hardtanh", {{"aten::hardtanh", aten_hardtanh},
                          {"aten::hardtanh_", out_of_place<aten_hardtanh>},
                          {"aten::clamp", aten_clamp},
                          {"aten::clamp_min", aten_clamp}});
  t.add_aten("leaky_relu", {{"aten::leaky_relu", aten_leaky_relu}});
  t.add_aten("elu", {{"aten::elu", aten_elu}});
}

}  // namespace ckpt
