#include "engine/ops/matmul.hpp"

#include <stdexcept>

#include "engine/autograd/node.hpp"
#include "engine/ops/elementwise.hpp"
#include "engine/ops/kernels.hpp"

namespace ckpt {

namespace {

Tensor maybe(bool keep, const Tensor& t) {
  return keep ? t : Tensor();
}

// Batched product over broadcast batch dims of a [..., m, k] and b [..., k, n].
Tensor batched_matmul_raw(const Tensor& a, const Tensor& b) {
  const auto m = a.shape()[a.shape().size() - 2];
  const auto k = a.shape().back();
  const auto k2 = b.shape()[b.shape().size() - 2];
  const auto n = b.shape().back();
  if (k != k2)
    throw std::invalid_argument("matmul: shapes " + shape_str(a.shape()) + " and " +
                                shape_str(b.shape()) + " cannot be multiplied (" +
                                std::to_string(k) + " != " + std::to_string(k2) + ")");
  const Shape ba(a.shape().begin(), a.shape().end() - 2);
  const Shape bb(b.shape().begin(), b.shape().end() - 2);
  const Shape batch = broadcast_shapes(ba, bb, "matmul");
  Shape ea = batch, eb = batch, out_shape = batch;
  ea.insert(ea.end(), {m, k});
  eb.insert(eb.end(), {k, n});
  out_shape.insert(out_shape.end(), {m, n});
  const Tensor xa = expand_raw(a, ea);
  const Tensor xb = expand_raw(b, eb);
  Tensor out = Tensor::empty(out_shape, a.dtype());
  const std::int64_t count = shape_numel(batch);
  const auto nb = static_cast<std::int64_t>(batch.size());
  const Strides ostr = contiguous_strides(batch);
  for (std::int64_t i = 0; i < count; ++i) {
    std::int64_t oa = xa.offset(), ob = xb.offset(), rem = i;
    for (std::int64_t d = 0; d < nb; ++d) {
      const auto idx = rem / ostr[static_cast<std::size_t>(d)];
      rem %= ostr[static_cast<std::size_t>(d)];
      oa += idx * xa.strides()[static_cast<std::size_t>(d)];
      ob += idx * xb.strides()[static_cast<std::size_t>(d)];
    }
    const std::size_t r = static_cast<std::size_t>(nb);
    Tensor sa = xa.alias({m, k}, {xa.strides()[r], xa.strides()[r + 1]}, oa);
    Tensor sb = xb.alias({k, n}, {xb.strides()[r], xb.strides()[r + 1]}, ob);
    Tensor so = out.alias({m, n}, {n, 1}, i * m * n);
    gemm_raw(sa, sb, so);
  }
  return out;
}

Tensor batched_or_2d(const Tensor& a, const Tensor& b) {
  return a.dim() == 2 && b.dim() == 2 ? matmul2d_raw(a, b) : batched_matmul_raw(a, b);
}

}  // namespace

Tensor matmul(const Tensor& a_in, const Tensor& b_in) {
  OpScope op("matmul");
  if (a_in.dim() == 0 || b_in.dim() == 0)
    throw std::invalid_argument("matmul: both arguments need at least 1 dimension, got " +
                                shape_str(a_in.shape()) + " and " + shape_str(b_in.shape()));
  if (a_in.dtype() != b_in.dtype())
    throw std::invalid_argument("matmul: dtype mismatch, " + a_in.str() + " and " + b_in.str());
  // 1-D operands: promote, multiply, squeeze (through views, which record no saves).
  const bool a1 = a_in.dim() == 1, b1 = b_in.dim() == 1;
  Tensor a = a1 ? a_in.alias({1, a_in.shape()[0]}, {0, a_in.strides()[0]}, a_in.offset()) : a_in;
  Tensor b = b1 ? b_in.alias({b_in.shape()[0], 1}, {b_in.strides()[0], 0}, b_in.offset()) : b_in;
  const bool two_d = a.dim() == 2 && b.dim() == 2;
  Tensor out = two_d ? matmul2d_raw(a, b) : batched_matmul_raw(a, b);
  if (two_d && a.shape()[1] != b.shape()[0])
    throw std::invalid_argument("matmul: shapes " + shape_str(a_in.shape()) + " and " +
                                shape_str(b_in.shape()) + " cannot be multiplied");
  Shape final_shape = out.shape();
  if (b1) final_shape.pop_back();
  if (a1) final_shape.erase(final_shape.end() - (b1 ? 1 : 2));
  out = out.alias(final_shape, contiguous_strides(final_shape), 0);
  record(two_d ? "MmBackward0" : "BmmBackward0", {a_in, b_in}, {out},
         {maybe(needs_grad(b_in), a_in), maybe(needs_grad(a_in), b_in)},
         [sa = a.shape(), sb = b.shape(), a1, b1, ashape = a_in.shape(),
          bshape = b_in.shape()](BackwardContext& c) -> TensorList {
           // Restore the promoted shapes, then dA = dC @ B^T and dB = A^T @ dC.
           Tensor g = as_contiguous(c.grads[0]);
           Shape gs = sa;
           gs.back() = sb.back();
           if (sa.size() != sb.size() || sa.size() > 2) {
             gs = broadcast_shapes(Shape(sa.begin(), sa.end() - 2), Shape(sb.begin(), sb.end() - 2),
                                   "matmul");
             gs.push_back(sa[sa.size() - 2]);
             gs.push_back(sb.back());
           }
           g = g.alias(gs, contiguous_strides(gs), g.offset());
           Tensor ga, gb;
           if (c.needs_input_grad[0]) {
             const Tensor& bv = c.saved[1];
             Tensor bp = b1 ? bv.alias({bv.shape()[0], 1}, {bv.strides()[0], 0}, bv.offset()) : bv;
             Tensor r = batched_or_2d(g, transpose_raw(bp, -1, -2));
             ga = sum_to_raw(r, sa);
             ga = as_contiguous(ga).alias(ashape, contiguous_strides(ashape), 0);
           }
           if (c.needs_input_grad[1]) {
             const Tensor& av = c.saved[0];
             Tensor ap = a1 ? av.alias({1, av.shape()[0]}, {0, av.strides()[0]}, av.offset()) : av;
             Tensor r = batched_or_2d(transpose_raw(ap, -1, -2), g);
             gb = sum_to_raw(r, sb);
             gb = as_contiguous(gb).alias(bshape, contiguous_strides(bshape), 0);
           }
           return {ga, gb};
         });
  return out;
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
  Tensor out = Tensor::empty({rows, outf}, x.dtype());
  if (bias.defined()) {
    if (bias.shape() != Shape{outf})
      throw std::invalid_argument("linear: bias " + shape_str(bias.shape()) +
                                  " does not match out_features " + std::to_string(outf));
    Tensor rowb = expand_raw(bias, {rows, outf});
    copy_into_raw(out, rowb);
    gemm_raw(x2, transpose_raw(weight, 0, 1), out, true);
  } else {
    gemm_raw(x2, transpose_raw(weight, 0, 1), out, false);
  }
  out = out.alias(out_shape, contiguous_strides(out_shape), 0);
  TensorList inputs{x, weight};
  if (bias.defined()) inputs.push_back(bias);
  record("AddmmBackward0", inputs, {out},
         {maybe(needs_grad(weight), x), maybe(needs_grad(x), weight)},
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
