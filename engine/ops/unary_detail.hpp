#pragma once

// Shared by the elementwise activations (unary.cpp, activation.cpp): a map in the tensor's own
// precision and the chain rule through a saved tensor.

#include "engine/kernels/kernels.hpp"
#include "engine/tensor/memory_semantics.hpp"
#include "engine/tensor/reduced_float.hpp"

namespace ckpt::unary_detail {

// f is generic (takes `auto`): it runs in the tensor's own precision, float math for f32
// (as PyTorch's kernels do), not through a double round trip; bfloat16 and float16 in float,
// rounded once (ATen's opmath).
template <typename F>
Tensor map_floating(const Tensor& x, const char* op, F f) {
  return dispatch_floating_all(x.dtype(), op, [&]<typename T>() {
    using M = opmath_t<T>;
    return unary_map<T>(x, [&](T v) { return static_cast<T>(f(static_cast<M>(v))); });
  });
}

// A constant in the precision of v.
template <typename V>
constexpr V k(double c) {
  return static_cast<V>(c);
}

// grad * d, with d computed elementwise from a saved tensor. The engine's CPU kernels make d
// first; PyTorch's CUDA backward kernels (gelu_backward, tanh_backward, ...: one TensorIterator
// pass over grad and the saved tensor) make only the result (oracle snapshot gpt_mini__plain:
// one allocation per GeluBackward0).
template <typename F>
Tensor chain(const Tensor& grad, const Tensor& saved, const char* op, F derivative) {
  if (memory_semantics(grad.device()).kernels == KernelAllocations::pytorch_cuda &&
      grad.dtype() == saved.dtype())
    return dispatch_floating_all(grad.dtype(), op, [&]<typename T>() {
      using M = opmath_t<T>;
      return binary_map<T>(
          grad, saved,
          [&](T g, T v) {
            return static_cast<T>(static_cast<M>(g) * derivative(static_cast<M>(v)));
          },
          op);
    });
  return mul_raw(grad, map_floating(saved, op, derivative));
}

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

}  // namespace ckpt::unary_detail
