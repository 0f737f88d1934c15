#pragma once

#include <cmath>
#include <cstdint>

#include "engine/cuda/hd.cuh"

namespace ckpt::cuda_math {

// One element of each op, forward and backward, matching the CPU kernels' definitions
// (engine/ops/unary.cpp): ReLU propagates NaN, GELU is the exact erf form.
CKPT_HD_INLINE float add(float a, float b) {
  return a + b;
}
CKPT_HD_INLINE float sub(float a, float b) {
  return a - b;
}
CKPT_HD_INLINE float mul(float a, float b) {
  return a * b;
}
CKPT_HD_INLINE float div(float a, float b) {
  return a / b;
}
CKPT_HD_INLINE float relu(float x) {
  return x < 0.0f ? 0.0f : x;
}
CKPT_HD_INLINE float relu_backward(float grad, float result) {
  return result > 0.0f ? grad : 0.0f;
}
CKPT_HD_INLINE float gelu(float x) {
  return 0.5f * x * (1.0f + erff(x * 0.70710678118654752440f));
}
CKPT_HD_INLINE float gelu_backward(float grad, float x) {
  const float cdf = 0.5f * (1.0f + erff(x * 0.70710678118654752440f));
  const float pdf = 0.39894228040143267794f * expf(-0.5f * x * x);
  return grad * (cdf + x * pdf);
}

// The binary ops of the kernel table (engine/kernels/kernel_table.hpp), by their row's index:
// add, sub, mul, div.
CKPT_HD_INLINE float binary(int op, float a, float b) {
  switch (op) {
    case 0:
      return add(a, b);
    case 1:
      return sub(a, b);
    case 2:
      return mul(a, b);
    default:
      return div(a, b);
  }
}

// Element i of a binary op whose operands may be one element each (broadcast scalars).
CKPT_HD_INLINE float binary_at(int op, const float* a, std::int64_t a_step, const float* b,
                               std::int64_t b_step, std::int64_t i) {
  return binary(op, a[i * a_step], b[i * b_step]);
}

}  // namespace ckpt::cuda_math
