#include "engine/ops/pool.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "engine/autograd/node.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/ops/pool_detail.hpp"
#include "engine/ops/reduce.hpp"
#include "engine/tensor/reduced_float.hpp"

// avg_pool2d and adaptive_avg_pool2d.

namespace ckpt {

using namespace pool_detail;

namespace {

// The divisor and clipped window of output (oh, ow), as PyTorch's avg_pool2d computes them.
struct AvgWindow {
  std::int64_t h0, h1, w0, w1, divisor;
};
inline AvgWindow avg_window(const PoolGeometry& g, std::int64_t oh, std::int64_t ow,
                            bool count_include_pad) {
  AvgWindow a{};
  a.h0 = oh * g.sh - g.ph;
  a.w0 = ow * g.sw - g.pw;
  a.h1 = std::min(a.h0 + g.kh, g.h + g.ph);
  a.w1 = std::min(a.w0 + g.kw, g.w + g.pw);
  const std::int64_t pool_size = (a.h1 - a.h0) * (a.w1 - a.w0);
  a.h0 = std::max<std::int64_t>(a.h0, 0);
  a.w0 = std::max<std::int64_t>(a.w0, 0);
  a.h1 = std::min(a.h1, g.h);
  a.w1 = std::min(a.w1, g.w);
  a.divisor = count_include_pad ? pool_size : (a.h1 - a.h0) * (a.w1 - a.w0);
  return a;
}

// PyTorch's adaptive windows: [floor(o*in/out), ceil((o+1)*in/out)).
inline std::int64_t adaptive_start(std::int64_t o, std::int64_t out, std::int64_t in) {
  return (o * in) / out;
}
inline std::int64_t adaptive_end(std::int64_t o, std::int64_t out, std::int64_t in) {
  return ((o + 1) * in + out - 1) / out;
}

}  // namespace

Tensor avg_pool2d(const Tensor& x_in, std::array<std::int64_t, 2> kernel,
                  std::array<std::int64_t, 2> stride, std::array<std::int64_t, 2> padding,
                  bool ceil_mode, bool count_include_pad) {
  OpScope op("avg_pool2d");
  const PoolGeometry g =
      pool_geometry("avg_pool2d", x_in, kernel, stride, padding, {1, 1}, ceil_mode);
  const Tensor x = as_contiguous(x_in);
  Tensor out = Tensor::empty(pooled_shape(x, g.ho, g.wo), x.dtype());
  if (!out.is_meta())
    dispatch_floating_all(x.dtype(), "avg_pool2d", [&]<typename T>() {
      using M = opmath_t<T>;
      const T* xp = x.data<T>();
      T* op_ = out.data<T>();
#pragma omp parallel for schedule(static) if (g.planes * g.ho * g.wo * g.kh * g.kw > kParallelGrain)
      for (std::int64_t pl = 0; pl < g.planes; ++pl)
        for (std::int64_t oh = 0; oh < g.ho; ++oh)
          for (std::int64_t ow = 0; ow < g.wo; ++ow) {
            const AvgWindow a = avg_window(g, oh, ow, count_include_pad);
            M acc = 0;
            for (std::int64_t ih = a.h0; ih < a.h1; ++ih)
              for (std::int64_t iw = a.w0; iw < a.w1; ++iw)
                acc += static_cast<M>(xp[(pl * g.h + ih) * g.w + iw]);
            op_[(pl * g.ho + oh) * g.wo + ow] =
                a.h0 >= a.h1 || a.w0 >= a.w1 ? T(0)
                                             : static_cast<T>(acc / static_cast<M>(a.divisor));
          }
    });
  record("AvgPool2DBackward0", {x_in}, {out}, {x_in},
         [g, count_include_pad, shape = x_in.shape()](BackwardContext& c) -> TensorList {
           const Tensor gy = as_contiguous(c.grads[0]);
           Tensor dx = Tensor::zeros(shape, gy.dtype());
           if (!dx.is_meta())
             dispatch_floating_all(gy.dtype(), "avg_pool2d backward", [&]<typename T>() {
               using M = opmath_t<T>;
               const T* gp = gy.data<T>();
               T* dp = dx.data<T>();
#pragma omp parallel for schedule(static) if (g.planes * g.ho * g.wo > kParallelGrain)
               for (std::int64_t pl = 0; pl < g.planes; ++pl)
                 for (std::int64_t oh = 0; oh < g.ho; ++oh)
                   for (std::int64_t ow = 0; ow < g.wo; ++ow) {
                     const AvgWindow a = avg_window(g, oh, ow, count_include_pad);
                     if (a.h0 >= a.h1 || a.w0 >= a.w1) continue;
                     const T v = static_cast<T>(static_cast<M>(gp[(pl * g.ho + oh) * g.wo + ow]) /
                                                static_cast<M>(a.divisor));
                     for (std::int64_t ih = a.h0; ih < a.h1; ++ih)
                       for (std::int64_t iw = a.w0; iw < a.w1; ++iw)
                         dp[(pl * g.h + ih) * g.w + iw] += v;
                   }
             });
           return {dx};
         });
  return out;
}

namespace {

// An adaptive pool's planes and sizes: output cell (oh, ow) averages input rows
// [adaptive_start(oh), adaptive_end(oh)) and the columns likewise.
struct AdaptiveGeometry {
  std::int64_t planes, h, w, ho, wo;
};

void adaptive_avg_forward(const Tensor& x, Tensor& out, const AdaptiveGeometry& g) {
  if (out.is_meta()) return;
  dispatch_floating_all(x.dtype(), "adaptive_avg_pool2d", [&]<typename T>() {
    using M = opmath_t<T>;
    const T* xp = x.data<T>();
    T* yp = out.data<T>();
#pragma omp parallel for schedule(static) if (g.planes * g.h * g.w > kParallelGrain)
    for (std::int64_t pl = 0; pl < g.planes; ++pl)
      for (std::int64_t oh = 0; oh < g.ho; ++oh) {
        const std::int64_t h0 = adaptive_start(oh, g.ho, g.h), h1 = adaptive_end(oh, g.ho, g.h);
        for (std::int64_t ow = 0; ow < g.wo; ++ow) {
          const std::int64_t w0 = adaptive_start(ow, g.wo, g.w), w1 = adaptive_end(ow, g.wo, g.w);
          M acc = 0;
          for (std::int64_t ih = h0; ih < h1; ++ih)
            for (std::int64_t iw = w0; iw < w1; ++iw)
              acc += static_cast<M>(xp[(pl * g.h + ih) * g.w + iw]);
          yp[(pl * g.ho + oh) * g.wo + ow] =
              static_cast<T>(acc / static_cast<M>((h1 - h0) * (w1 - w0)));
        }
      }
  });
}

void adaptive_avg_backward(const Tensor& gy, Tensor& dx, const AdaptiveGeometry& g) {
  if (dx.is_meta()) return;
  dispatch_floating_all(gy.dtype(), "adaptive_avg_pool2d backward", [&]<typename T>() {
    using M = opmath_t<T>;
    const T* gp = gy.data<T>();
    T* dp = dx.data<T>();
#pragma omp parallel for schedule(static) if (g.planes * g.h * g.w > kParallelGrain)
    for (std::int64_t pl = 0; pl < g.planes; ++pl)
      for (std::int64_t oh = 0; oh < g.ho; ++oh) {
        const std::int64_t h0 = adaptive_start(oh, g.ho, g.h), h1 = adaptive_end(oh, g.ho, g.h);
        for (std::int64_t ow = 0; ow < g.wo; ++ow) {
          const std::int64_t w0 = adaptive_start(ow, g.wo, g.w), w1 = adaptive_end(ow, g.wo, g.w);
          const T v = static_cast<T>(static_cast<M>(gp[(pl * g.ho + oh) * g.wo + ow]) /
                                     static_cast<M>((h1 - h0) * (w1 - w0)));
          for (std::int64_t ih = h0; ih < h1; ++ih)
            for (std::int64_t iw = w0; iw < w1; ++iw) dp[(pl * g.h + ih) * g.w + iw] += v;
        }
      }
  });
}

}  // namespace

Tensor adaptive_avg_pool2d(const Tensor& x_in, std::array<std::int64_t, 2> output_size) {
  if (x_in.dim() != 3 && x_in.dim() != 4)
    throw std::invalid_argument("adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got " +
                                shape_str(x_in.shape()));
  if (output_size[0] <= 0 || output_size[1] <= 0)
    throw std::invalid_argument("adaptive_avg_pool2d: output size must be positive, got [" +
                                std::to_string(output_size[0]) + ", " +
                                std::to_string(output_size[1]) + "] for input " + x_in.str());
  // PyTorch 1.13 turns the global pool into a mean over H and W, which saves its input.
  if (output_size[0] == 1 && output_size[1] == 1) return mean(x_in, {-1, -2}, true);
  OpScope op("adaptive_avg_pool2d");
  if (!is_floating(x_in.dtype()))
    throw std::invalid_argument("adaptive_avg_pool2d: expected a floating-point input, got " +
                                x_in.str());
  const Tensor x = as_contiguous(x_in);
  const auto nd = static_cast<std::size_t>(x.dim());
  const AdaptiveGeometry g{nd == 4 ? x.shape()[0] * x.shape()[1] : x.shape()[0], x.shape()[nd - 2],
                           x.shape()[nd - 1], output_size[0], output_size[1]};
  Tensor out = Tensor::empty(pooled_shape(x, g.ho, g.wo), x.dtype());
  adaptive_avg_forward(x, out, g);
  record("AdaptiveAvgPool2DBackward0", {x_in}, {out}, {x_in},
         [g, shape = x_in.shape()](BackwardContext& c) -> TensorList {
           const Tensor gy = as_contiguous(c.grads[0]);
           Tensor dx = Tensor::zeros(shape, gy.dtype());
           adaptive_avg_backward(gy, dx, g);
           return {dx};
         });
  return out;
}

}  // namespace ckpt
