#pragma once

// Raw kernels: no autograd, no steps. The autograd ops and backward functions are built on
// these. Outputs come from the current ledger, on the current device; the arithmetic of the
// non-template entry points goes through their tensors' device's kernel table
// (kernel_table.hpp). The templates below are host loops.

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/kernels/kernel_table.hpp"
#include "engine/tensor/tensor.hpp"

namespace ckpt {

// Loops longer than this are split across OpenMP threads.
inline constexpr std::int64_t kParallelGrain = 32768;

// body(i) for every i in [0, n): across OpenMP threads when n passes the grain, else inline.
// An OpenMP region whose `if` clause is false still sets up a team of one, which costs about
// as much as a whole scalar op (HeavyModel's 200,000 steps are all such ops).
template <typename F>
inline void parallel_for(std::int64_t n, F&& body) {
  if (n > kParallelGrain) {
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) body(i);
  } else {
    for (std::int64_t i = 0; i < n; ++i) body(i);
  }
}

// body(i) for every i in [0, n) on a team of `threads` OpenMP threads, or inline when one.
// Not an `if (threads > 1)` clause: a region whose `if` is false is still a nesting level, and
// libgomp gives every parallel region inside it (a GEMM's, im2col's) a team of newly created
// threads, each time. At batch 1 on two threads that made ResNet's 3x3 convolutions 5-8 times
// slower than on one thread.
template <typename F>
inline void parallel_for_threads(std::int64_t n, int threads, F&& body) {
  if (threads > 1) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) body(i);
  } else {
    for (std::int64_t i = 0; i < n; ++i) body(i);
  }
}

// for_each_offset (offsets from t's first element) for a permuted tensor (a transpose's view: some
// dimension `a` has stride 1, the last one does not), in 32 x 32 blocks of (a, last) so that both
// the strided reads and the row-major writes stay in cache, blocks across threads: f(offset, i)
// once for every element, in no particular order. Read element by element in row-major order, a [L,
// 512] transposed view misses the cache on every element (wav2vec's LayerNorm over channels: 32,000
// x 512). False, and nothing visited, when t is not such a view or is small.
template <typename F>
bool for_each_offset_transposed(const Tensor& t, F&& f) {
  const Shape& shape = t.shape();
  const Strides& st = t.strides();
  const auto rank = static_cast<int>(shape.size());
  if (rank < 2 || t.numel() < kParallelGrain || st[static_cast<std::size_t>(rank - 1)] == 1)
    return false;
  int a = -1;
  for (int d = rank - 2; d >= 0; --d)
    if (st[static_cast<std::size_t>(d)] == 1 && shape[static_cast<std::size_t>(d)] > 1) a = d;
  if (a < 0) return false;
  constexpr std::int64_t kBlock = 32;
  const auto ua = static_cast<std::size_t>(a), uz = static_cast<std::size_t>(rank - 1);
  const std::int64_t na = shape[ua], nz = shape[uz], sz = st[uz];
  // Row-major strides of the visiting order (the contiguous layout of t's shape).
  std::vector<std::int64_t> dense(shape.size(), 1);
  for (int d = rank - 2; d >= 0; --d)
    dense[static_cast<std::size_t>(d)] =
        dense[static_cast<std::size_t>(d + 1)] * shape[static_cast<std::size_t>(d + 1)];
  const std::int64_t outer = t.numel() / (na * nz), blocks_a = (na + kBlock - 1) / kBlock;
  // One job: a row of blocks (kBlock values of dimension a, every value of the last).
  const std::int64_t jobs = outer * blocks_a;
  parallel_for_threads(jobs, omp_in_parallel() ? 1 : omp_get_max_threads(), [&](std::int64_t job) {
    const std::int64_t o = job / blocks_a, a0 = job % blocks_a * kBlock;
    std::int64_t off = 0, idx = 0, rest = o;
    for (int d = rank - 2; d >= 0; --d) {
      if (d == a) continue;
      const auto ud = static_cast<std::size_t>(d);
      const std::int64_t i = rest % shape[ud];
      rest /= shape[ud];
      off += i * st[ud];
      idx += i * dense[ud];
    }
    const std::int64_t a1 = std::min(na, a0 + kBlock);
    for (std::int64_t z0 = 0; z0 < nz; z0 += kBlock) {
      const std::int64_t z1 = std::min(nz, z0 + kBlock);
      for (std::int64_t ia = a0; ia < a1; ++ia)
        for (std::int64_t iz = z0; iz < z1; ++iz) f(off + ia + iz * sz, idx + ia * dense[ua] + iz);
    }
  });
  return true;
}

Tensor contiguous_copy(const Tensor& t);
// t itself when already contiguous, else a contiguous copy.
Tensor as_contiguous(const Tensor& t);
Tensor cast_raw(const Tensor& t, DType to);
// a op b with NumPy broadcasting (the four below are its rows).
Tensor binary_raw(BinaryOp op, const Tensor& a, const Tensor& b);
Tensor add_raw(const Tensor& a, const Tensor& b);
Tensor sub_raw(const Tensor& a, const Tensor& b);
Tensor mul_raw(const Tensor& a, const Tensor& b);
Tensor div_raw(const Tensor& a, const Tensor& b);
Tensor binary_scalar_raw(BinaryOp op, const Tensor& a, double s);
Tensor mul_scalar_raw(const Tensor& a, double s);
Tensor add_scalar_raw(const Tensor& a, double s);
void add_inplace_raw(Tensor& acc, const Tensor& g);
void fill_raw(Tensor& t, double value);
void copy_into_raw(Tensor& dst, const Tensor& src);  // same shape; dst may be a view
// Sums `t` down to `shape` (the reverse of broadcasting).
Tensor sum_to_raw(const Tensor& t, const Shape& shape);
// Sum over `dims` (empty: all), keeping reduced dims as size 1 when keepdim.
Tensor sum_dims_raw(const Tensor& t, const std::vector<std::int64_t>& dims, bool keepdim);
Tensor expand_raw(const Tensor& t, const Shape& shape);  // a broadcast view (stride 0)
// C = A @ B for 2-D tensors (any strides), with optional accumulation into C.
void gemm_raw(const Tensor& a, const Tensor& b, Tensor& c, bool accumulate = false);
// A 2-D operand as BLAS sees it: row-major with a leading dimension (unit column stride), or
// column-major likewise (a transposed row-major block); anything else (ok false) is copied
// before a product.
struct MatrixLayout {
  bool ok = false;
  bool trans = false;
  std::int64_t ld = 1;
};
MatrixLayout blas_layout(const Tensor& t);
Tensor matmul2d_raw(const Tensor& a, const Tensor& b);
Tensor transpose_raw(const Tensor& t, std::int64_t d0, std::int64_t d1);  // a view

// The data of `t`, or nullptr when `t` is undefined or `live` is false (a dry run on the meta
// device, where kernels make every buffer and skip the arithmetic).
template <typename T>
T* data_or_null(const Tensor& t, bool live = true) {
  return live && t.defined() && !t.is_meta() ? t.data<T>() : nullptr;
}

// Visits every element of a (possibly strided) tensor in row-major order: f(offset, i).
template <typename F>
void for_each_offset(const Tensor& t, F&& f) {
  const auto& s = t.shape();
  const auto& st = t.strides();
  const std::int64_t n = t.numel();
  if (n == 0) return;
  if (t.is_contiguous()) {
    for (std::int64_t i = 0; i < n; ++i) f(i, i);
    return;
  }
  const std::size_t nd = s.size();
  std::vector<std::int64_t> idx(nd, 0);
  std::int64_t off = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    f(off, i);
    for (auto d = static_cast<std::int64_t>(nd) - 1; d >= 0; --d) {
      const auto k = static_cast<std::size_t>(d);
      if (++idx[k] < s[k]) {
        off += st[k];
        break;
      }
      off -= st[k] * (s[k] - 1);
      idx[k] = 0;
    }
  }
}

// out = f(x) elementwise into `out`, a contiguous tensor of x's shape (host memory).
template <typename T, typename F>
void unary_map_into(const Tensor& x, Tensor& out, F&& f) {
  T* o = out.data<T>();
  const T* p = x.data<T>();
  const std::int64_t n = x.numel();
  if (x.is_contiguous()) {
    parallel_for(n, [&](std::int64_t i) { o[i] = f(p[i]); });
  } else if (!for_each_offset_transposed(
                 x, [&](std::int64_t off, std::int64_t i) { o[i] = f(p[off]); })) {
    for_each_offset(x, [&](std::int64_t off, std::int64_t i) { o[i] = f(p[off]); });
  }
}

// out = f(x) elementwise; out is a new contiguous tensor of x's shape and dtype.
template <typename T, typename F>
Tensor unary_map(const Tensor& x, F&& f) {
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  if (out.is_meta()) return out;
  unary_map_into<T>(x, out, f);
  return out;
}

// out = f(a, b) with NumPy broadcasting into `out`, a contiguous tensor of the broadcast shape
// (host memory); a and b have out's dtype.
template <typename T, typename F>
void binary_map_into(const Tensor& a, const Tensor& b, Tensor& out, F&& f) {
  const Shape& shape = out.shape();
  T* o = out.data<T>();
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  const std::int64_t n = out.numel();
  if (n == 0) return;
  if (a.shape() == b.shape() && a.is_contiguous() && b.is_contiguous()) {
    parallel_for(n, [&](std::int64_t i) { o[i] = f(pa[i], pb[i]); });
    return;
  }
  if (b.numel() == 1 && a.shape() == shape && a.is_contiguous()) {
    const T vb = pb[0];
    parallel_for(n, [&](std::int64_t i) { o[i] = f(pa[i], vb); });
    return;
  }
  if (a.numel() == 1 && b.shape() == shape && b.is_contiguous()) {
    const T va = pa[0];
    parallel_for(n, [&](std::int64_t i) { o[i] = f(va, pb[i]); });
    return;
  }
  // General broadcast: strides aligned to the output, 0 on broadcast dimensions.
  const std::size_t nd = shape.size();
  auto aligned = [&](const Tensor& t) {
    std::vector<std::int64_t> st(nd, 0);
    const std::size_t lead = nd - t.shape().size();
    for (std::size_t d = 0; d < t.shape().size(); ++d)
      st[lead + d] = t.shape()[d] == 1 ? 0 : t.strides()[d];
    return st;
  };
  const auto sa = aligned(a);
  const auto sb = aligned(b);
  const std::int64_t inner = nd ? shape[nd - 1] : 1;
  const std::int64_t ia = nd ? sa[nd - 1] : 0;
  const std::int64_t ib = nd ? sb[nd - 1] : 0;
  const std::int64_t outer = n / inner;
  parallel_for(outer, [&](std::int64_t r) {
    std::int64_t rem = r;
    std::int64_t offa = 0, offb = 0;
    for (auto d = static_cast<std::int64_t>(nd) - 2; d >= 0; --d) {
      const auto k = static_cast<std::size_t>(d);
      const std::int64_t i = rem % shape[k];
      rem /= shape[k];
      offa += i * sa[k];
      offb += i * sb[k];
    }
    T* orow = o + r * inner;
    for (std::int64_t j = 0; j < inner; ++j) orow[j] = f(pa[offa + j * ia], pb[offb + j * ib]);
  });
}

// out = f(a, b) with NumPy broadcasting; a and b have the same dtype.
template <typename T, typename F>
Tensor binary_map(const Tensor& a, const Tensor& b, F&& f, const char* op) {
  Tensor out = Tensor::empty(broadcast_shapes(a.shape(), b.shape(), op), a.dtype());
  if (out.is_meta()) return out;
  binary_map_into<T>(a, b, out, f);
  return out;
}

}  // namespace ckpt
