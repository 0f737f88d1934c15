#include "engine/ops/attention.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "engine/autograd/node.hpp"
#include "engine/autograd/op_observer.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/ops/dropout.hpp"
#include "engine/ops/elementwise.hpp"
#include "engine/ops/logical.hpp"
#include "engine/ops/matmul.hpp"
#include "engine/ops/softmax.hpp"
#include "engine/tensor/generator.hpp"
#include "engine/tensor/memory_semantics.hpp"

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

// [..., m, n] as a contiguous [B, m, n].
Tensor batch3(const Tensor& t) {
  const Shape& s = t.shape();
  const std::int64_t m = s[s.size() - 2], n = s.back();
  const Tensor c = as_contiguous(t);
  return c.alias({t.numel() / std::max<std::int64_t>(m * n, 1), m, n}, {m * n, n, 1}, c.offset());
}

// [B, m, k] @ [B, k, n], slice by slice.
Tensor bmm(const Tensor& a, const Tensor& b) {
  const std::int64_t batch = a.shape()[0], m = a.shape()[1], n = b.shape()[2];
  Tensor out = Tensor::empty({batch, m, n}, a.dtype());
  for (std::int64_t i = 0; i < batch; ++i) {
    const Tensor sa = a.alias({m, a.shape()[2]}, {a.strides()[1], a.strides()[2]},
                              a.offset() + i * a.strides()[0]);
    const Tensor sb = b.alias({b.shape()[1], n}, {b.strides()[1], b.strides()[2]},
                              b.offset() + i * b.strides()[0]);
    Tensor so = out.alias({m, n}, {n, 1}, i * m * n);
    gemm_raw(sa, sb, so);
  }
  return out;
}

Tensor transposed(const Tensor& t) {
  return transpose_raw(t, 1, 2);
}

Shape with_last_two(Shape batch, std::int64_t a, std::int64_t b) {
  batch.push_back(a);
  batch.push_back(b);
  return batch;
}

// What the efficient kernel needs of its inputs, as [B, ., .] views.
struct Problem {
  Shape batch;
  std::int64_t length = 0, keys = 0;  // L and S
  Tensor q, kt, v;                    // [B, L, E], [B, E, S], [B, S, Ev]
  double scale = 1;
};

Problem problem_of(const Tensor& q, const Tensor& kt, const Tensor& v, const AttentionOptions& o) {
  const auto fail = [&](const std::string& why) {
    throw std::invalid_argument(std::string(kOp) + ": " + why + " (query " + q.str() + ", key_t " +
                                kt.str() + ", value " + v.str() + ")");
  };
  if (q.dim() < 2 || kt.dim() != q.dim() || v.dim() != q.dim())
    fail("query, key_t and value need the same rank, at least 2");
  Problem p;
  p.batch.assign(q.shape().begin(), q.shape().end() - 2);
  if (Shape(kt.shape().begin(), kt.shape().end() - 2) != p.batch ||
      Shape(v.shape().begin(), v.shape().end() - 2) != p.batch)
    fail("the efficient kernel needs one batch shape for all three");
  p.length = q.shape()[q.shape().size() - 2];
  p.keys = kt.shape().back();
  if (kt.shape()[kt.shape().size() - 2] != q.shape().back() ||
      v.shape()[v.shape().size() - 2] != p.keys)
    fail("the shapes do not multiply");
  p.q = batch3(q);
  p.kt = batch3(kt);
  p.v = batch3(v);
  p.scale = o.query.factor() * o.key.factor() * o.scores.factor();
  return p;
}

// The masked, scaled scores [B, L, S] of the efficient kernel.
Tensor scores_of(const Problem& p, const Tensor& mask, const AttentionOptions& o) {
  Tensor s = mul_scalar_raw(bmm(p.q, p.kt), p.scale);
  if (o.mask == AttentionMask::none || s.is_meta()) return s;
  if (o.mask == AttentionMask::causal) {
    dispatch_floating(s.dtype(), kOp, [&]<typename T>() {
      T* ps = s.data<T>();
      const T fill = static_cast<T>(o.fill);
      for (std::int64_t i = 0; i < s.numel(); ++i)
        if (i % p.keys > (i / p.keys) % p.length) ps[i] = fill;
    });
    return s;
  }
  const Shape full = with_last_two(p.batch, p.length, p.keys);
  const Tensor m = contiguous_copy(expand_raw(cast_raw(mask, s.dtype()), full));
  dispatch_floating(s.dtype(), kOp, [&]<typename T>() {
    T* ps = s.data<T>();
    const T* pm = m.data<T>();
    const T fill = static_cast<T>(o.fill);
    for (std::int64_t i = 0; i < s.numel(); ++i)
      ps[i] = o.mask == AttentionMask::add ? ps[i] + pm[i] : pm[i] != T(0) ? fill : ps[i];
  });
  return s;
}

// Turns the scores into probabilities in place, exp(s - lse) row by row; computes the rows'
// log-sum-exp into `lse` (forward) or reads it (backward).
void probabilities(Tensor& s, Tensor& lse, bool compute_lse, std::int64_t lse_length) {
  if (s.is_meta()) return;
  const std::int64_t rows = s.shape()[0] * s.shape()[1], cols = s.shape()[2];
  const std::int64_t length = s.shape()[1];
  dispatch_floating(s.dtype(), kOp, [&]<typename T>() {
    T* ps = s.data<T>();
    T* pl = lse.data<T>();
    for (std::int64_t r = 0; r < rows; ++r) {
      T* row = ps + r * cols;
      T& l = pl[(r / length) * lse_length + r % length];
      if (compute_lse) {
        T m = -std::numeric_limits<T>::infinity();
        for (std::int64_t j = 0; j < cols; ++j) m = std::max(m, row[j]);
        T sum = 0;
        for (std::int64_t j = 0; j < cols; ++j) sum += std::exp(row[j] - m);
        l = m + std::log(sum);
      }
      for (std::int64_t j = 0; j < cols; ++j) row[j] = std::exp(row[j] - l);
    }
  });
}

// Dropout's scaled mask over the probabilities, drawn as dropout() draws it: one number per
// element, in order, from `gen`.
Tensor dropout_mask(const Tensor& like, double p, Generator& gen) {
  Tensor z = Tensor::empty(like.shape(), like.dtype());
  if (z.is_meta()) return z;
  dispatch_floating(z.dtype(), kOp, [&]<typename T>() {
    const double keep = 1.0 - p;
    const T scale = T(1) / static_cast<T>(keep);
    T* pz = z.data<T>();
    for (std::int64_t i = 0; i < z.numel(); ++i) pz[i] = gen.uniform() < keep ? scale : T(0);
  });
  return z;
}

// PyTorch 2.x's memory-efficient kernel: saves query, key, value, output and the log-sum-exp;
// the backward recomputes the probabilities from them.
Tensor efficient_attention(const Tensor& q, const Tensor& kt, const Tensor& v, const Tensor& mask,
                           const AttentionOptions& o) {
  const Problem p = problem_of(q, kt, v, o);
  const std::int64_t lse_length = attention_lse_length(p.length);
  Shape lse_shape = p.batch;
  lse_shape.push_back(lse_length);
  const Shape out_shape = with_last_two(p.batch, p.length, v.shape().back());
  // The generator's state before the draws: the backward draws the same mask again (PyTorch
  // keeps the Philox seed and offset, two host scalars).
  const bool drops = o.dropout > 0;
  const auto rng_state = drops ? Generator::current().get_state() : std::vector<std::uint8_t>();
  // A selective policy (save-matmul) keeps the output and the log-sum-exp: the recompute then
  // skips the attention altogether, as PyTorch's policies do with the efficient kernel.
  TensorList kept = replay_saved_outputs(kOp);
  Tensor out, lse;
  if (kept.size() == 2) {
    out = kept[0];
    lse = kept[1];
  } else if (q.is_meta()) {
    // A dry run holds what PyTorch's fused kernel allocates: the output and the float32
    // log-sum-exp; its tiles of scores never reach the allocator.
    out = Tensor::empty(out_shape, q.dtype());
    lse = Tensor::empty(lse_shape, DType::f32);
  } else {
    lse = Tensor::zeros(lse_shape, q.dtype());
    Tensor s = scores_of(p, mask, o);
    probabilities(s, lse, true, lse_length);
    if (drops) s = mul_raw(s, dropout_mask(s, o.dropout, Generator::current()));
    out = bmm(s, p.v);
    out = out.alias(out_shape, contiguous_strides(out_shape), out.offset());
  }
  TensorList inputs{q, kt, v};
  TensorList saved{q, kt, v, out, lse};
  if (mask.defined()) {
    inputs.push_back(mask);
    saved.push_back(mask);
  }
  record(
      "ScaledDotProductEfficientAttentionBackward0", inputs, {out, lse}, saved,
      [o, rng_state, lse_length](BackwardContext& c) -> TensorList {
        const Tensor& q0 = c.saved[0];
        const Tensor& kt0 = c.saved[1];
        const Tensor& v0 = c.saved[2];
        const Tensor m = c.saved.size() > 5 ? c.saved[5] : Tensor();
        if (q0.is_meta()) {
          // The fused backward allocates the gradients only (dq, dk, dv; the mask's if asked).
          TensorList grads(c.saved.size() > 5 ? 4 : 3);
          for (std::size_t i = 0; i < grads.size(); ++i)
            if (c.needs_input_grad[i])
              grads[i] =
                  Tensor::empty(c.saved[i == 3 ? 5 : i].shape(), c.saved[i == 3 ? 5 : i].dtype());
          return grads;
        }
        const Problem p = problem_of(q0, kt0, v0, o);
        Tensor lse = c.saved[4];
        Tensor prob = scores_of(p, m, o);
        probabilities(prob, lse, false, lse_length);
        Tensor z;
        if (o.dropout > 0) {
          Generator gen;
          gen.set_state(rng_state);
          z = dropout_mask(prob, o.dropout, gen);
        }
        const Tensor g = batch3(c.grads[0]);
        const Tensor dropped = z.defined() ? mul_raw(prob, z) : prob;
        TensorList grads(c.saved.size() > 5 ? 4 : 3);
        if (c.needs_input_grad[2])
          grads[2] = as_contiguous(bmm(transposed(dropped), g))
                         .alias(v0.shape(), contiguous_strides(v0.shape()), 0);
        Tensor dp = bmm(g, transposed(p.v));
        if (z.defined()) dp = mul_raw(dp, z);
        // D = rowsum(dO ∘ O) = rowsum(P ∘ dP): the efficient backward's row term.
        const Tensor d = sum_dims_raw(mul_raw(g, batch3(c.saved[3])), {2}, true);
        const Tensor ds = mul_raw(prob, sub_raw(dp, d));
        if (grads.size() > 3 && c.needs_input_grad[3])
          grads[3] = sum_to_raw(
              ds.alias(with_last_two(p.batch, p.length, p.keys),
                       contiguous_strides(with_last_two(p.batch, p.length, p.keys)), ds.offset()),
              m.shape());
        const Tensor dsc = mul_scalar_raw(ds, p.scale);
        if (c.needs_input_grad[0])
          grads[0] =
              bmm(dsc, transposed(p.kt)).alias(q0.shape(), contiguous_strides(q0.shape()), 0);
        if (c.needs_input_grad[1])
          grads[1] =
              bmm(transposed(p.q), dsc).alias(kt0.shape(), contiguous_strides(kt0.shape()), 0);
        return grads;
      });
  return out;
}

}  // namespace

std::int64_t attention_lse_length(std::int64_t query_length) {
  constexpr std::int64_t kAlignLSE = 32;
  return (query_length + kAlignLSE - 1) / kAlignLSE * kAlignLSE;
}

AttentionKernel attention_kernel_for(const Tensor& query, const AttentionOptions& options) {
  const bool fused_in_pytorch = options.scores.op == AttentionScale::Op::none;
  if (options.mask == AttentionMask::causal) {
    // F.scaled_dot_product_attention(is_causal=True) (the Llama blocks): PyTorch 2.x runs it
    // fused in float32, bfloat16 and float16 (flash or efficient: both keep query, key, value,
    // output and the log-sum-exp), and a dry run standing in for CUDA does as a CUDA run does.
    const bool fused_dtype = query.dtype() == DType::f32 || is_reduced_floating(query.dtype());
    return memory_semantics(query.device()).kernels == KernelAllocations::pytorch_cuda &&
                   fused_dtype && fused_in_pytorch
               ? AttentionKernel::efficient
               : AttentionKernel::math;
  }
  return query.device() == Device::cuda && query.dtype() == DType::f32 && fused_in_pytorch
             ? AttentionKernel::efficient
             : AttentionKernel::math;
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
  return kernel == AttentionKernel::efficient ? efficient_attention(q, kt, v, mask, o)
                                              : math_attention(q, kt, v, mask, o);
}

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& kt, const Tensor& v,
                                    const Tensor& mask, const AttentionOptions& o) {
  return scaled_dot_product_attention(q, kt, v, mask, o, attention_kernel_for(q, o));
}

}  // namespace ckpt
