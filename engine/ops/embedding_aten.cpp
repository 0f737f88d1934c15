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

// table[index] with one int64 index tensor on dim 0 of a matrix (Swin's and MaxViT's relative
// position bias, gathered by an index buffer): the rows of the table, as embedding gathers them,
// saving the indices alone as IndexBackward0 does.
void aten_index(AtenNode& n) {
  const auto indices = n.tensors("indices");
  const std::string table = n.tensor("self");
  if (indices.size() != 1 || n.probe(table).dim() != 2 || n.probe(indices[0]).dtype() != DType::i64)
    n.fail("indexing is supported only as one int64 index tensor into the rows of a matrix");
  n.emit1("embedding", {table, indices[0]});
}

}  // namespace

void register_embedding_aten(OpTable& t) {
  t.add_aten("embedding", {{"aten::embedding", aten_embedding}, {"aten::index", aten_index}});
}

}  // namespace ckpt
