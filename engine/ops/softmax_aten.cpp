// ATen rules of softmax and log_softmax (docs/capture_format.md).
#include "engine/ops/schema/op_schema.hpp"

namespace ckpt {

namespace {

template <const char* Type>
void aten_softmax(AtenNode& n) {
  if (n.flag("half_to_float", false)) n.fail("half_to_float is not supported");
  n.emit1(Type, {n.tensor("self")}, {{"dim", n.integer("dim")}});
}

constexpr char kSoftmax[] = "softmax", kLogSoftmax[] = "log_softmax";

}  // namespace

void register_softmax_aten(OpTable& t) {
  t.add_aten(kSoftmax, {{"aten::_softmax", aten_softmax<kSoftmax>}});
  t.add_aten(kLogSoftmax, {{"aten::_log_softmax", aten_softmax<kLogSoftmax>}});
}

}  // namespace ckpt
