#include "engine/kernels/kernels.hpp"

#include "engine/kernels/blas.hpp"
#include "engine/kernels/kernel_table.hpp"
#include "engine/tensor/device.hpp"
#include "engine/tensor/memory_semantics.hpp"

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <stdexcept>

namespace ckpt {

namespace {

void require_same_dtype(const Tensor& a, const Tensor& b, const char* op) {
  if (a.dtype() != b.dtype())
    throw std::invalid_argument(std::string(op) + ": dtype mismatch, " + a.str() + " and " +
                                b.str());
}

// The kernels of `out`'s device read every input: when that device computes, each input must
// live there too. A meta output reads nothing, so inputs on any device go with it (the loader
// infers shapes with meta probes and cpu constants mixed).
void require_device_of(const Tensor& out, std::initializer_list<const Tensor*> inputs,
                       const char* op) {
  if (!backend(out.device()).computes) return;
  for (const Tensor* t : inputs)
    if (t->defined() && t->device() != out.device())
      throw std::invalid_argument(std::string(op) +
                                  ": expected all tensors to be on the same device, but found "
                                  "at least two devices, " +
                                  device_name(out.device()) + " and " + device_name(t->device()));
}

}  // namespace

MatrixLayout blas_layout(const Tensor& t) {
  const auto r = t.shape()[0], c = t.shape()[1];
  const auto sr = t.strides()[0], sc = t.strides()[1];
  if ((sc == 1 || c <= 1) && (r <= 1 || sr >= std::max<std::int64_t>(c, 1)))
    return {true, false, r <= 1 ? std::max<std::int64_t>(c, 1) : sr};
  if ((sr == 1 || r <= 1) && (c <= 1 || sc >= std::max<std::int64_t>(r, 1)))
    return {true, true, c <= 1 ? std::max<std::int64_t>(r, 1) : sc};
  return {};
}

Tensor contiguous_copy(const Tensor& t) {
  Tensor out = Tensor::empty(t.shape(), t.dtype());
  require_device_of(out, {&t}, "contiguous");
  kernel_table(out.device()).copy(t, out);
  return out;
}

Tensor as_contiguous(const Tensor& t) {
  return t.is_contiguous() ? t : contiguous_copy(t);
}

Tensor cast_raw(const Tensor& t, DType to) {
  if (t.dtype() == to) return contiguous_copy(t);
  Tensor out = Tensor::empty(t.shape(), to);
  require_device_of(out, {&t}, "to");
  kernel_table(out.device()).copy(t, out);
  return out;
}

Tensor binary_raw(BinaryOp op, const Tensor& a, const Tensor& b) {
  const char* name = binary_op_name(op);
  if (a.dtype() != b.dtype() && is_floating(a.dtype()) && is_floating(b.dtype())) {
    // Type promotion (bfloat16 with float32 under autocast): the result has the wider dtype.
    // PyTorch's TensorIterator on the CPU converts the narrower operand into a temporary of the
    // wider dtype first, then makes the output (PyTorch 2.x's CUDA kernels read it in place:
    // the cuda device's semantics, issue 26, make no copy).
    const DType common = promote_floating(a.dtype(), b.dtype());
    const Tensor wa = a.dtype() == common ? a : cast_raw(a, common);
    const Tensor wb = b.dtype() == common ? b : cast_raw(b, common);
    return binary_raw(op, wa, wb);
  }
  require_same_dtype(a, b, name);
  Tensor out = Tensor::empty(broadcast_shapes(a.shape(), b.shape(), name), a.dtype());
  require_device_of(out, {&a, &b}, name);
  kernel_table(out.device()).binary(op, a, b, out);
  return out;
}

Tensor add_raw(const Tensor& a, const Tensor& b) {
  return binary_raw(BinaryOp::add, a, b);
}

Tensor sub_raw(const Tensor& a, const Tensor& b) {
  return binary_raw(BinaryOp::sub, a, b);
}

Tensor mul_raw(const Tensor& a, const Tensor& b) {
  return binary_raw(BinaryOp::mul, a, b);
}

Tensor div_raw(const Tensor& a, const Tensor& b) {
  return binary_raw(BinaryOp::div, a, b);
}

Tensor binary_scalar_raw(BinaryOp op, const Tensor& a, double s) {
  Tensor out = Tensor::empty(a.shape(), a.dtype());
  require_device_of(out, {&a}, binary_op_name(op));
  kernel_table(out.device()).binary_scalar(op, a, s, out);
  return out;
}

Tensor mul_scalar_raw(const Tensor& a, double s) {
  return binary_scalar_raw(BinaryOp::mul, a, s);
}

Tensor add_scalar_raw(const Tensor& a, double s) {
  return binary_scalar_raw(BinaryOp::add, a, s);
}

void add_inplace_raw(Tensor& acc, const Tensor& g) {
  require_same_dtype(acc, g, "add_");
  require_device_of(acc, {&g}, "add_");
  if (acc.shape() != g.shape())
    throw std::invalid_argument("add_: shape " + shape_str(g.shape()) + " does not match " +
                                shape_str(acc.shape()));
  const bool flat = acc.is_contiguous() && g.is_contiguous();
  const Tensor gc = flat ? Tensor() : as_contiguous(g);
  kernel_table(acc.device()).accumulate(acc, g, gc);
}

void fill_raw(Tensor& t, double value) {
  kernel_table(t.device()).fill(t, value);
}

void copy_into_raw(Tensor& dst, const Tensor& src) {
  if (dst.shape() != src.shape())
    throw std::invalid_argument("copy: shape " + shape_str(src.shape()) + " does not match " +
                                shape_str(dst.shape()));
  require_device_of(dst, {&src}, "copy_");
  // PyTorch's CUDA copy_ reads a strided (an expanded bias) source of any dtype in place
  // through TensorIterator (aten/src/ATen/native/cuda/Copy.cu): no temporary. The kernel
  // table's copy takes strided sources and converts dtypes, so it is handed the source as is.
  const bool in_place = memory_semantics(dst.device()).kernels == KernelAllocations::pytorch_cuda;
  Tensor s = in_place                     ? src
             : src.dtype() == dst.dtype() ? as_contiguous(src)
                                          : cast_raw(src, dst.dtype());
  kernel_table(dst.device()).copy(s, dst);
}

Tensor sum_dims_raw(const Tensor& t, const std::vector<std::int64_t>& dims_in, bool keepdim) {
  const auto nd = t.dim();
  const std::vector<bool> reduce = reduced_dims(dims_in, nd, "sum");
  Shape out_shape;
  for (std::int64_t d = 0; d < nd; ++d) {
    const auto k = static_cast<std::size_t>(d);
    if (!reduce[k]) {
      out_shape.push_back(t.shape()[k]);
    } else if (keepdim) {
      out_shape.push_back(1);
    }
  }
  Tensor out = Tensor::zeros(out_shape, t.dtype());
  if (t.numel() == 0) return out;
  require_device_of(out, {&t}, "sum");
  const Tensor c = as_contiguous(t);
  kernel_table(out.device()).sum(c, reduce, out);
  return out;
}

Tensor sum_to_raw(const Tensor& t, const Shape& shape) {
  if (t.shape() == shape) return t;
  const auto nd = t.dim();
  const auto lead = nd - static_cast<std::int64_t>(shape.size());
  if (lead < 0)
    throw std::invalid_argument("sum_to: cannot reduce " + shape_str(t.shape()) + " to " +
                                shape_str(shape));
  std::vector<std::int64_t> dims;
  for (std::int64_t d = 0; d < nd; ++d) {
    if (d < lead) {
      dims.push_back(d);
    } else if (shape[static_cast<std::size_t>(d - lead)] == 1 &&
               t.shape()[static_cast<std::size_t>(d)] != 1) {
      dims.push_back(d);
    }
  }
  Tensor s = sum_dims_raw(t, dims, true);
  // Drop the leading dims and keep size-1 dims where `shape` has them.
  return s.alias(shape, contiguous_strides(shape), s.offset());
}

Tensor expand_raw(const Tensor& t, const Shape& shape) {
  const std::size_t nd = shape.size();
  if (t.shape().size() > nd)
    throw std::invalid_argument("expand: cannot expand " + shape_str(t.shape()) + " to " +
                                shape_str(shape));
  Strides st(nd, 0);
  const std::size_t lead = nd - t.shape().size();
  for (std::size_t d = 0; d < t.shape().size(); ++d) {
    const auto have = t.shape()[d];
    const auto want = shape[lead + d];
    if (have == want) {
      st[lead + d] = t.strides()[d];
    } else if (have != 1) {
      throw std::invalid_argument("expand: the expanded size of the tensor (" +
                                  std::to_string(want) + ") must match the existing size (" +
                                  std::to_string(have) + ") at non-singleton dimension " +
                                  std::to_string(lead + d) + ". Target sizes: " + shape_str(shape) +
                                  ". Tensor sizes: " + shape_str(t.shape()));
    }
  }
  return t.alias(shape, st, t.offset());
}

void gemm_raw(const Tensor& a, const Tensor& b, Tensor& c, bool accumulate) {
  if (a.dim() != 2 || b.dim() != 2 || c.dim() != 2 || a.shape()[1] != b.shape()[0] ||
      c.shape()[0] != a.shape()[0] || c.shape()[1] != b.shape()[1])
    throw std::invalid_argument("mm: shapes " + shape_str(a.shape()) + " and " +
                                shape_str(b.shape()) + " cannot be multiplied");
  require_same_dtype(a, b, "mm");
  require_device_of(c, {&a, &b}, "mm");
  if (!is_floating(a.dtype())) no_kernel_for("mm", a.dtype());
  if (c.numel() == 0) return;  // [m, 0] or [0, n]: nothing to write, whatever its strides
  if (!c.is_contiguous()) throw std::logic_error("gemm_raw: output must be contiguous");
  // Row-major operands go as they are, column-major ones as transposed row-major; anything
  // else is copied first, on every device alike (a dry run makes the same copies).
  auto operand = [](const Tensor& t) { return blas_layout(t).ok ? t : contiguous_copy(t); };
  const Tensor pa = operand(a);
  const Tensor pb = operand(b);
  kernel_table(c.device()).gemm(pa, pb, c, accumulate);
}

Tensor matmul2d_raw(const Tensor& a, const Tensor& b) {
  Tensor c = Tensor::empty({a.shape()[0], b.shape().at(1)}, a.dtype());
  gemm_raw(a, b, c);
  return c;
}

Tensor transpose_raw(const Tensor& t, std::int64_t d0, std::int64_t d1) {
  d0 = wrap_dim(d0, t.dim(), "transpose");
  d1 = wrap_dim(d1, t.dim(), "transpose");
  if (t.dim() == 0) return t.alias(t.shape(), t.strides(), t.offset());  // dim 0 or -1: itself
  Shape s = t.shape();
  Strides st = t.strides();
  std::swap(s[static_cast<std::size_t>(d0)], s[static_cast<std::size_t>(d1)]);
  std::swap(st[static_cast<std::size_t>(d0)], st[static_cast<std::size_t>(d1)]);
  return t.alias(s, st, t.offset());
}

}  // namespace ckpt
