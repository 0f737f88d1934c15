#include "engine/ops/softmax.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/autograd/node.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/tensor/memory_semantics.hpp"
#include "engine/tensor/reduced_float.hpp"

namespace ckpt {

namespace {

// x viewed as [outer, size, inner] around the softmax dim.
struct Lanes {
  std::int64_t outer = 1, size = 1, inner = 1;
};

Lanes lanes_of(const Tensor& x, std::int64_t dim, const char* op) {
  Lanes l;
  if (x.dim() == 0) {
    wrap_dim(dim, 0, op);
    return l;
  }
  const auto d = wrap_dim(dim, x.dim(), op);
  for (std::int64_t i = 0; i < x.dim(); ++i) {
    const auto s = x.shape()[static_cast<std::size_t>(i)];
    if (i < d) l.outer *= s;
    if (i == d) l.size = s;
    if (i > d) l.inner *= s;
  }
  return l;
}

// f(row pointer, stride) over every lane.
template <typename F>
void for_lanes(const Lanes& l, F&& f) {
  const std::int64_t count = l.outer * l.inner;
#pragma omp parallel for schedule(static) if (count * l.size > kParallelGrain)
  for (std::int64_t k = 0; k < count; ++k) {
    const std::int64_t o = k / l.inner, i = k % l.inner;
    f(o * l.size * l.inner + i);
  }
}

// A reduced dtype computes in float and rounds each output once (ATen's vectorised CPU softmax
// for bfloat16): the exponentials are computed again rather than stored rounded.
template <typename T>
void softmax_kernel_reduced(const T* x, T* y, const Lanes& l, bool log) {
  using M = opmath_t<T>;
  const std::int64_t st = l.inner;
  for_lanes(l, [&](std::int64_t base) {
    M m = -std::numeric_limits<M>::infinity();
    for (std::int64_t j = 0; j < l.size; ++j) m = std::max(m, static_cast<M>(x[base + j * st]));
    M sum = 0;
    for (std::int64_t j = 0; j < l.size; ++j) sum += std::exp(static_cast<M>(x[base + j * st]) - m);
    const M lse = std::log(sum), inv = M(1) / sum;
    for (std::int64_t j = 0; j < l.size; ++j) {
      const M v = static_cast<M>(x[base + j * st]) - m;
      y[base + j * st] = static_cast<T>(log ? v - lse : std::exp(v) * inv);
    }
  });
}

template <typename T>
void softmax_kernel_full(const T* x, T* y, const Lanes& l, bool log);

template <typename T>
void softmax_kernel(const T* x, T* y, const Lanes& l, bool log) {
  if constexpr (is_reduced_v<T>)
    softmax_kernel_reduced(x, y, l, log);
  else
    softmax_kernel_full(x, y, l, log);
}

template <typename T>
void softmax_kernel_full(const T* x, T* y, const Lanes& l, bool log) {
  const std::int64_t st = l.inner;
  for_lanes(l, [&](std::int64_t base) {
    T m = -std::numeric_limits<T>::infinity();
    for (std::int64_t j = 0; j < l.size; ++j) m = std::max(m, x[base + j * st]);
    T sum = 0;
    for (std::int64_t j = 0; j < l.size; ++j) {
      const T e = std::exp(x[base + j * st] - m);
      sum += e;
      if (!log) y[base + j * st] = e;
    }
    if (log) {
      const T lse = std::log(sum);
      for (std::int64_t j = 0; j < l.size; ++j) y[base + j * st] = x[base + j * st] - m - lse;
    } else {
      const T inv = T(1) / sum;
      for (std::int64_t j = 0; j < l.size; ++j) y[base + j * st] *= inv;
    }
  });
}

Tensor softmax_impl(const Tensor& x_in, std::int64_t dim, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  const Lanes l = lanes_of(x_in, dim, op);
  const Tensor x = as_contiguous(x_in);
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  if (!out.is_meta())
    dispatch_floating_all(x.dtype(), op, [&]<typename T>() {
      softmax_kernel<T>(x.data<T>(), out.data<T>(), l, log);
    });
  record(log ? "LogSoftmaxBackward0" : "SoftmaxBackward0", {x_in}, {out}, {out},
         [l, log](BackwardContext& c) -> TensorList {
           const Tensor g = as_contiguous(c.grads[0]);
           const Tensor y = as_contiguous(c.saved[0]);
           Tensor dx = Tensor::empty(g.shape(), g.dtype());
           // PyTorch's CUDA softmax backward (aten/src/ATen/native/cuda/SoftMax.cu,
           // softmax_backward_cuda_out) multiplies grad * output into a temporary first and
           // frees it on return (oracle snapshot gpt_mini__plain, SoftmaxBackward0: two
           // allocations of the output's size, one freed); log_softmax's has none.
           if (!log && memory_semantics(g.device()).kernels == KernelAllocations::pytorch_cuda) {
             const Tensor product = Tensor::empty(g.shape(), g.dtype());
           }
           if (!dx.is_meta())
             dispatch_floating_all(g.dtype(), "softmax backward", [&]<typename T>() {
               using M = opmath_t<T>;
               const T* gp = g.data<T>();
               const T* yp = y.data<T>();
               T* dp = dx.data<T>();
               const std::int64_t st = l.inner;
               for_lanes(l, [&](std::int64_t base) {
                 M acc = 0;
                 if (log) {
                   // d log_softmax: g - exp(y) * sum(g)
                   for (std::int64_t j = 0; j < l.size; ++j)
                     acc += static_cast<M>(gp[base + j * st]);
                   for (std::int64_t j = 0; j < l.size; ++j) {
                     const auto k = base + j * st;
                     dp[k] = static_cast<T>(static_cast<M>(gp[k]) -
                                            std::exp(static_cast<M>(yp[k])) * acc);
                   }
                 } else {
                   // d softmax: y * (g - sum(g * y))
                   for (std::int64_t j = 0; j < l.size; ++j) {
                     const auto k = base + j * st;
                     acc += static_cast<M>(gp[k]) * static_cast<M>(yp[k]);
                   }
                   for (std::int64_t j = 0; j < l.size; ++j) {
                     const auto k = base + j * st;
                     dp[k] = static_cast<T>(static_cast<M>(yp[k]) * (static_cast<M>(gp[k]) - acc));
                   }
                 }
               });
             });
           return {dx};
         });
  return out;
}

}  // namespace

Tensor softmax(const Tensor& x, std::int64_t dim) {
  OpScope op("softmax");
  return softmax_impl(x, dim, false);
}

Tensor log_softmax(const Tensor& x, std::int64_t dim) {
  OpScope op("log_softmax");
  return softmax_impl(x, dim, true);
}

}  // namespace ckpt
