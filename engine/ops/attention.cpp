#include "engine/ops/attention.hpp"

#include <stdexcept>
#include <string>

#include "engine/autograd/op_observer.hpp"
#include "engine/ops/attention_fused.hpp"
#include "engine/ops/dropout.hpp"
#include "engine/ops/elementwise.hpp"
#include "engine/ops/logical.hpp"
#include "engine/ops/matmul.hpp"
#include "engine/ops/softmax.hpp"

namespace ckpt {

namespace {

constexpr char kOp[] = "scaled_dot_product_attention";

Tensor scaled(const Tensor& x, const AttentionScale& s) {
  switch (s.op) {
    case AttentionScale::Op::mul:
      return mul(x, s.value);
    case AttentionScale::Op::div:
      return div(x, s.value);
    case AttentionScale::Op::none:
      break;
  }
  return x;
}

// The causal mask of `length` queries over `keys` keys: true above the diagonal, where a query
// may not look (torch.ones(L, S, dtype=torch.bool).triu(1)).
Tensor causal_mask(std::int64_t length, std::int64_t keys) {
  Tensor m = Tensor::zeros({length, keys}, DType::b8);
  if (m.is_meta()) return m;
  bool* d = m.data<bool>();
  for (std::int64_t r = 0; r < length; ++r)
    for (std::int64_t k = r + 1; k < keys; ++k) d[r * keys + k] = true;
  return m;
}

// The decomposed ops, exactly as the exported graph spells them: what each saves is what
// PyTorch 1.13's op of the same name saves.
Tensor math_attention(const Tensor& q, const Tensor& kt, const Tensor& v, const Tensor& mask,
                      const AttentionOptions& o) {
  Tensor s = scaled(matmul(scaled(q, o.query), scaled(kt, o.key)), o.scores);
  if (o.mask == AttentionMask::add) s = add(s, mask);
  if (o.mask == AttentionMask::fill) s = where(mask, Tensor::scalar(o.fill, s.dtype()), s);
  if (o.mask == AttentionMask::causal)
    s = where(causal_mask(s.shape()[s.dim() - 2], s.shape().back()),
              Tensor::scalar(o.fill, s.dtype()), s);
  Tensor p = softmax(s, -1);
  if (o.dropout > 0) p = dropout(p, o.dropout, true);
  return matmul(p, v);
}

}  // namespace

std::int64_t attention_lse_length(std::int64_t query_length) {
  constexpr std::int64_t kAlignLSE = 32;
  return (query_length + kAlignLSE - 1) / kAlignLSE * kAlignLSE;
}

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& kt, const Tensor& v,
                                    const Tensor& mask, const AttentionOptions& o,
                                    AttentionKernel kernel) {
  OpScope op(kOp);
  if ((o.mask == AttentionMask::none || o.mask == AttentionMask::causal) != !mask.defined())
    throw std::invalid_argument(std::string(kOp) + ": a mask is given without a mask kind, or a " +
                                "mask kind without a mask");
  if (!(o.dropout >= 0 && o.dropout < 1))
    throw std::invalid_argument(std::string(kOp) + ": dropout must be in [0, 1), got " +
                                std::to_string(o.dropout));
  return kernel == AttentionKernel::math ? math_attention(q, kt, v, mask, o)
                                         : fused_attention(q, kt, v, mask, o, kernel);
}

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& kt, const Tensor& v,
                                    const Tensor& mask, const AttentionOptions& o) {
  return scaled_dot_product_attention(q, kt, v, mask, o,
                                      attention_kernel_for(q, kt, v, mask.defined(), o));
}

}  // namespace ckpt
