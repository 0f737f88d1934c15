// ATen rules of the arithmetic (docs/capture_format.md): the .Tensor overloads take a tensor or a
// Python number as `other` (PyTorch wraps the number), the .Scalar ones a number; alpha scales
// `other` as add and sub do.
#include "engine/ops/schema/op_schema.hpp"

namespace ckpt {

namespace {

template <const char* Type>
void arithmetic(AtenNode& n) {
  std::string x = n.tensor("self");
  const double alpha = n.number_or("alpha", 1);
  if (!n.is_tensor("other")) {
    // An integer tensor and a float number (MViT's arange(...) * 0.5): PyTorch computes in the
    // promoted dtype; here a cast first (a transient copy PyTorch's loop does not make).
    const DType to = n.output_dtype(0);
    if (is_floating(to) && n.probe(x).dtype() != to)
      x = n.emit_op("cast", {x}, {{"to", std::string(dtype_name(to))}}, {-1}).at(0);
    n.emit1(std::string(Type) + "_scalar", {x}, {{"value", n.number("other") * alpha}});
    return;
  }
  std::string other = n.tensor("other");
  if (alpha != 1.0) other = n.emit_op("mul_scalar", {other}, {{"value", alpha}}, {-1}).at(0);
  n.emit1(Type, {x, other});
}

// x * noise, where noise is the last step of dropout's CPU decomposition in PyTorch 1.13
// (empty_like, bernoulli_, div_; dropout_aten.cpp): the engine's dropout, which saves that noise.
void aten_mul(AtenNode& n) {
  if (n.is_tensor("other"))
    for (const char* arg : {"other", "self"}) {
      const Attributes* noise = n.pending(n.tensor(arg));
      if (!noise || !noise->count("scaled")) continue;
      const std::string x = n.tensor(arg == std::string("other") ? "self" : "other");
      const double keep = std::get<double>(noise->at("keep"));
      n.emit1("dropout", {x}, {{"p", 1.0 - keep}, {"training", std::int64_t{1}}});
      return;
    }
  constexpr static char kMul[] = "mul";
  arithmetic<kMul>(n);
}

// other - alpha * self.
void aten_rsub(AtenNode& n) {
  const std::string x = n.tensor("self");
  const std::string scaled =
      n.emit_op("mul_scalar", {x}, {{"value", -n.number_or("alpha", 1)}}, {-1}).at(0);
  if (n.is_tensor("other")) {
    n.emit1("add", {scaled, n.tensor("other")});
    return;
  }
  n.emit1("add_scalar", {scaled}, {{"value", n.number("other")}});
}

void aten_pow(AtenNode& n) {
  if (n.is_tensor("exponent")) n.fail("a tensor exponent is not supported (a number is)");
  n.emit1("pow", {n.tensor("self")}, {{"exponent", n.number("exponent")}});
}

constexpr char kAdd[] = "add", kSub[] = "sub", kDiv[] = "div", kNeg[] = "neg",
               kMaximum[] = "maximum", kMinimum[] = "minimum";

void aten_binary_max(AtenNode& n) {
  n.emit1(kMaximum, {n.tensor("self"), n.tensor("other")});
}
void aten_binary_min(AtenNode& n) {
  n.emit1(kMinimum, {n.tensor("self"), n.tensor("other")});
}

}  // namespace

void register_elementwise_aten(OpTable& t) {
  t.add_aten(kAdd, {{"aten::add", arithmetic<kAdd>}});
  t.add_aten(kSub, {{"aten::sub", arithmetic<kSub>}, {"aten::rsub", aten_rsub}});
  t.add_aten("mul", {{"aten::mul", aten_mul}});
  t.add_aten(kDiv, {{"aten::div", arithmetic<kDiv>}});
  t.add_aten(kNeg, {{"aten::neg", aten_unary<kNeg>}});
  t.add_aten("pow", {{"aten::pow", aten_pow}});
  t.add_aten(kMaximum, {{"aten::maximum", aten_binary_max}});
  t.add_aten(kMinimum, {{"aten::minimum", aten_binary_min}});
}

}  // namespace ckpt
