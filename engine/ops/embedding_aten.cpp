// ATen rule of embedding (docs/capture_format.md): the engine's inputs are (weight, indices),
// as ATen's are; token ids that are a model input are drawn in [0, rows).
#include "engine/ops/schema/op_schema.hpp"

namespace ckpt {

namespace {

void aten_embedding(AtenNode& n) {
  const std::string weight = n.tensor("weight"), indices = n.tensor("indices");
  if (n.integer_or("padding_idx", -1) != -1) n.fail("padding_idx is not supported");
  if (n.flag("sparse", false)) n.fail("sparse gradients are not supported");
  n.note_index_range(indices, n.probe(weight).size(0));
  n.emit1("embedding", {weight, indices});
}

}  // namespace

void register_embedding_aten(OpTable& t) {
  t.add_aten("embedding", {{"aten::embedding", aten_embedding}});
}

}  // namespace ckpt
