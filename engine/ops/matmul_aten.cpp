// ATen rules of linear and matmul (docs/capture_format.md): nn.Linear dispatches as
// addmm(bias, x, t(W)) or mm(x, t(W)), which is the engine's linear on W itself (the transpose
// is then read by nothing and left out of the model); other products are matmul.
#include "engine/ops/schema/op_schema.hpp"

namespace ckpt {

namespace {

// x @ mat2 (+ bias), alpha and beta as addmm applies them: linear when mat2 is a transposed
// matrix and nothing is scaled, else matmul, mul_scalar and add.
void product(AtenNode& n, const std::string& x, const std::string& mat2, const std::string& bias,
             double alpha, double beta) {
  const std::string w = n.transposed_source(mat2);
  const bool plain_bias = bias.empty() || (beta == 1.0 && n.probe(bias).dim() == 1);
  if (!w.empty() && alpha == 1.0 && plain_bias) {
    std::vector<std::string> in{x, w};
    if (!bias.empty()) in.push_back(bias);
    n.emit1("linear", in);
    return;
  }
  if (bias.empty() && alpha == 1.0) {
    n.emit1("matmul", {x, mat2});
    return;
  }
  std::string y = n.emit_op("matmul", {x, mat2}, {}, {-1}).at(0);
  if (alpha != 1.0) y = n.emit_op("mul_scalar", {y}, {{"value", alpha}}, {-1}).at(0);
  std::string b = bias;
  if (beta != 1.0) b = n.emit_op("mul_scalar", {b}, {{"value", beta}}, {-1}).at(0);
  n.emit1("add", {y, b});
}

void aten_addmm(AtenNode& n) {
  product(n, n.tensor("mat1"), n.tensor("mat2"), n.tensor("self"), n.number_or("alpha", 1),
          n.number_or("beta", 1));
}
void aten_mm(AtenNode& n) {
  product(n, n.tensor("self"), n.tensor("mat2"), "", 1, 1);
}
// beta * self + alpha * batch1 @ batch2 (nn.MultiheadAttention with a float mask): the product
// saves both batches, as BaddbmmBackward0 does; the scaling and the sum save nothing.
void aten_baddbmm(AtenNode& n) {
  product(n, n.tensor("batch1"), n.tensor("batch2"), n.tensor("self"), n.number_or("alpha", 1),
          n.number_or("beta", 1));
}
void aten_bmm(AtenNode& n) {
  n.emit1("matmul", {n.tensor("self"), n.tensor("mat2")});
}

}  // namespace

// attention_aten.cpp: registered with the products, which attention is, so that the family list
// in op_schema.hpp (included everywhere) stays as it is.
void register_attention_aten(OpTable& t);

void register_matmul_aten(OpTable& t) {
  register_attention_aten(t);
  t.add_aten("linear", {{"aten::addmm", aten_addmm}});
  t.add_aten("matmul",
             {{"aten::mm", aten_mm}, {"aten::bmm", aten_bmm}, {"aten::baddbmm", aten_baddbmm}});
}

}  // namespace ckpt
