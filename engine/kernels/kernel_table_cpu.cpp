// The cpu kernel table: Eigen's GEMM and OpenMP loops over host memory.
#include <omp.h>

#include <cstring>
#include <type_traits>
#include <vector>

#include "engine/kernels/blas.hpp"
#include "engine/kernels/kernel_table.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/tensor/device.hpp"
#include "engine/tensor/reduced_float.hpp"

namespace ckpt {

namespace {

// The dtypes arithmetic runs on: float32, float64, int64, and the reduced floating ones
// (computed in float: reduced_float.hpp).
template <typename F>
decltype(auto) dispatch_arithmetic(DType t, F&& f) {
  if (t == DType::bf16) return f.template operator()<bfloat16>();
  if (t == DType::f16) return f.template operator()<float16>();
  return dispatch_all(t, std::forward<F>(f));
}

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
  dispatch_every(src.dtype(), [&]<typename S>() {
    dispatch_every(dst.dtype(), [&]<typename D>() {
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
        if (for_each_offset_transposed(
                src, [&](std::int64_t off, std::int64_t i) { o[i] = static_cast<D>(p[off]); }))
          return;
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
  dispatch_every(t.dtype(), [&]<typename T>() {
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

// Eigen's reduced types compute each operator in float and round once, as ATen does.
void cpu_binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  dispatch_arithmetic(a.dtype(), [&]<typename T>() {
    with_binary_op<T>(op, [&](auto f) { binary_map_into<T>(a, b, out, f); });
  });
}

// The scalar stays in the opmath type (float for the reduced dtypes), as in ATen's CPU kernels.
void cpu_binary_scalar(BinaryOp op, const Tensor& a, double s, Tensor& out) {
  dispatch_arithmetic(a.dtype(), [&]<typename T>() {
    using M = opmath_t<T>;
    const M v = static_cast<M>(s);
    with_binary_op<M>(op, [&](auto f) {
      unary_map_into<T>(a, out, [&](T x) { return static_cast<T>(f(static_cast<M>(x), v)); });
    });
  });
}

void cpu_accumulate(Tensor& acc, const Tensor& g, const Tensor& g_contiguous) {
  dispatch_arithmetic(acc.dtype(), [&]<typename T>() {
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

// The general case (reduced dims between kept ones: a per-channel parameter's gradient, [N, C,
// H, W] to [1, C, 1, 1]): each output element gathers its inputs and adds them in double.
// Added into a float one by one, N*H*W terms lost digits: such a gradient was 5 to 20 times
// PyTorch's own float32 error (PyTorch sums in cascades). Adjacent reduced dims are merged, so
// the innermost loop runs over contiguous memory.
template <typename T>
void sum_gather(const Tensor& t, const std::vector<bool>& reduce, T* o) {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;  // integers: exact
  const T* p = t.data<T>();
  const auto nd = static_cast<std::size_t>(t.dim());
  const Strides st = contiguous_strides(t.shape());
  struct Dim {
    std::int64_t size, stride;
  };
  std::vector<Dim> kept, reduced;
  for (std::size_t k = 0; k < nd; ++k) {
    const Dim d{t.shape()[k], st[k]};
    auto& list = reduce[k] ? reduced : kept;
    // A dim right after a reduced one it continues (stride * size) folds into it.
    if (reduce[k] && k > 0 && reduce[k - 1] && !list.empty() &&
        list.back().stride == d.size * d.stride)
      list.back() = {list.back().size * d.size, d.stride};
    else
      list.push_back(d);
  }
  std::int64_t outputs = 1, per_output = 1;
  for (const Dim& d : kept) outputs *= d.size;
  for (const Dim& d : reduced) per_output *= d.size;
  const Dim inner = reduced.back();
  reduced.pop_back();
#pragma omp parallel if (outputs * per_output > kParallelGrain)
  {
    std::vector<std::int64_t> idx(reduced.size());
#pragma omp for schedule(static)
    for (std::int64_t i = 0; i < outputs; ++i) {
      std::int64_t base = 0, rest = i;
      for (auto d = kept.size(); d-- > 0;) {
        base += (rest % kept[d].size) * kept[d].stride;
        rest /= kept[d].size;
      }
      std::fill(idx.begin(), idx.end(), 0);
      Acc acc = 0;
      for (std::int64_t off = base;;) {
        const T* q = p + off;
        for (std::int64_t j = 0; j < inner.size; ++j) acc += static_cast<Acc>(q[j * inner.stride]);
        bool done = true;  // every reduced index wrapped around
        for (std::size_t d = reduced.size(); d-- > 0;) {
          if (++idx[d] < reduced[d].size) {
            off += reduced[d].stride;
            done = false;
            break;
          }
          off -= reduced[d].stride * (reduced[d].size - 1);
          idx[d] = 0;
        }
        if (done) break;
      }
      o[i] = static_cast<T>(acc);
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
      // In double for floats, as the other paths here (integers exactly, in their own type).
      std::conditional_t<std::is_floating_point_v<T>, double, T> acc = 0;
      for (std::int64_t r = 0; r < rows; ++r) acc += p[r * cols + j];
      o[j] = static_cast<T>(acc);
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
  sum_gather(t, reduce, o);
}

// A reduced dtype sums in float (ATen's accumulate type on the CPU): its elements widened into
// a buffer of the kernel's own, summed there, the results rounded once.
void cpu_sum(const Tensor& t, const std::vector<bool>& reduce, Tensor& out) {
  dispatch_arithmetic(t.dtype(), [&]<typename T>() {
    if constexpr (is_reduced_v<T>) {
      DeviceScope host(Device::cpu);
      LedgerScope own(std::make_shared<MemoryLedger>());  // not the run's tensors
      Tensor wide = Tensor::empty(t.shape(), DType::f32);
      float* w = wide.data<float>();
      const T* p = t.data<T>();
      parallel_for(t.numel(), [&](std::int64_t i) { w[i] = static_cast<float>(p[i]); });
      std::vector<float> sums(static_cast<std::size_t>(out.numel()), 0.0f);
      sum_into<float>(wide, reduce, sums.data());
      T* o = out.data<T>();
      for (std::size_t i = 0; i < sums.size(); ++i) o[i] = static_cast<T>(sums[i]);
    } else {
      sum_into<T>(t, reduce, out.data<T>());
    }
  });
}

void cpu_gemm(const Tensor& a, const Tensor& b, Tensor& c, bool accumulate) {
  dispatch_floating_all(a.dtype(), "mm", [&]<typename T>() {
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
