// ATen rules of casts (docs/capture_format.md): _to_copy to another dtype is the engine's cast;
// to the same dtype (a device move the capture stands in for) it is the value itself.
#include "engine/ops/schema/op_schema.hpp"

namespace ckpt {

namespace {

void aten_to_copy(AtenNode& n) {
  const std::string x = n.tensor("self");
  const DType to = n.output_dtype(0);
  if (to == n.probe(x).dtype()) return n.define(0, x);
  n.emit1("cast", {x}, {{"to", std::string(dtype_name(to))}});
}

}  // namespace

void register_mask_aten(OpTable& t);  // mask_aten.cpp

void register_logical_aten(OpTable& t) {
  register_mask_aten(t);
  t.add_aten("cast", {{"aten::_to_copy", aten_to_copy}});
}

}  // namespace ckpt
