// Rows of embedding (embedding.cpp). ONNX's Gather on a 2-D table becomes one: see
// shape_ops_rows.cpp, where Gather's rule lives.
#include "engine/ops/embedding.hpp"
#include "engine/ops/schema/row_helpers.hpp"

namespace ckpt {

namespace {
TensorList run_embedding(const OpCall&, const TensorList& x) {
  return {embedding(x[0], x[1])};
}
}  // namespace

void register_embedding_ops(OpTable& t) {
  t.add({.type = "embedding",
         .min_inputs = 2,
         .max_inputs = 2,
         .kernel = run_embedding,
         .cost = rows::elementwise_cost});
}

}  // namespace ckpt
