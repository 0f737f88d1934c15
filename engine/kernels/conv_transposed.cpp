#include <omp.h>

#include <algorithm>

#include "engine/kernels/conv_impl.hpp"
#include "engine/kernels/conv_impl_detail.hpp"
#include "engine/kernels/kernels.hpp"

// The transposed convolution (1, 2 or 3 spatial dimensions): the adjoint of the convolution,
// through the convolution's own forward and backward.

namespace ckpt::conv_detail {

namespace {

// Adds bias[c] to every pixel of channel c of y [N, C, ...], or sums dy's pixels per channel.
template <typename T>
void add_channel_bias(Tensor& y, const Tensor& bias) {
  const std::int64_t n = y.shape()[0], c = y.shape()[1],
                     hw = y.numel() / std::max<std::int64_t>(n * c, 1);
  T* yp = y.data<T>();
  const T* bp = bias.data<T>();
#pragma omp parallel for collapse(2) schedule(static) if (may_parallelize(n * c * hw))
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t ch = 0; ch < c; ++ch) {
      T* row = yp + (i * c + ch) * hw;
      for (std::int64_t p = 0; p < hw; ++p) row[p] += bp[ch];
    }
}

template <typename T>
Tensor channel_sums(const Tensor& gy) {
  const std::int64_t n = gy.shape()[0], c = gy.shape()[1],
                     hw = gy.numel() / std::max<std::int64_t>(n * c, 1);
  Tensor db = Tensor::empty({c}, gy.dtype());
  if (db.is_meta()) return db;
  const T* gp = gy.data<T>();
  T* d = db.data<T>();
#pragma omp parallel for schedule(static) if (may_parallelize(n * c * hw))
  for (std::int64_t ch = 0; ch < c; ++ch) {
    double acc = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const T* row = gp + (i * c + ch) * hw;
      for (std::int64_t p = 0; p < hw; ++p) acc += row[p];
    }
    d[ch] = static_cast<T>(acc);
  }
  return db;
}

}  // namespace

Tensor transposed_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const Geometry& g) {
  if (runs_as_cudnn(x)) return cudnn_transposed_forward(x, w, bias, g);
  return dispatch_floating_all(w.dtype(), "conv_transpose", [&]<typename T>() {
    // The input gradient of the adjoint convolution, with x as its output gradient.
    Tensor y = backward_t<T>(x, Tensor(), w, g, {true, false}, false)[0];
    if (bias.defined() && !y.is_meta()) add_channel_bias<T>(y, bias);
    return y;
  });
}

TensorList transposed_backward(const Tensor& grad_out, const Tensor& x, const Tensor& w,
                               const Geometry& g, const std::vector<bool>& need, bool has_bias) {
  if (runs_as_cudnn(w)) return cudnn_transposed_backward(grad_out, x, w, g, need, has_bias);
  const Tensor gy = as_contiguous(grad_out);
  return dispatch_floating_all(w.dtype(), "conv_transpose backward", [&]<typename T>() {
    TensorList r(has_bias ? 3 : 2);
    // dx: the adjoint convolution of dy; dw: its weight gradient with x as the output gradient.
    if (need[0]) r[0] = forward_t<T>(gy, w, Tensor(), g);
    if (need[1]) r[1] = backward_t<T>(x, gy, w, g, {false, true}, false)[1];
    if (has_bias && need[2]) r[2] = channel_sums<T>(gy);
    return r;
  });
}

}  // namespace ckpt::conv_detail
