// Rows of embedding (embedding.cpp). ONNX's Gather on a 2-D table becomes one: see
// shape_ops_rows.cpp, where Gather's rule lives.
#include "engine/ops/embedding.hpp"
#include "engine/ops/schema/row_helpers.hpp"
#include "engine/tensor/init.hpp"

namespace ckpt {

namespace {
TensorList run_embedding(const OpCall&, const TensorList& x) {
  return {embedding(x[0], x[1])};
}
// The engine's inputs are (weight, indices); F.embedding takes (indices, weight).
std::string python_embedding(const OpCall&, const std::vector<std::string>& a, const Shape&) {
  return "F.embedding(" + rows::arg(a, 1) + ", " + rows::arg(a, 0) + ")";
}
// {"type": "embedding", "num", "dim"}: nn.Embedding(num, dim), weight N(0, 1), rows gathered by
// int64 indices of any shape.
ValueNames layer_embedding(NativeLayerCall& c) {
  const std::int64_t num = c.get_int("num"), dim = c.get_int("dim");
  if (num <= 0 || dim <= 0) c.fail("\"num\" and \"dim\" must be positive");
  const Shape wshape{num, dim};
  Generator& gen = c.generator();
  const ValueNames x = c.one();
  return c.emit_op(
      "embedding",
      {c.param("weight", wshape, [&] { return normal_tensor(wshape, 0.0, 1.0, gen); }), x[0]}, {});
}

}  // namespace

void register_embedding_ops(OpTable& t) {
  t.add({.type = "embedding",
         .min_inputs = 2,
         .max_inputs = 2,
         .kernel = run_embedding,
         .cost = rows::elementwise_cost,
         .python = python_embedding,
         .native_layers = {{.name = "embedding",
                            .module_class = "Embedding",
                            .parameters = true,
                            .build = layer_embedding}}});
}

}  // namespace ckpt
