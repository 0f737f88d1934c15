#pragma once

#include <cmath>

#include "engine/cuda/hd.cuh"

namespace ckpt::cuda_math {

// Softmax of one row of n contiguous values, the max subtracted first for stability. A kernel
// runs one row per thread; the CPU tests call it directly.
CKPT_HD inline void softmax_row(const float* x, float* y, int n) {
  float m = -INFINITY;
  for (int j = 0; j < n; ++j) m = x[j] > m ? x[j] : m;
  float sum = 0.0f;
  for (int j = 0; j < n; ++j) {
    y[j] = expf(x[j] - m);
    sum += y[j];
  }
  const float inv = 1.0f / sum;
  for (int j = 0; j < n; ++j) y[j] *= inv;
}

// Its backward: dx = y * (dy - sum(dy * y)).
CKPT_HD inline void softmax_row_backward(const float* y, const float* dy, float* dx, int n) {
  float dot = 0.0f;
  for (int j = 0; j < n; ++j) dot += dy[j] * y[j];
  for (int j = 0; j < n; ++j) dx[j] = y[j] * (dy[j] - dot);
}

}  // namespace ckpt::cuda_math
