#include "engine/ops/resize.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "engine/autograd/node.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/tensor/reduced_float.hpp"

namespace ckpt {

namespace {

// PyTorch's nearest_idx for an output size without a scale factor: the float scale in / out.
std::vector<std::int64_t> source_index(std::int64_t in, std::int64_t out) {
  std::vector<std::int64_t> idx(static_cast<std::size_t>(out));
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  for (std::int64_t o = 0; o < out; ++o)
    idx[static_cast<std::size_t>(o)] =
        std::min(static_cast<std::int64_t>(std::floor(static_cast<float>(o) * scale)), in - 1);
  return idx;
}

// PyTorch's compute_source_index_and_lambda for one axis (UpSample.h): for output pixel o, the
// two input pixels it reads and their weights, computed in T (float for float32, as PyTorch's
// opmath). ratio: (in - 1) / (out - 1) with align_corners, else 1 / scale when a scale factor
// was given, else in / out.
template <typename T>
struct LinearTaps {
  std::vector<std::int64_t> i0, i1;
  std::vector<T> l0, l1;
};

template <typename T>
LinearTaps<T> linear_taps(std::int64_t in, std::int64_t out, bool align_corners, double scale) {
  T ratio;
  if (align_corners)
    ratio = out > 1 ? static_cast<T>(in - 1) / static_cast<T>(out - 1) : T(0);
  else
    ratio = scale > 0 ? static_cast<T>(1.0 / scale) : static_cast<T>(in) / static_cast<T>(out);
  LinearTaps<T> t;
  const auto n = static_cast<std::size_t>(out);
  t.i0.resize(n);
  t.i1.resize(n);
  t.l0.resize(n);
  t.l1.resize(n);
  for (std::int64_t o = 0; o < out; ++o) {
    const auto k = static_cast<std::size_t>(o);
    if (out == in) {  // scale 1: a copy
      t.i0[k] = t.i1[k] = o;
      t.l0[k] = T(1);
      t.l1[k] = T(0);
      continue;
    }
    T real =
        align_corners ? ratio * static_cast<T>(o) : ratio * (static_cast<T>(o) + T(0.5)) - T(0.5);
    if (real < T(0)) real = T(0);
    const std::int64_t i0 = std::min(static_cast<std::int64_t>(real), in - 1);
    t.i0[k] = i0;
    t.i1[k] = i0 + (i0 < in - 1 ? 1 : 0);
    t.l1[k] = std::min(std::max(real - static_cast<T>(i0), T(0)), T(1));
    t.l0[k] = T(1) - t.l1[k];
  }
  return t;
}

// `planes` images of h x w resized to ho x wo.
struct BilinearResize {
  std::int64_t planes, h, w, ho, wo;
  bool align_corners;
  std::array<double, 2> scales;
};

template <typename T>
void bilinear_forward(const T* xp, T* op_, const BilinearResize& g) {
  const auto th = linear_taps<T>(g.h, g.ho, g.align_corners, g.scales[0]);
  const auto tw = linear_taps<T>(g.w, g.wo, g.align_corners, g.scales[1]);
#pragma omp parallel for schedule(static) if (g.planes * g.ho * g.wo > (1 << 16))
  for (std::int64_t p = 0; p < g.planes; ++p)
    for (std::int64_t oh = 0; oh < g.ho; ++oh) {
      const auto a = static_cast<std::size_t>(oh);
      const T* r0 = xp + (p * g.h + th.i0[a]) * g.w;
      const T* r1 = xp + (p * g.h + th.i1[a]) * g.w;
      for (std::int64_t ow = 0; ow < g.wo; ++ow) {
        const auto b = static_cast<std::size_t>(ow);
        // PyTorch's order: each row's two taps first, then the rows.
        const T top = r0[tw.i0[b]] * tw.l0[b] + r0[tw.i1[b]] * tw.l1[b];
        const T bottom = r1[tw.i0[b]] * tw.l0[b] + r1[tw.i1[b]] * tw.l1[b];
        op_[(p * g.ho + oh) * g.wo + ow] = top * th.l0[a] + bottom * th.l1[a];
      }
    }
}

// dp must start zeroed: each output pixel adds into the four input pixels it read.
template <typename T>
void bilinear_backward(const T* gp, T* dp, const BilinearResize& g) {
  const auto th = linear_taps<T>(g.h, g.ho, g.align_corners, g.scales[0]);
  const auto tw = linear_taps<T>(g.w, g.wo, g.align_corners, g.scales[1]);
#pragma omp parallel for schedule(static) if (g.planes * g.ho * g.wo > (1 << 16))
  for (std::int64_t p = 0; p < g.planes; ++p)
    for (std::int64_t oh = 0; oh < g.ho; ++oh) {
      const auto a = static_cast<std::size_t>(oh);
      T* r0 = dp + (p * g.h + th.i0[a]) * g.w;
      T* r1 = dp + (p * g.h + th.i1[a]) * g.w;
      for (std::int64_t ow = 0; ow < g.wo; ++ow) {
        const auto b = static_cast<std::size_t>(ow);
        const T gv = gp[(p * g.ho + oh) * g.wo + ow];
        r0[tw.i0[b]] += th.l0[a] * tw.l0[b] * gv;
        r0[tw.i1[b]] += th.l0[a] * tw.l1[b] * gv;
        r1[tw.i0[b]] += th.l1[a] * tw.l0[b] * gv;
        r1[tw.i1[b]] += th.l1[a] * tw.l1[b] * gv;
      }
    }
}

}  // namespace

Tensor upsample_bilinear2d(const Tensor& x_in, std::array<std::int64_t, 2> size, bool align_corners,
                           std::array<double, 2> scales) {
  OpScope op("upsample_bilinear2d");
  if (x_in.dim() != 4 || !is_floating(x_in.dtype()))
    throw std::invalid_argument(
        "upsample_bilinear2d: expected a floating-point [N, C, H, W], got " + x_in.str());
  if (size[0] <= 0 || size[1] <= 0)
    throw std::invalid_argument("upsample_bilinear2d: output size must be positive, got [" +
                                std::to_string(size[0]) + ", " + std::to_string(size[1]) + "]");
  const Tensor x = as_contiguous(x_in);
  const BilinearResize g{x.shape()[0] * x.shape()[1],
                         x.shape()[2],
                         x.shape()[3],
                         size[0],
                         size[1],
                         align_corners,
                         scales};
  Tensor out = Tensor::empty({x.shape()[0], x.shape()[1], g.ho, g.wo}, x.dtype());
  if (!out.is_meta())
    dispatch_floating(x.dtype(), "upsample_bilinear2d",
                      [&]<typename T>() { bilinear_forward(x.data<T>(), out.data<T>(), g); });
  // F.interpolate(mode="bilinear") records UpsampleBilinear2DBackward1 in PyTorch 1.13 (the
  // overload with optional scale factors); it keeps only sizes and scales, no tensor.
  record("UpsampleBilinear2DBackward1", {x_in}, {out}, {},
         [g, shape = x_in.shape()](BackwardContext& c) -> TensorList {
           const Tensor gy = as_contiguous(c.grads[0]);
           Tensor dx = Tensor::zeros(shape, gy.dtype());
           if (!dx.is_meta())
             dispatch_floating(gy.dtype(), "upsample_bilinear2d backward", [&]<typename T>() {
               bilinear_backward(gy.data<T>(), dx.data<T>(), g);
             });
           return {dx};
         });
  return out;
}

Tensor upsample_nearest2d(const Tensor& x_in, std::array<std::int64_t, 2> size) {
  OpScope op("upsample_nearest2d");
  if (x_in.dim() != 4 || !is_floating(x_in.dtype()))
    throw std::invalid_argument("upsample_nearest2d: expected a floating-point [N, C, H, W], got " +
                                x_in.str());
  if (size[0] <= 0 || size[1] <= 0)
    throw std::invalid_argument("upsample_nearest2d: output size must be positive, got [" +
                                std::to_string(size[0]) + ", " + std::to_string(size[1]) + "]");
  const Tensor x = as_contiguous(x_in);
  const std::int64_t planes = x.shape()[0] * x.shape()[1], h = x.shape()[2], w = x.shape()[3];
  const std::int64_t ho = size[0], wo = size[1];
  const auto ih = source_index(h, ho), iw = source_index(w, wo);
  Tensor out = Tensor::empty({x.shape()[0], x.shape()[1], ho, wo}, x.dtype());
  if (!out.is_meta())
    dispatch_floating_all(x.dtype(), "upsample_nearest2d", [&]<typename T>() {
      const T* xp = x.data<T>();
      T* op_ = out.data<T>();
#pragma omp parallel for schedule(static) if (planes * ho * wo > (1 << 16))
      for (std::int64_t p = 0; p < planes; ++p)
        for (std::int64_t oh = 0; oh < ho; ++oh)
          for (std::int64_t ow = 0; ow < wo; ++ow)
            op_[(p * ho + oh) * wo + ow] = xp[(p * h + ih[static_cast<std::size_t>(oh)]) * w +
                                              iw[static_cast<std::size_t>(ow)]];
    });
  record("UpsampleNearest2DBackward0", {x_in}, {out}, {},
         [=, shape = x_in.shape()](BackwardContext& c) -> TensorList {
           const Tensor gy = as_contiguous(c.grads[0]);
           Tensor dx = Tensor::zeros(shape, gy.dtype());
           if (!dx.is_meta())
             dispatch_floating_all(gy.dtype(), "upsample_nearest2d backward", [&]<typename T>() {
               const T* gp = gy.data<T>();
               T* dp = dx.data<T>();
#pragma omp parallel for schedule(static) if (planes * ho * wo > (1 << 16))
               for (std::int64_t p = 0; p < planes; ++p)
                 for (std::int64_t oh = 0; oh < ho; ++oh)
                   for (std::int64_t ow = 0; ow < wo; ++ow)
                     dp[(p * h + ih[static_cast<std::size_t>(oh)]) * w +
                        iw[static_cast<std::size_t>(ow)]] += gp[(p * ho + oh) * wo + ow];
             });
           return {dx};
         });
  return out;
}

}  // namespace ckpt
