// ATen rules of dropout (docs/capture_format.md). PyTorch 2.x (and 1.13 on CUDA) dispatches
// native_dropout; PyTorch 1.13 on the CPU decomposes F.dropout into empty_like, bernoulli_(1 - p),
// div_(1 - p) and mul: the first three make the noise (no engine op: pending values), and the
// mul (elementwise_aten.cpp) becomes the engine's dropout, which saves that noise.
#include "engine/ops/schema/op_schema.hpp"

namespace ckpt {

namespace {

void aten_native_dropout(AtenNode& n) {
  n.emit1("dropout", {n.tensor("input")},
          {{"p", n.number("p")}, {"training", std::int64_t{n.flag("train", true) ? 1 : 0}}});
}
void aten_empty_like(AtenNode& n) {
  n.define_pending(0, {{"like", n.tensor("self")}});
}
void aten_bernoulli_(AtenNode& n) {
  const Attributes* noise = n.pending(n.tensor("self"));
  if (!noise || !noise->count("like") || n.is_tensor("p"))
    n.fail("bernoulli_ is supported only as dropout's noise (on a fresh empty_like)");
  Attributes next = *noise;
  next["keep"] = n.number("p");
  n.define_pending(0, next);
}
void aten_div_(AtenNode& n) {
  const Attributes* noise = n.pending(n.tensor("self"));
  if (!noise || !noise->count("keep") || n.is_tensor("other"))
    n.fail("in-place division is supported only as dropout's noise scaling");
  Attributes next = *noise;
  next["scaled"] = n.number("other");
  n.define_pending(0, next);
}

}  // namespace

void register_dropout_aten(OpTable& t) {
  t.add_aten("dropout", {{"aten::native_dropout", aten_native_dropout},
                         {"aten::empty_like", aten_empty_like},
                         {"aten::bernoulli_", aten_bernoulli_},
                         {"aten::div_", aten_div_}});
}

}  // namespace ckpt
