// The cpu kernel table: Eigen's GEMM and OpenMP loops over host memory.
#include <omp.h>

#include <cstring>
#include <vector>

#include "engine/kernels/blas.hpp"
#include "engine/kernels/kernel_table.hpp"
#include "engine/kernels/kernels.hpp"

namespace ckpt {

namespace {

// Copies by blocks where src and dst share contiguous innermost dimensions (cat's regions of
// an NCHW tensor along channels, CatBackward's slices: one block per image), in parallel when
// large; false where the blocks would be too short to pay. Element by element, DenseNet-121's
// concatenations and their gradients took 240 ms of its 224² batch-8 step on one thread or two.
template <typename T>
bool copy_blocks(const Tensor& src, Tensor& dst) {
  const Shape& shape = dst.shape();
  const auto rank = static_cast<int>(shape.size());
  std::int64_t inner = 1;
  int k = rank - 1;
  for (; k >= 0; --k) {
    const auto d = static_cast<std::size_t>(k);
    if (shape[d] == 1) continue;
    if (src.strides()[d] != inner || dst.strides()[d] != inner) break;
    inner *= shape[d];
  }
  constexpr std::int64_t kMinBlockBytes = 256;
  if (k < 0 || inner * static_cast<std::int64_t>(sizeof(T)) < kMinBlockBytes) return false;
  std::int64_t outer = 1;
  for (int j = 0; j <= k; ++j) outer *= shape[static_cast<std::size_t>(j)];
  const T* from = src.data<T>();
  T* to = dst.data<T>();
  const auto block = [&](std::int64_t b) {
    std::int64_t so = 0, dof = 0, rest = b;
    for (int j = k; j >= 0; --j) {
      const auto d = static_cast<std::size_t>(j);
      const std::int64_t i = rest % shape[d];
      rest /= shape[d];
      so += i * src.strides()[d];
      dof += i * dst.strides()[d];
    }
    std::memcpy(to + dof, from + so, static_cast<std::size_t>(inner) * sizeof(T));
  };
  const bool parallel = outer * inner > 8 * kParallelGrain && !omp_in_parallel();
  parallel_for_threads(outer, parallel ? omp_get_max_threads() : 1, block);
  return true;
}

void cpu_copy(const Tensor& src, Tensor& dst) {
  dispatch_any(src.dtype(), [&]<typename S>() {
    dispatch_any(dst.dtype(), [&]<typename D>() {
      const S* p = src.data<S>();
      D* o = dst.data<D>();
      if constexpr (std::is_same_v<S, D>) {
        if (src.is_contiguous() && dst.is_contiguous()) {
          if (src.numel()) std::memcpy(o, p, static_cast<std::size_t>(src.nbytes()));
          return;
        }
        if (src.numel() > 0 && copy_blocks<S>(src, dst)) return;
      }
      if (dst.is_contiguous()) {
        for_each_offset(src,
                        [&](std::int64_t off, std::int64_t i) { o[i] = static_cast<D>(p[off]); });
      } else if (src.is_contiguous()) {
        for_each_offset(dst,
                        [&](std::int64_t off, std::int64_t i) { o[off] = static_cast<D>(p[i]); });
      } else {
        std::vector<std::int64_t> from(static_cast<std::size_t>(src.numel()));
        for_each_offset(src, [&](std::int64_t off, std::int64_t i) {
          from[static_cast<std::size_t>(i)] = off;
        });
        for_each_offset(dst, [&](std::int64_t off, std::int64_t i) {
          o[off] = static_cast<D>(p[from[static_cast<std::size_t>(i)]]);
        });
      }
    });
  });
}

void cpu_fill(Tensor& t, double value) {
  dispatch_any(t.dtype(), [&]<typename T>() {
    T* o = t.data<T>();
    const T v = static_cast<T>(value);
    for_each_offset(t, [&](std::int64_t off, std::int64_t) { o[off] = v; });
  });
}

template <typename T, typename F>
void with_binary_op(BinaryOp op, F&& f) {
  switch (op) {
    case BinaryOp::add:
      return f([](T x, T y) { return x + y; });
    case BinaryOp::sub:
      return f([](T x, T y) { return x - y; });
    case BinaryOp::mul:
      return f([](T x, T y) { return x * y; });
    case BinaryOp::div:
      return f([](T x, T y) { return x / y; });
  }
}

void cpu_binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  dispatch_all(a.dtype(), [&]<typename T>() {
    with_binary_op<T>(op, [&](auto f) { binary_map_into<T>(a, b, out, f); });
  });
}

void cpu_binary_scalar(BinaryOp op, const Tensor& a, double s, Tensor& out) {
  dispatch_all(a.dtype(), [&]<typename T>() {
    const T v = static_cast<T>(s);
    with_binary_op<T>(op, [&](auto f) { unary_map_into<T>(a, out, [&](T x) { return f(x, v); }); });
  });
}

void cpu_accumulate(Tensor& acc, const Tensor& g, const Tensor& g_contiguous) {
  dispatch_all(acc.dtype(), [&]<typename T>() {
    T* o = acc.data<T>();
    const std::int64_t n = acc.numel();
    if (!g_contiguous.defined()) {
      const T* p = g.data<T>();
      parallel_for(n, [&](std::int64_t i) { o[i] += p[i]; });
    } else {
      const T* q = g_contiguous.data<T>();
      for_each_offset(acc, [&](std::int64_t off, std::int64_t i) { o[off] += q[i]; });
    }
  });
}

// The general case: every input element added into its output element, whose strides are 0
// on the reduced dimensions.
template <typename T>
void sum_strided(const Tensor& t, const std::vector<bool>& reduce, T* o) {
  const T* p = t.data<T>();
  const std::int64_t n = t.numel();
  const auto nd = t.dim();
  Shape kept_shape = t.shape();
  for (std::size_t k = 0; k < kept_shape.size(); ++k)
    if (reduce[k]) kept_shape[k] = 1;
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
}

// Fast paths on the contiguous input: all, a prefix of dims, or a suffix of dims; otherwise
// output strides of 0 on the reduced dims.
template <typename T>
void sum_into(const Tensor& t, const std::vector<bool>& reduce, T* o) {
  const T* p = t.data<T>();
  const std::int64_t n = t.numel();
  const auto nd = t.dim();
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
    for (std::int64_t d = nd - suffix; d < nd; ++d) cols *= t.shape()[static_cast<std::size_t>(d)];
    const std::int64_t rows = n / cols;
#pragma omp parallel for if (n > kParallelGrain) schedule(static)
    for (std::int64_t r = 0; r < rows; ++r) {
      double acc = 0;
      for (std::int64_t j = 0; j < cols; ++j) acc += static_cast<double>(p[r * cols + j]);
      o[r] = static_cast<T>(acc);
    }
    return;
  }
  sum_strided(t, reduce, o);
}

void cpu_sum(const Tensor& t, const std::vector<bool>& reduce, Tensor& out) {
  dispatch_all(t.dtype(), [&]<typename T>() { sum_into<T>(t, reduce, out.data<T>()); });
}

void cpu_gemm(const Tensor& a, const Tensor& b, Tensor& c, bool accumulate) {
  dispatch_floating(a.dtype(), "mm", [&]<typename T>() {
    const MatrixLayout la = blas_layout(a);
    const MatrixLayout lb = blas_layout(b);
    gemm_rm<T>(la.trans, lb.trans, a.shape()[0], b.shape()[1], a.shape()[1], T(1), a.data<T>(),
               la.ld, b.data<T>(), lb.ld, accumulate ? T(1) : T(0), c.data<T>(),
               std::max<std::int64_t>(c.shape()[1], 1));
  });
}

const KernelTable kCpuTable{Device::cpu,        "cpu",           &cpu_copy, &cpu_fill, &cpu_binary,
                            &cpu_binary_scalar, &cpu_accumulate, &cpu_sum,  &cpu_gemm};

}  // namespace

const KernelTable& cpu_kernel_table() {
  return kCpuTable;
}

}  // namespace ckpt
