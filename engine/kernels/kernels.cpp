#include "engine/kernels/kernels.hpp"

#include "engine/kernels/blas.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace ckpt {

namespace {

void require_same_dtype(const Tensor& a, const Tensor& b, const char* op) {
  if (a.dtype() != b.dtype())
    throw std::invalid_argument(std::string(op) + ": dtype mismatch, " + a.str() + " and " +
                                b.str());
}

// A 2-D operand as BLAS sees it: row-major with a leading dimension (unit column stride), or
// column-major likewise (a transposed row-major block); anything else must be copied.
struct MatrixLayout {
  bool ok = false;
  bool trans = false;
  std::int64_t ld = 1;
};
MatrixLayout layout_of(const Tensor& t) {
  const auto r = t.shape()[0], c = t.shape()[1];
  const auto sr = t.strides()[0], sc = t.strides()[1];
  if ((sc == 1 || c <= 1) && (r <= 1 || sr >= std::max<std::int64_t>(c, 1)))
    return {true, false, r <= 1 ? std::max<std::int64_t>(c, 1) : sr};
  if ((sr == 1 || r <= 1) && (c <= 1 || sc >= std::max<std::int64_t>(r, 1)))
    return {true, true, c <= 1 ? std::max<std::int64_t>(r, 1) : sc};
  return {};
}

}  // namespace

Tensor contiguous_copy(const Tensor& t) {
  Tensor out = Tensor::empty(t.shape(), t.dtype());
  if (out.is_meta()) return out;
  dispatch_all(t.dtype(), [&]<typename T>() {
    T* o = out.data<T>();
    const T* p = t.data<T>();
    if (t.is_contiguous()) {
      if (t.numel()) std::memcpy(o, p, static_cast<std::size_t>(t.nbytes()));
    } else {
      for_each_offset(t, [&](std::int64_t off, std::int64_t i) { o[i] = p[off]; });
    }
  });
  return out;
}

Tensor as_contiguous(const Tensor& t) {
  return t.is_contiguous() ? t : contiguous_copy(t);
}

Tensor cast_raw(const Tensor& t, DType to) {
  if (t.dtype() == to) return contiguous_copy(t);
  Tensor out = Tensor::empty(t.shape(), to);
  if (out.is_meta()) return out;
  dispatch_all(t.dtype(), [&]<typename S>() {
    dispatch_all(to, [&]<typename D>() {
      D* o = out.data<D>();
      const S* p = t.data<S>();
      for_each_offset(t, [&](std::int64_t off, std::int64_t i) { o[i] = static_cast<D>(p[off]); });
    });
  });
  return out;
}

Tensor add_raw(const Tensor& a, const Tensor& b) {
  require_same_dtype(a, b, "add");
  return dispatch_all(a.dtype(), [&]<typename T>() {
    return binary_map<T>(
        a, b, [](T x, T y) { return x + y; }, "add");
  });
}

Tensor sub_raw(const Tensor& a, const Tensor& b) {
  require_same_dtype(a, b, "sub");
  return dispatch_all(a.dtype(), [&]<typename T>() {
    return binary_map<T>(
        a, b, [](T x, T y) { return x - y; }, "sub");
  });
}

Tensor mul_raw(const Tensor& a, const Tensor& b) {
  require_same_dtype(a, b, "mul");
  return dispatch_all(a.dtype(), [&]<typename T>() {
    return binary_map<T>(
        a, b, [](T x, T y) { return x * y; }, "mul");
  });
}

Tensor div_raw(const Tensor& a, const Tensor& b) {
  require_same_dtype(a, b, "div");
  return dispatch_all(a.dtype(), [&]<typename T>() {
    return binary_map<T>(
        a, b, [](T x, T y) { return x / y; }, "div");
  });
}

Tensor mul_scalar_raw(const Tensor& a, double s) {
  return dispatch_all(a.dtype(), [&]<typename T>() {
    const T v = static_cast<T>(s);
    return unary_map<T>(a, [v](T x) { return x * v; });
  });
}

Tensor add_scalar_raw(const Tensor& a, double s) {
  return dispatch_all(a.dtype(), [&]<typename T>() {
    const T v = static_cast<T>(s);
    return unary_map<T>(a, [v](T x) { return x + v; });
  });
}

void add_inplace_raw(Tensor& acc, const Tensor& g) {
  require_same_dtype(acc, g, "add_");
  if (acc.shape() != g.shape())
    throw std::invalid_argument("add_: shape " + shape_str(g.shape()) + " does not match " +
                                shape_str(acc.shape()));
  const bool flat = acc.is_contiguous() && g.is_contiguous();
  const Tensor gc = flat ? Tensor() : as_contiguous(g);
  if (acc.is_meta() || g.is_meta()) return;
  dispatch_all(acc.dtype(), [&]<typename T>() {
    T* o = acc.data<T>();
    const std::int64_t n = acc.numel();
    if (flat) {
      const T* p = g.data<T>();
      parallel_for(n, [&](std::int64_t i) { o[i] += p[i]; });
    } else {
      const T* q = gc.data<T>();
      for_each_offset(acc, [&](std::int64_t off, std::int64_t i) { o[off] += q[i]; });
    }
  });
}

void fill_raw(Tensor& t, double value) {
  if (t.is_meta()) return;
  dispatch_all(t.dtype(), [&]<typename T>() {
    T* o = t.data<T>();
    const T v = static_cast<T>(value);
    for_each_offset(t, [&](std::int64_t off, std::int64_t) { o[off] = v; });
  });
}

void copy_into_raw(Tensor& dst, const Tensor& src) {
  if (dst.shape() != src.shape())
    throw std::invalid_argument("copy: shape " + shape_str(src.shape()) + " does not match " +
                                shape_str(dst.shape()));
  Tensor s = src.dtype() == dst.dtype() ? as_contiguous(src) : cast_raw(src, dst.dtype());
  if (dst.is_meta() || s.is_meta()) return;
  dispatch_all(dst.dtype(), [&]<typename T>() {
    T* o = dst.data<T>();
    const T* p = s.data<T>();
    for_each_offset(dst, [&](std::int64_t off, std::int64_t i) { o[off] = p[i]; });
  });
}

Tensor sum_dims_raw(const Tensor& t, const std::vector<std::int64_t>& dims_in, bool keepdim) {
  const auto nd = t.dim();
  std::vector<bool> reduce(static_cast<std::size_t>(nd), dims_in.empty());
  for (auto d : dims_in) reduce[static_cast<std::size_t>(wrap_dim(d, nd, "sum"))] = true;
  Shape kept_shape = t.shape();
  Shape out_shape;
  for (std::int64_t d = 0; d < nd; ++d) {
    const auto k = static_cast<std::size_t>(d);
    if (reduce[k]) {
      kept_shape[k] = 1;
      if (keepdim) out_shape.push_back(1);
    } else {
      out_shape.push_back(t.shape()[k]);
    }
  }
  Tensor out = Tensor::zeros(out_shape, t.dtype());
  const std::int64_t n = t.numel();
  if (n == 0) return out;
  const Tensor c = as_contiguous(t);
  if (out.is_meta() || c.is_meta()) return out;
  dispatch_all(t.dtype(), [&]<typename T>() {
    T* o = out.data<T>();
    const T* p = c.data<T>();
    // Fast paths on the contiguous input: all, a prefix of dims, or a suffix of dims.
    std::int64_t prefix = 0;
    while (prefix < nd && reduce[static_cast<std::size_t>(prefix)]) ++prefix;
    std::int64_t suffix = 0;
    while (suffix < nd && reduce[static_cast<std::size_t>(nd - 1 - suffix)]) ++suffix;
    std::int64_t reduced_count = 0;
    for (auto r : reduce) reduced_count += r;
    if (reduced_count == nd) {
      double acc = 0;
      if (n > kParallelGrain) {
#pragma omp parallel for reduction(+ : acc) schedule(static)
        for (std::int64_t i = 0; i < n; ++i) acc += static_cast<double>(p[i]);
      } else {
        for (std::int64_t i = 0; i < n; ++i) acc += static_cast<double>(p[i]);
      }
      o[0] = static_cast<T>(acc);
      return;
    }
    if (prefix == reduced_count) {
      std::int64_t rows = 1;
      for (std::int64_t d = 0; d < prefix; ++d) rows *= t.shape()[static_cast<std::size_t>(d)];
      const std::int64_t cols = n / rows;
#pragma omp parallel for if (n > kParallelGrain) schedule(static)
      for (std::int64_t j = 0; j < cols; ++j) {
        T acc = 0;
        for (std::int64_t r = 0; r < rows; ++r) acc += p[r * cols + j];
        o[j] = acc;
      }
      return;
    }
    if (suffix == reduced_count) {
      std::int64_t cols = 1;
      for (std::int64_t d = nd - suffix; d < nd; ++d)
        cols *= t.shape()[static_cast<std::size_t>(d)];
      const std::int64_t rows = n / cols;
#pragma omp parallel for if (n > kParallelGrain) schedule(static)
      for (std::int64_t r = 0; r < rows; ++r) {
        double acc = 0;
        for (std::int64_t j = 0; j < cols; ++j) acc += static_cast<double>(p[r * cols + j]);
        o[r] = static_cast<T>(acc);
      }
      return;
    }
    // General case: output strides are 0 on reduced dims.
    const Strides ks = contiguous_strides(kept_shape);
    std::vector<std::int64_t> ostride(static_cast<std::size_t>(nd));
    for (std::size_t k = 0; k < ostride.size(); ++k) ostride[k] = reduce[k] ? 0 : ks[k];
    std::vector<std::int64_t> idx(static_cast<std::size_t>(nd), 0);
    std::int64_t off = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      o[off] += p[i];
      for (auto d = nd - 1; d >= 0; --d) {
        const auto k = static_cast<std::size_t>(d);
        if (++idx[k] < t.shape()[k]) {
          off += ostride[k];
          break;
        }
        off -= ostride[k] * (t.shape()[k] - 1);
        idx[k] = 0;
      }
    }
  });
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
  if (c.numel() == 0) return;  // [m, 0] or [0, n]: nothing to write, whatever its strides
  if (!c.is_contiguous()) throw std::logic_error("gemm_raw: output must be contiguous");
  dispatch_floating(a.dtype(), "mm", [&]<typename T>() {
    // Row-major operands go as they are, column-major ones as transposed row-major; anything
    // else is copied first.
    auto operand = [](const Tensor& t, Tensor& keep, bool& trans, std::int64_t& ld) -> const T* {
      const MatrixLayout l = layout_of(t);
      if (l.ok) {
        trans = l.trans;
        ld = l.ld;
        return t.is_meta() ? nullptr : t.data<T>();
      }
      keep = contiguous_copy(t);
      trans = false;
      ld = std::max<std::int64_t>(t.shape()[1], 1);
      return keep.is_meta() ? nullptr : keep.data<T>();
    };
    Tensor ka, kb;
    bool ta = false, tb = false;
    std::int64_t lda = 1, ldb = 1;
    const T* pa = operand(a, ka, ta, lda);
    const T* pb = operand(b, kb, tb, ldb);
    if (!pa || !pb || c.is_meta()) return;  // a dry run: the copies are made, no product
    gemm_rm<T>(ta, tb, a.shape()[0], b.shape()[1], a.shape()[1], T(1), pa, lda, pb, ldb,
               accumulate ? T(1) : T(0), c.data<T>(), std::max<std::int64_t>(c.shape()[1], 1));
  });
}

Tensor matmul2d_raw(const Tensor& a, const Tensor& b) {
  Tensor c = Tensor::empty({a.shape()[0], b.shape().at(1)}, a.dtype());
  gemm_raw(a, b, c);
  return c;
}

Tensor transpose_raw(const Tensor& t, std::int64_t d0, std::int64_t d1) {
  d0 = wrap_dim(d0, t.dim(), "transpose");
  d1 = wrap_dim(d1, t.dim(), "transpose");
  Shape s = t.shape();
  Strides st = t.strides();
  std::swap(s[static_cast<std::size_t>(d0)], s[static_cast<std::size_t>(d1)]);
  std::swap(st[static_cast<std::size_t>(d0)], st[static_cast<std::size_t>(d1)]);
  return t.alias(s, st, t.offset());
}

}  // namespace ckpt
