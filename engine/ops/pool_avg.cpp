#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/autograd/node.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/ops/pool.hpp"
#include "engine/ops/pool_detail.hpp"
#include "engine/ops/shape_ops.hpp"
#include "engine/tensor/reduced_float.hpp"

// Average pooling over 1, 2 or 3 spatial dimensions.

namespace ckpt {

using namespace pool_detail;

namespace {

// One axis of an average window: the clipped input range and the extent counted with padding.
struct AvgAxis {
  std::int64_t lo, hi, padded;
};
inline AvgAxis avg_axis(std::int64_t o, std::int64_t s, std::int64_t p, std::int64_t k,
                        std::int64_t in) {
  AvgAxis a{};
  a.lo = o * s - p;
  a.hi = std::min(a.lo + k, in + p);
  a.padded = a.hi - a.lo;
  a.lo = std::max<std::int64_t>(a.lo, 0);
  a.hi = std::min(a.hi, in);
  return a;
}

// The clipped window of an output and its divisor, as PyTorch's avg_pool2d/3d compute them.
struct AvgWindow {
  AvgAxis t, h, w;
  std::int64_t divisor;
  bool empty() const { return t.lo >= t.hi || h.lo >= h.hi || w.lo >= w.hi; }
};
inline AvgWindow avg_window(const PoolGeometry& g, std::int64_t ot, std::int64_t oh,
                            std::int64_t ow, bool count_include_pad) {
  AvgWindow a{avg_axis(ot, g.st, g.pt, g.kt, g.t), avg_axis(oh, g.sh, g.ph, g.kh, g.h),
              avg_axis(ow, g.sw, g.pw, g.kw, g.w), 0};
  a.divisor = count_include_pad ? a.t.padded * a.h.padded * a.w.padded
                                : (a.t.hi - a.t.lo) * (a.h.hi - a.h.lo) * (a.w.hi - a.w.lo);
  return a;
}

}  // namespace

Tensor avg_pool(const Tensor& x_in, int dims, const PoolInts& kernel, const PoolInts& stride,
                const PoolInts& padding, bool ceil_mode, bool count_include_pad) {
  OpScope op("avg_pool");
  if (dims == 1) {
    // PyTorch 1.13's avg_pool1d: avg_pool2d over a unit height (AvgPool2DBackward0).
    check_pool_input("avg_pool1d", x_in, 1);
    if (kernel.size() != 1 || stride.size() > 1 || padding.size() != 1)
      throw std::invalid_argument(
          "avg_pool1d: kernel_size, stride and padding must be single "
          "ints");
    const PoolInts s = stride.empty() ? PoolInts{} : PoolInts{1, stride[0]};
    return squeeze(avg_pool(unsqueeze(x_in, -2), 2, {1, kernel[0]}, s, {0, padding[0]}, ceil_mode,
                            count_include_pad),
                   -2);
  }
  const std::string fn = rank_name("avg_pool", dims, "d");
  const PoolGeometry g =
      pool_geometry(fn.c_str(), x_in, dims, kernel, stride, padding, {1}, ceil_mode);
  const Tensor x = as_contiguous(x_in);
  Tensor out = Tensor::empty(pooled_shape(x, g), x.dtype());
  if (!out.is_meta())
    dispatch_floating_all(x.dtype(), fn.c_str(), [&]<typename T>() {
      using M = opmath_t<T>;
      const T* xp = x.data<T>();
      T* op_ = out.data<T>();
      const std::int64_t work = g.planes * g.out_size() * g.kt * g.kh * g.kw;
#pragma omp parallel for schedule(static) if (work > kParallelGrain)
      for (std::int64_t pl = 0; pl < g.planes; ++pl)
        for (std::int64_t ot = 0; ot < g.to; ++ot)
          for (std::int64_t oh = 0; oh < g.ho; ++oh)
            for (std::int64_t ow = 0; ow < g.wo; ++ow) {
              const AvgWindow a = avg_window(g, ot, oh, ow, count_include_pad);
              M acc = 0;
              for (std::int64_t it = a.t.lo; it < a.t.hi; ++it)
                for (std::int64_t ih = a.h.lo; ih < a.h.hi; ++ih)
                  for (std::int64_t iw = a.w.lo; iw < a.w.hi; ++iw)
                    acc += static_cast<M>(xp[pl * g.in_size() + (it * g.h + ih) * g.w + iw]);
              op_[pl * g.out_size() + (ot * g.ho + oh) * g.wo + ow] =
                  a.empty() ? T(0) : static_cast<T>(acc / static_cast<M>(a.divisor));
            }
    });
  record(dims == 3 ? "AvgPool3DBackward0" : "AvgPool2DBackward0", {x_in}, {out}, {x_in},
         [g, count_include_pad, shape = x_in.shape()](BackwardContext& c) -> TensorList {
           const Tensor gy = as_contiguous(c.grads[0]);
           Tensor dx = Tensor::zeros(shape, gy.dtype());
           if (!dx.is_meta())
             dispatch_floating_all(gy.dtype(), "avg_pool backward", [&]<typename T>() {
               using M = opmath_t<T>;
               const T* gp = gy.data<T>();
               T* dp = dx.data<T>();
#pragma omp parallel for schedule(static) if (g.planes * g.out_size() > kParallelGrain)
               for (std::int64_t pl = 0; pl < g.planes; ++pl)
                 for (std::int64_t ot = 0; ot < g.to; ++ot)
                   for (std::int64_t oh = 0; oh < g.ho; ++oh)
                     for (std::int64_t ow = 0; ow < g.wo; ++ow) {
                       const AvgWindow a = avg_window(g, ot, oh, ow, count_include_pad);
                       if (a.empty()) continue;
                       const T v = static_cast<T>(
                           static_cast<M>(gp[pl * g.out_size() + (ot * g.ho + oh) * g.wo + ow]) /
                           static_cast<M>(a.divisor));
                       for (std::int64_t it = a.t.lo; it < a.t.hi; ++it)
                         for (std::int64_t ih = a.h.lo; ih < a.h.hi; ++ih)
                           for (std::int64_t iw = a.w.lo; iw < a.w.hi; ++iw)
                             dp[pl * g.in_size() + (it * g.h + ih) * g.w + iw] += v;
                     }
             });
           return {dx};
         });
  return out;
}

}  // namespace ckpt
