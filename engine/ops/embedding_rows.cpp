// Rows of embedding (embedding.cpp). ONNX's Gather on a 2-D table becomes one: see
// shape_ops_rows.cpp, where Gather's rule lives.
#include "engine/ops/embedding.hpp"
#include "engine/ops/schema/row_helpers.hpp"

namespace ckpt {

namespace {
TensorList run_embedding(const OpCall&, const TensorList& x) {
  return {embedding(x[0], x[1])};
}
// The engine's inputs are (weight, indices); F.embedding takes (indices, weight).
std::string python_embedding(const OpCall&, const std::vector<std::string>& a, const Shape&) {
  return "F.embedding(" + rows::arg(a, 1) + ", " + rows::arg(a, 0) + ")";
}
}  // namespace

void register_embedding_ops(OpTable& t) {
  t.add({.type = "embedding",
         .min_inputs = 2,
         .max_inputs = 2,
         .kernel = run_embedding,
         .cost = rows::elementwise_cost,
         .python = python_embedding});
}

}  // namespace ckpt
