#include "engine/ops/matmul.hpp"

#include <stdexcept>

#include "engine/autograd/node.hpp"
#include "engine/autograd/op_observer.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/ops/elementwise.hpp"
#include "engine/ops/shape_ops.hpp"
#include "engine/tensor/memory_semantics.hpp"

namespace ckpt {

namespace {

Tensor maybe(bool keep, const Tensor& t) {
  return keep ? t : Tensor();
}

// PyTorch 2.x's MmBackward0 and BmmBackward0 compute mat2's gradient before self's (oracle
// snapshot gpt_mini__plain: lm_head's 131,072-byte weight gradient is allocated before the
// 65,536-byte input gradient, the attention's [16, 64, 16] before its [16, 64, 64]); the
// engine's CPU kernels, as 1.13, self's first. The order decides which cached blocks the caching
// allocator hands out, so reserved memory, not the peak.
bool mat2_grad_first(const Tensor& grad) {
  return memory_semantics(grad.device()).kernels == KernelAllocations::pytorch_cuda;
}

[[noreturn]] void shape_error(const Tensor& a, const Tensor& b) {
  throw std::invalid_argument("matmul: shapes " + shape_str(a.shape()) + " and " +
                              shape_str(b.shape()) + " cannot be multiplied");
}

// A 1-D operand as a [1, k] row (left) or [k, 1] column (right), sharing storage.
Tensor promote(const Tensor& v, bool left) {
  if (v.dim() != 1) return v;
  return left ? v.alias({1, v.shape()[0]}, {0, v.strides()[0]}, v.offset())
              : v.alias({v.shape()[0], 1}, {v.strides()[0], 0}, v.offset());
}

// a [m, k] @ b [k, n] as one node: MmBackward0, or MvBackward0 (b 1-D) and DotBackward0 (both
// 1-D), computed on promoted views. Saves a if b needs grad and b if a needs grad, as PyTorch.
Tensor mm_node(const Tensor& a, const Tensor& b, const char* name) {
  const Tensor a2 = promote(a, true), b2 = promote(b, false);
  if (a2.shape()[1] != b2.shape()[0]) shape_error(a, b);
  const std::int64_t m = a2.shape()[0], n = b2.shape()[1];
  // Selective checkpointing hands back the forward's product instead of recomputing it.
  Tensor out = replay_saved_output("matmul");
  if (!out.defined()) out = matmul2d_raw(a2, b2);
  Shape os;
  if (a.dim() == 2) os.push_back(m);
  if (b.dim() == 2) os.push_back(n);
  out = out.alias(os, contiguous_strides(os), 0);
  record(name, {a, b}, {out}, {maybe(needs_grad(b), a), maybe(needs_grad(a), b)},
         [m, n, a1 = a.dim() == 1, b1 = b.dim() == 1](BackwardContext& c) -> TensorList {
           Tensor g = as_contiguous(c.grads[0]);
           g = g.alias({m, n}, {n, 1}, g.offset());
           auto flat = [](const Tensor& t) { return t.alias({t.numel()}, {1}, t.offset()); };
           Tensor ga, gb;
           const auto grad_a = [&] {
             if (!c.needs_input_grad[0]) return;
             ga = matmul2d_raw(g, transpose_raw(promote(c.saved[1], false), 0, 1));
             if (a1) ga = flat(ga);
           };
           const auto grad_b = [&] {
             if (!c.needs_input_grad[1]) return;
             gb = matmul2d_raw(transpose_raw(promote(c.saved[0], true), 0, 1), g);
             if (b1) gb = flat(gb);
           };
           if (mat2_grad_first(g)) {
             grad_b();
             grad_a();
           } else {
             grad_a();
             grad_b();
           }
           return {ga, gb};
         });
  return out;
}

// a [B, m, k] @ b [B, k, n] (BmmBackward0), same saving rule.
Tensor bmm_raw(const Tensor& a, const Tensor& b) {
  const auto batch = a.shape()[0], m = a.shape()[1], n = b.shape()[2];
  Tensor out = Tensor::empty({batch, m, n}, a.dtype());
  for (std::int64_t i = 0; i < batch; ++i) {
    Tensor sa = a.alias({m, a.shape()[2]}, {a.strides()[1], a.strides()[2]},
                        a.offset() + i * a.strides()[0]);
    Tensor sb = b.alias({b.shape()[1], n}, {b.strides()[1], b.strides()[2]},
                        b.offset() + i * b.strides()[0]);
    Tensor so = out.alias({m, n}, {n, 1}, i * m * n);
    gemm_raw(sa, sb, so);
  }
  return out;
}

Tensor bmm_node(const Tensor& a, const Tensor& b) {
  if (a.shape()[0] != b.shape()[0] || a.shape()[2] != b.shape()[1]) shape_error(a, b);
  Tensor out = replay_saved_output("matmul");
  if (!out.defined()) out = bmm_raw(a, b);
  record("BmmBackward0", {a, b}, {out}, {maybe(needs_grad(b), a), maybe(needs_grad(a), b)},
         [](BackwardContext& c) -> TensorList {
           const Tensor& g = c.grads[0];
           Tensor ga, gb;
           const bool b_first = mat2_grad_first(g);
           if (b_first && c.needs_input_grad[1]) gb = bmm_raw(transpose_raw(c.saved[0], 1, 2), g);
           if (c.needs_input_grad[0]) ga = bmm_raw(g, transpose_raw(c.saved[1], 1, 2));
           if (!b_first && c.needs_input_grad[1]) gb = bmm_raw(transpose_raw(c.saved[0], 1, 2), g);
           return {ga, gb};
         });
  return out;
}

// PyTorch 1.13's should_fold: a >= 3-D operand times a 1-D or 2-D one is computed as one mm
// over the folded batch, except a [b, n, m] whose last two dims are transposed in an
// otherwise contiguous layout (bmm handles that without a copy).
bool should_fold(const Tensor& t1, std::int64_t dim2) {
  if (t1.dim() < 3 || (dim2 != 1 && dim2 != 2)) return false;
  const auto& s = t1.shape();
  const auto& st = t1.strides();
  return !(t1.dim() == 3 && dim2 == 2 && st.back() != 1 && st.front() == s[1] * s[2]);
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  OpScope op("matmul");
  const auto d1 = a.dim(), d2 = b.dim();
  if (d1 == 0 || d2 == 0)
    throw std::invalid_argument("matmul: both arguments need at least 1 dimension, got " +
                                shape_str(a.shape()) + " and " + shape_str(b.shape()));
  if (a.dtype() != b.dtype())
    throw std::invalid_argument("matmul: dtype mismatch, " + a.str() + " and " + b.str());
  // The same decomposition as PyTorch 1.13's _matmul_impl, so that the products save the same
  // (folded, possibly copied) operands.
  if (d1 == 1 && d2 == 1) {
    return mm_node(a, b, "DotBackward0");
  }
  if (d1 == 2 && d2 == 1) return mm_node(a, b, "MvBackward0");
  if (d1 == 1 && d2 == 2) return squeeze(mm_node(unsqueeze(a, 0), b, "MmBackward0"), 0);
  if (d1 == 2 && d2 == 2) return mm_node(a, b, "MmBackward0");
  if (should_fold(a, d2) || should_fold(b, d1)) {
    // Fold the batch of the larger operand into its rows; when that is b, compute
    // (b^T @ a^T)^T.
    const bool flip = d2 > d1;
    const Tensor t1 = flip ? transpose(b, -1, -2) : a;
    const Tensor t2 = !flip ? b : (d1 == 2 ? transpose(a, 0, 1) : a);
    if (t1.shape().back() != t2.shape()[0]) shape_error(a, b);
    Shape out_shape(t1.shape().begin(), t1.shape().end() - 1);
    const std::int64_t folded = shape_numel(out_shape);
    const Tensor t1f = reshape(t1, {folded, t1.shape().back()});
    if (t2.dim() == 1) return view(mm_node(t1f, t2, "MvBackward0"), out_shape);
    out_shape.push_back(t2.shape()[1]);
    Tensor out = view(mm_node(t1f, t2, "MmBackward0"), out_shape);
    return flip ? contiguous(transpose(out, -1, -2)) : out;
  }
  // Batched: expand the batch dims to their broadcast, reshape both to 3-D, one bmm.
  const std::int64_t n = d1 > 1 ? a.shape()[static_cast<std::size_t>(d1 - 2)] : 1;
  const std::int64_t m1 = a.shape().back();
  const std::int64_t m2 = d2 > 1 ? b.shape()[static_cast<std::size_t>(d2 - 2)] : b.shape()[0];
  const std::int64_t p = d2 > 1 ? b.shape().back() : 1;
  if (m1 != m2) shape_error(a, b);
  const Shape batch1(a.shape().begin(), a.shape().begin() + std::max<std::int64_t>(d1 - 2, 0));
  const Shape batch2(b.shape().begin(), b.shape().begin() + std::max<std::int64_t>(d2 - 2, 0));
  const Shape batch = broadcast_shapes(batch1, batch2, "matmul");
  const std::int64_t bp = shape_numel(batch);
  Shape e1 = batch, e2 = batch, out_shape = batch;
  e1.insert(e1.end(), {n, m1});
  e2.insert(e2.end(), {m2, p});
  if (d1 > 1) out_shape.push_back(n);
  if (d2 > 1) out_shape.push_back(p);
  const Tensor t1 = reshape(expand(a, e1), {bp, n, m1});
  const Tensor t2 = reshape(expand(b, e2), {bp, m2, p});
  return view(bmm_node(t1, t2), out_shape);
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  OpScope op("linear");
  if (weight.dim() != 2)
    throw std::invalid_argument("linear: weight must be 2-D, got " + shape_str(weight.shape()));
  if (x.dim() == 0 || x.shape().back() != weight.shape()[1])
    throw std::invalid_argument("linear: input " + shape_str(x.shape()) +
                                " does not match weight " + shape_str(weight.shape()) +
                                " (in_features " + std::to_string(weight.shape()[1]) + ")");
  const auto in = weight.shape()[1];
  const auto outf = weight.shape()[0];
  const auto rows = x.numel() / std::max<std::int64_t>(in, 1);
  Tensor x2 = as_contiguous(x);
  x2 = x2.alias({rows, in}, {in, 1}, x2.offset());
  Shape out_shape = x.shape();
  out_shape.back() = outf;
  if (bias.defined() && bias.shape() != Shape{outf})
    throw std::invalid_argument("linear: bias " + shape_str(bias.shape()) +
                                " does not match out_features " + std::to_string(outf));
  // Selective checkpointing hands back the forward's output instead of recomputing it.
  Tensor out = replay_saved_output("linear");
  if (!out.defined()) {
    out = Tensor::empty({rows, outf}, x.dtype());
    if (bias.defined()) {
      Tensor rowb = expand_raw(bias, {rows, outf});
      copy_into_raw(out, rowb);
      gemm_raw(x2, transpose_raw(weight, 0, 1), out, true);
    } else {
      gemm_raw(x2, transpose_raw(weight, 0, 1), out, false);
    }
    out = out.alias(out_shape, contiguous_strides(out_shape), 0);
  }
  TensorList inputs{x, weight};
  if (bias.defined()) inputs.push_back(bias);
  // PyTorch 1.13's at::linear runs addmm on a 2-D input, and on a contiguous 3-D one viewed as
  // 2-D; any other goes through matmul, whose mm keeps the batch folded into rows — a copy of a
  // non-contiguous input (the transposed input of nn.MultiheadAttention's projection). Unless
  // matmul would run a bmm on it instead (should_fold's exception), that copy is what is kept.
  const auto& st = x.strides();
  const bool bmm = x.dim() == 3 && st.back() != 1 && st.front() == x.shape()[1] * x.shape()[2];
  const Tensor& kept = x.dim() == 2 || bmm ? x : x2;
  record("AddmmBackward0", inputs, {out},
         {maybe(needs_grad(weight), kept), maybe(needs_grad(x), weight)},
         [rows, in, outf, xs = x.shape(),
          has_bias = bias.defined()](BackwardContext& c) -> TensorList {
           Tensor g = as_contiguous(c.grads[0]);
           g = g.alias({rows, outf}, {outf, 1}, g.offset());
           TensorList r(has_bias ? 3 : 2);
           if (c.needs_input_grad[0]) {
             Tensor gx = matmul2d_raw(g, c.saved[1]);
             r[0] = gx.alias(xs, contiguous_strides(xs), 0);
           }
           if (c.needs_input_grad[1]) {
             Tensor xv = as_contiguous(c.saved[0]);
             xv = xv.alias({rows, in}, {in, 1}, xv.offset());
             r[1] = matmul2d_raw(transpose_raw(g, 0, 1), xv);
           }
           if (has_bias && c.needs_input_grad[2]) r[2] = sum_dims_raw(g, {0}, false);
           return r;
         });
  return out;
}

}  // namespace ckpt
