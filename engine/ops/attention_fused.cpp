// PyTorch 2.x's fused attention kernels (memory-efficient, flash, cuDNN), as the allocator sees
// them. A fused kernel keeps its tiles of the scores in on-chip memory: the caching allocator
// gives it only its outputs — in forward the output and the log-sum-exp
// (aten/src/ATen/native/transformers/cuda/attention.cu, _efficient_attention_forward), in
// backward the three gradients and the row term delta = rowsum(dO ∘ O), float32 [B, H,
// ceil(L / 32) · 32] (attention_backward.cu, _efficient_attention_backward) — and, when the mask
// takes a gradient, the mask's gradient at its expanded size before it is summed back. So here
// the arithmetic runs row by row over host scratch that no ledger sees, and the tensors made are
// exactly those.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/autograd/node.hpp"
#include "engine/autograd/op_observer.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/ops/attention.hpp"
#include "engine/ops/attention_fused.hpp"
#include "engine/tensor/generator.hpp"

namespace ckpt {

namespace {

constexpr char kOp[] = "scaled_dot_product_attention";

// The attention's sizes, with the batch dims flattened: B slices of q [L, E], kᵀ [E, S], v [S, Ev].
struct Sizes {
  Shape batch;
  std::int64_t slices = 1, length = 0, keys = 0, head = 0, value_head = 0;
  double scale = 1;
};

Sizes sizes_of(const Tensor& q, const Tensor& kt, const Tensor& v, const AttentionOptions& o) {
  const auto fail = [&](const std::string& why) {
    throw std::invalid_argument(std::string(kOp) + ": " + why + " (query " + q.str() + ", key_t " +
                                kt.str() + ", value " + v.str() + ")");
  };
  if (q.dim() < 2 || kt.dim() != q.dim() || v.dim() != q.dim())
    fail("query, key_t and value need the same rank, at least 2");
  Sizes s;
  s.batch.assign(q.shape().begin(), q.shape().end() - 2);
  if (Shape(kt.shape().begin(), kt.shape().end() - 2) != s.batch ||
      Shape(v.shape().begin(), v.shape().end() - 2) != s.batch)
    fail("a fused kernel needs one batch shape for all three");
  for (const std::int64_t d : s.batch) s.slices *= d;
  s.length = q.shape()[q.shape().size() - 2];
  s.head = q.shape().back();
  s.keys = kt.shape().back();
  s.value_head = v.shape().back();
  if (kt.shape()[kt.shape().size() - 2] != s.head || v.shape()[v.shape().size() - 2] != s.keys)
    fail("the shapes do not multiply");
  s.scale = o.query.factor() * o.key.factor() * o.scores.factor();
  return s;
}

Shape with_last(Shape batch, std::int64_t a, std::int64_t b = -1) {
  batch.push_back(a);
  if (b >= 0) batch.push_back(b);
  return batch;
}

// Element (slice, i, j) of a tensor whose last two dims are [i, j] and whose leading dims are
// the batch's (strides read as they are: a broadcast mask has zeros there).
struct Strided {
  const Tensor* t = nullptr;
  std::vector<std::int64_t> slice_offset;  // per flattened batch index
  std::int64_t si = 0, sj = 0;
  Strided(const Tensor& x, const Sizes& s) : t(&x) {
    const auto& st = x.strides();
    const std::size_t r = st.size();
    si = st[r - 2];
    sj = st[r - 1];
    slice_offset.assign(static_cast<std::size_t>(s.slices), x.offset());
    for (std::int64_t b = 0; b < s.slices; ++b) {
      std::int64_t rest = b, off = x.offset();
      for (std::size_t d = s.batch.size(); d-- > 0;) {
        off += (rest % s.batch[d]) * st[d];
        rest /= s.batch[d];
      }
      slice_offset[static_cast<std::size_t>(b)] = off;
    }
  }
  template <typename T>
  T at(std::int64_t b, std::int64_t i, std::int64_t j) const {
    const T* base = t->device_data<T>() - t->offset();
    return base[slice_offset[static_cast<std::size_t>(b)] + i * si + j * sj];
  }
};

// One row of probabilities, p[j] = exp(scale · q_i · k_j (+ mask) - lse), with its log-sum-exp
// computed (forward) or given (backward), and dropout's scaled keep mask drawn in order.
template <typename T>
void probability_row(const Sizes& s, const Strided& q, const Strided& kt, const Strided* mask,
                     const AttentionOptions& o, std::int64_t b, std::int64_t i, std::vector<T>& row,
                     T& lse, bool compute_lse) {
  for (std::int64_t j = 0; j < s.keys; ++j) {
    T dot = 0;
    for (std::int64_t e = 0; e < s.head; ++e) dot += q.at<T>(b, i, e) * kt.at<T>(b, e, j);
    T x = dot * static_cast<T>(s.scale);
    if (mask) {
      const T m = mask->at<T>(b, i, j);
      x = o.mask == AttentionMask::add ? x + m : m != T(0) ? static_cast<T>(o.fill) : x;
    }
    // is_causal: query i sees keys j <= i (the top-left diagonal, as PyTorch's kernels mask).
    if (o.mask == AttentionMask::causal && j > i) x = static_cast<T>(o.fill);
    row[static_cast<std::size_t>(j)] = x;
  }
  if (compute_lse) {
    T m = -std::numeric_limits<T>::infinity();
    for (const T x : row) m = std::max(m, x);
    T sum = 0;
    for (const T x : row) sum += std::exp(x - m);
    lse = m + std::log(sum);
  }
  for (T& x : row) x = std::exp(x - lse);
}

// A bool mask read as the scores' dtype (a real run's host copy; a dry run reads nothing).
Tensor as_dtype(const Tensor& mask, DType t) {
  return mask.dtype() == t ? mask : cast_raw(mask, t);
}

template <typename T>
void draw_keep(std::vector<T>& keep, double p, Generator& gen) {
  const T scale = T(1) / static_cast<T>(1.0 - p);
  for (T& z : keep) z = gen.uniform() < 1.0 - p ? scale : T(0);
}

// What a fused kernel's backward takes from the allocator beside the gradients, held to its
// end (a transient freed where PyTorch frees it):
//  - memory-efficient (attention_backward.cu, _efficient_attention_backward): delta [B, H, L]
//    in float32; for float32 inputs the kernel does not compute it (kKernelComputesDelta is for
//    half precision), ops do: (grad_out.float() * out.float()).sum(-1).transpose(-2,
//    -1).contiguous(), a [B, L, H, Ev] product and a [B, L, H] sum on the way; then its
//    split-keys workspace (efficient_attention_backward_workspace_bytes);
//  - flash (flash_api.cpp, mha_bwd): softmax_d [B, H, ceil(L / 128) · 128] and the float32
//    dq accumulator [B, ceil(L / 128) · 128, H, D rounded up to 32];
//  - cuDNN: its own workspace, sized by the cuDNN graph: not taken.
TensorList backward_scratch(AttentionKernel kernel, const Sizes& s, DType dtype) {
  TensorList held;
  const Shape rows = with_last(s.batch, s.length);
  if (kernel == AttentionKernel::efficient) {
    if (!is_reduced_floating(dtype)) {
      Tensor product = Tensor::empty(with_last(s.batch, s.length, s.value_head), DType::f32);
      const Tensor sums = Tensor::empty(rows, DType::f32);
      product = Tensor();
      held.push_back(Tensor::empty(rows, DType::f32));
    } else {
      held.push_back(Tensor::empty(rows, DType::f32));
    }
    const std::int64_t workspace = efficient_attention_backward_workspace_bytes(
        dtype, s.slices, s.length, s.head, s.value_head);
    if (workspace > 0) held.push_back(Tensor::empty({workspace}, DType::b8));  // kByte
  } else if (kernel == AttentionKernel::flash) {
    const std::int64_t rounded = (s.length + 127) / 128 * 128;
    const std::int64_t head = s.head <= 192 ? (s.head + 31) / 32 * 32 : 256;
    held.push_back(Tensor::empty(with_last(s.batch, rounded), DType::f32));
    held.push_back(Tensor::empty(with_last(s.batch, rounded, head), DType::f32));
  }
  return held;
}

}  // namespace

// attention_backward.cu allocates `workspace = at::empty({p.workspace_size()}, kByte)` after
// delta, for the kernel dispatch_cutlassB picks: on sm80 and later (an H200 is sm90) the
// sm80 kernels, the first whose kMaxK covers max(head, value_head) — in float32 64 x 64 tiles
// (kBlockSizeI x kBlockSizeJ) up to a head of 64, then 128 x 64 (cutlassB.h's
// dispatch_cutlassB_f32_sm80, the dropout kernels alike). kernel_backward.h sizes it: in float32
// dK and dV are written directly (output_t is the accumulator), so only dQ's accumulator is
// there (kNeedsAccumGradQ, set by kEnableSplitKeys, whatever num_splits_key is): per batch and
// head, ceil(L / kBlockSizeI) x ceil(E / kBlockSizeJ) GradQTempStorage tiles — a 16-byte lock,
// counter and pad, then a kBlockSizeI x kBlockSizeJ float32 tile (MatmulGradQ's threadblock) —
// rounded up to 4 elements (workspace_strideBH), in 4-byte elements (workspace_size). Half
// precision also accumulates dK and dV there, sized by kernel constants (kOutputInRF) not
// derived here: 0. Zeroing it (should_zero_workspace) is a memset, no allocation.
std::int64_t efficient_attention_backward_workspace_bytes(DType dtype, std::int64_t slices,
                                                          std::int64_t queries, std::int64_t head,
                                                          std::int64_t value_head) {
  if (dtype != DType::f32 || slices <= 0 || queries <= 0 || head <= 0) return 0;
  const std::int64_t block_i = std::max(head, value_head) <= 64 ? 64 : 128, block_j = 64;
  const auto ceil_div = [](std::int64_t a, std::int64_t b) { return (a + b - 1) / b; };
  const std::int64_t tile = 4 + block_i * block_j;
  const std::int64_t per_slice = ceil_div(queries, block_i) * ceil_div(head, block_j) * tile;
  return slices * ceil_div(per_slice, 4) * 4 * 4;
}

DType attention_lse_dtype(DType inputs) {
  return is_reduced_floating(inputs) ? DType::f32 : inputs;
}

const char* fused_attention_backward_name(AttentionKernel kernel) {
  switch (kernel) {
    case AttentionKernel::flash:
      return "ScaledDotProductFlashAttentionBackward0";
    case AttentionKernel::cudnn:
      return "ScaledDotProductCudnnAttentionBackward0";
    default:
      return "ScaledDotProductEfficientAttentionBackward0";
  }
}

Tensor fused_attention(const Tensor& q, const Tensor& kt, const Tensor& v, const Tensor& mask,
                       const AttentionOptions& o, AttentionKernel kernel) {
  const Sizes s = sizes_of(q, kt, v, o);
  // The log-sum-exp's rows: ceil(L / 32) · 32 for the efficient kernel (kAlignLSE), L for flash
  // (softmax_lse [B, H, L]) and cuDNN ([B, H, L, 1]).
  const std::int64_t lse_length =
      kernel == AttentionKernel::efficient ? attention_lse_length(s.length) : s.length;
  const Shape out_shape = with_last(s.batch, s.length, s.value_head);
  // The generator's state before the draws: the backward draws the same mask again (PyTorch
  // keeps the Philox seed and offset, two host scalars).
  const bool drops = o.dropout > 0;
  const auto rng_state = drops ? Generator::current().get_state() : std::vector<std::uint8_t>();
  // A selective policy (save-matmul) keeps the output and the log-sum-exp: the recompute then
  // skips the attention altogether, as PyTorch's policies do with the fused kernels.
  TensorList kept = replay_saved_outputs(kOp);
  Tensor out, lse;
  if (kept.size() == 2) {
    out = kept[0];
    lse = kept[1];
  } else {
    out = Tensor::empty(out_shape, q.dtype());
    lse = Tensor::empty(with_last(s.batch, lse_length), attention_lse_dtype(q.dtype()));
    if (!out.is_meta()) {
      dispatch_floating(q.dtype(), kOp, [&]<typename T>() {
        const Strided sq(q, s), skt(kt, s), sv(v, s);
        const Tensor mask_t = mask.defined() ? as_dtype(mask, q.dtype()) : Tensor();
        const Tensor expanded =
            mask.defined() ? expand_raw(mask_t, with_last(s.batch, s.length, s.keys)) : Tensor();
        const std::optional<Strided> sm =
            mask.defined() ? std::optional<Strided>(Strided(expanded, s)) : std::nullopt;
        T* po = out.data<T>();
        T* pl = lse.data<T>();
        std::vector<T> row(static_cast<std::size_t>(s.keys)), keep(row.size(), T(1));
        for (std::int64_t b = 0; b < s.slices; ++b)
          for (std::int64_t i = 0; i < s.length; ++i) {
            T& l = pl[b * lse_length + i];
            probability_row<T>(s, sq, skt, sm ? &*sm : nullptr, o, b, i, row, l, true);
            if (drops) draw_keep(keep, o.dropout, Generator::current());
            for (std::int64_t c = 0; c < s.value_head; ++c) {
              T acc = 0;
              for (std::int64_t j = 0; j < s.keys; ++j)
                acc += row[static_cast<std::size_t>(j)] * keep[static_cast<std::size_t>(j)] *
                       sv.at<T>(b, j, c);
              po[(b * s.length + i) * s.value_head + c] = acc;
            }
          }
      });
    }
  }
  TensorList inputs{q, kt, v};
  TensorList saved{q, kt, v, out, lse};
  if (mask.defined()) {
    inputs.push_back(mask);
    saved.push_back(mask);
  }
  record(fused_attention_backward_name(kernel), inputs, {out, lse}, saved,
         [o, rng_state, lse_length, kernel](BackwardContext& c) -> TensorList {
           const Tensor& q0 = c.saved[0];
           const Tensor& kt0 = c.saved[1];
           const Tensor& v0 = c.saved[2];
           const Tensor& o0 = c.saved[3];
           const Tensor& lse = c.saved[4];
           const Tensor m = c.saved.size() > 5 ? c.saved[5] : Tensor();
           const Sizes s = sizes_of(q0, kt0, v0, o);
           const Tensor& g = c.grads[0];
           TensorList grads(m.defined() ? 4 : 3);
           // What the backward takes from the allocator, in its order: the gradients, then its
           // kernel's row statistics and accumulators.
           if (c.needs_input_grad[0]) grads[0] = Tensor::zeros(q0.shape(), q0.dtype());
           if (c.needs_input_grad[1]) grads[1] = Tensor::zeros(kt0.shape(), kt0.dtype());
           if (c.needs_input_grad[2]) grads[2] = Tensor::zeros(v0.shape(), v0.dtype());
           [[maybe_unused]] const TensorList scratch = backward_scratch(kernel, s, q0.dtype());
           const bool mask_grad = m.defined() && c.needs_input_grad[3];
           const Shape full = with_last(s.batch, s.length, s.keys);
           Tensor grad_mask = mask_grad ? Tensor::zeros(full, q0.dtype()) : Tensor();
           if (!q0.is_meta()) {
             dispatch_floating(q0.dtype(), kOp, [&]<typename T>() {
               const Strided sq(q0, s), skt(kt0, s), sv(v0, s), so(o0, s), sg(g, s);
               const Tensor mask_t = m.defined() ? as_dtype(m, q0.dtype()) : Tensor();
               const Tensor expanded = m.defined() ? expand_raw(mask_t, full) : Tensor();
               const std::optional<Strided> sm =
                   m.defined() ? std::optional<Strided>(Strided(expanded, s)) : std::nullopt;
               Generator gen;
               if (o.dropout > 0) gen.set_state(rng_state);
               T* dq = grads[0].defined() ? grads[0].data<T>() : nullptr;
               T* dk = grads[1].defined() ? grads[1].data<T>() : nullptr;  // [E, S] per slice
               T* dv = grads[2].defined() ? grads[2].data<T>() : nullptr;
               T* dm = grad_mask.defined() ? grad_mask.data<T>() : nullptr;
               const T* pl = lse.data<T>();
               std::vector<T> row(static_cast<std::size_t>(s.keys)), keep(row.size(), T(1)),
                   ds(row.size());
               const T scale = static_cast<T>(s.scale);
               for (std::int64_t b = 0; b < s.slices; ++b)
                 for (std::int64_t i = 0; i < s.length; ++i) {
                   T l = pl[b * lse_length + i];
                   probability_row<T>(s, sq, skt, sm ? &*sm : nullptr, o, b, i, row, l, false);
                   if (o.dropout > 0) draw_keep(keep, o.dropout, gen);
                   // D_i = dO_i · O_i = Σ_j P_ij dP_ij.
                   T d = 0;
                   for (std::int64_t c2 = 0; c2 < s.value_head; ++c2)
                     d += sg.at<T>(b, i, c2) * so.at<T>(b, i, c2);
                   for (std::int64_t j = 0; j < s.keys; ++j) {
                     const auto uj = static_cast<std::size_t>(j);
                     T dp = 0;
                     for (std::int64_t c2 = 0; c2 < s.value_head; ++c2) {
                       const T gv = sg.at<T>(b, i, c2);
                       dp += gv * sv.at<T>(b, j, c2);
                       if (dv) dv[(b * s.keys + j) * s.value_head + c2] += row[uj] * keep[uj] * gv;
                     }
                     ds[uj] = row[uj] * (dp * keep[uj] - d);
                     if (dm) dm[(b * s.length + i) * s.keys + j] = ds[uj];
                   }
                   for (std::int64_t j = 0; j < s.keys; ++j) {
                     const T w = ds[static_cast<std::size_t>(j)] * scale;
                     for (std::int64_t e = 0; e < s.head; ++e) {
                       if (dq) dq[(b * s.length + i) * s.head + e] += w * skt.at<T>(b, e, j);
                       if (dk) dk[(b * s.head + e) * s.keys + j] += w * sq.at<T>(b, i, e);
                     }
                   }
                 }
             });
           }
           if (mask_grad) grads[3] = sum_to_raw(grad_mask, m.shape());
           return grads;
         });
  return out;
}

}  // namespace ckpt
