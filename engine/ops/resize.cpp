#include "engine/ops/resize.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <string>
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

// `planes` volumes of t x h x w resized to to x ho x wo (t = to = 1 below 3-D, h = ho = 1 for
// 1-D): the same arithmetic for linear, bilinear and trilinear.
struct LinearResize {
  std::int64_t planes, t, h, w, to, ho, wo;
  bool align_corners;
  std::array<double, 3> scales;  // per axis, 0: none given
};

template <typename T>
void linear_forward(const T* xp, T* op_, const LinearResize& g) {
  const auto tt = linear_taps<T>(g.t, g.to, g.align_corners, g.scales[0]);
  const auto th = linear_taps<T>(g.h, g.ho, g.align_corners, g.scales[1]);
  const auto tw = linear_taps<T>(g.w, g.wo, g.align_corners, g.scales[2]);
  const bool volume = g.t != 1 || g.to != 1;
#pragma omp parallel for schedule(static) if (g.planes * g.to * g.ho * g.wo > (1 << 16))
  for (std::int64_t p = 0; p < g.planes; ++p)
    for (std::int64_t ot = 0; ot < g.to; ++ot) {
      const auto c = static_cast<std::size_t>(ot);
      const T* s0 = xp + (p * g.t + tt.i0[c]) * g.h * g.w;
      const T* s1 = xp + (p * g.t + tt.i1[c]) * g.h * g.w;
      for (std::int64_t oh = 0; oh < g.ho; ++oh) {
        const auto a = static_cast<std::size_t>(oh);
        for (std::int64_t ow = 0; ow < g.wo; ++ow) {
          const auto b = static_cast<std::size_t>(ow);
          // PyTorch's order: each row's two taps first, then the rows, then the slices.
          const auto plane = [&](const T* s) {
            const T* r0 = s + th.i0[a] * g.w;
            const T* r1 = s + th.i1[a] * g.w;
            const T top = r0[tw.i0[b]] * tw.l0[b] + r0[tw.i1[b]] * tw.l1[b];
            const T bottom = r1[tw.i0[b]] * tw.l0[b] + r1[tw.i1[b]] * tw.l1[b];
            return top * th.l0[a] + bottom * th.l1[a];
          };
          op_[((p * g.to + ot) * g.ho + oh) * g.wo + ow] =
              volume ? plane(s0) * tt.l0[c] + plane(s1) * tt.l1[c] : plane(s0);
        }
      }
    }
}

// dp must start zeroed: each output pixel adds into the input pixels it read.
template <typename T>
void linear_backward(const T* gp, T* dp, const LinearResize& g) {
  const auto tt = linear_taps<T>(g.t, g.to, g.align_corners, g.scales[0]);
  const auto th = linear_taps<T>(g.h, g.ho, g.align_corners, g.scales[1]);
  const auto tw = linear_taps<T>(g.w, g.wo, g.align_corners, g.scales[2]);
#pragma omp parallel for schedule(static) if (g.planes * g.to * g.ho * g.wo > (1 << 16))
  for (std::int64_t p = 0; p < g.planes; ++p)
    for (std::int64_t ot = 0; ot < g.to; ++ot) {
      const auto c = static_cast<std::size_t>(ot);
      for (std::int64_t oh = 0; oh < g.ho; ++oh) {
        const auto a = static_cast<std::size_t>(oh);
        for (std::int64_t ow = 0; ow < g.wo; ++ow) {
          const auto b = static_cast<std::size_t>(ow);
          const T gv = gp[((p * g.to + ot) * g.ho + oh) * g.wo + ow];
          const std::int64_t ts[2] = {tt.i0[c], tt.i1[c]}, hs[2] = {th.i0[a], th.i1[a]},
                             ws[2] = {tw.i0[b], tw.i1[b]};
          const T tl[2] = {tt.l0[c], tt.l1[c]}, hl[2] = {th.l0[a], th.l1[a]},
                  wl[2] = {tw.l0[b], tw.l1[b]};
          for (int i = 0; i < 2; ++i)
            for (int j = 0; j < 2; ++j)
              for (int k = 0; k < 2; ++k)
                dp[((p * g.t + ts[i]) * g.h + hs[j]) * g.w + ws[k]] += tl[i] * hl[j] * wl[k] * gv;
        }
      }
    }
}

// The last `dims` extents placed in three (leading ones 1), and the planes before them.
void spatial(const Tensor& x, std::size_t dims, std::int64_t& planes, std::int64_t in[3]) {
  const std::size_t nd = static_cast<std::size_t>(x.dim());
  planes = 1;
  for (std::size_t i = 0; i + dims < nd; ++i) planes *= x.shape()[i];
  in[0] = in[1] = in[2] = 1;
  for (std::size_t k = 0; k < dims; ++k) in[3 - dims + k] = x.shape()[nd - dims + k];
}

void check_resize(const char* op, const Tensor& x, const Shape& size) {
  const std::size_t dims = size.size();
  if (dims < 1 || dims > 3)
    throw std::invalid_argument(std::string(op) + ": 1, 2 or 3 output sizes, got " +
                                shape_str(size));
  if (x.dim() != static_cast<std::int64_t>(dims) + 2 || !is_floating(x.dtype()))
    throw std::invalid_argument(std::string(op) + ": expected a floating-point [N, C, *] with " +
                                std::to_string(dims) + " spatial dims, got " + x.str());
  for (std::int64_t v : size)
    if (v <= 0)
      throw std::invalid_argument(std::string(op) + ": output size must be positive, got " +
                                  shape_str(size));
}

Shape resized_shape(const Tensor& x, const Shape& size) {
  Shape s(x.shape().begin(), x.shape().begin() + 2);
  s.insert(s.end(), size.begin(), size.end());
  return s;
}

}  // namespace

Tensor upsample_linear(const Tensor& x_in, const Shape& size, bool align_corners,
                       const std::vector<double>& scales) {
  OpScope op("upsample_linear");
  check_resize("upsample_linear", x_in, size);
  const std::size_t dims = size.size();
  if (!scales.empty() && scales.size() != dims)
    throw std::invalid_argument("upsample_linear: " + std::to_string(scales.size()) +
                                " scales for " + std::to_string(dims) + " spatial dims");
  const Tensor x = as_contiguous(x_in);
  LinearResize g{};
  std::int64_t in[3];
  spatial(x, dims, g.planes, in);
  g.t = in[0];
  g.h = in[1];
  g.w = in[2];
  std::int64_t out[3] = {1, 1, 1};
  g.scales = {0, 0, 0};
  for (std::size_t k = 0; k < dims; ++k) {
    out[3 - dims + k] = size[k];
    if (!scales.empty()) g.scales[3 - dims + k] = scales[k];
  }
  g.to = out[0];
  g.ho = out[1];
  g.wo = out[2];
  g.align_corners = align_corners;
  Tensor y = Tensor::empty(resized_shape(x, size), x.dtype());
  if (!y.is_meta())
    dispatch_floating(x.dtype(), "upsample_linear",
                      [&]<typename T>() { linear_forward(x.data<T>(), y.data<T>(), g); });
  // F.interpolate(mode="linear" | "bilinear" | "trilinear") records UpsampleLinear1D /
  // Bilinear2D / Trilinear3DBackward1 in PyTorch 1.13 (the overloads with optional scale
  // factors); they keep only sizes and scales, no tensor.
  static const char* names[] = {"UpsampleLinear1DBackward1", "UpsampleBilinear2DBackward1",
                                "UpsampleTrilinear3DBackward1"};
  record(names[dims - 1], {x_in}, {y}, {},
         [g, shape = x_in.shape()](BackwardContext& c) -> TensorList {
           const Tensor gy = as_contiguous(c.grads[0]);
           Tensor dx = Tensor::zeros(shape, gy.dtype());
           if (!dx.is_meta())
             dispatch_floating(gy.dtype(), "upsample_linear backward", [&]<typename T>() {
               linear_backward(gy.data<T>(), dx.data<T>(), g);
             });
           return {dx};
         });
  return y;
}

Tensor upsample_nearest(const Tensor& x_in, const Shape& size) {
  OpScope op("upsample_nearest");
  check_resize("upsample_nearest", x_in, size);
  const std::size_t dims = size.size();
  const Tensor x = as_contiguous(x_in);
  std::int64_t planes = 0, in[3];
  spatial(x, dims, planes, in);
  std::int64_t out[3] = {1, 1, 1};
  for (std::size_t k = 0; k < dims; ++k) out[3 - dims + k] = size[k];
  const auto it = source_index(in[0], out[0]), ih = source_index(in[1], out[1]),
             iw = source_index(in[2], out[2]);
  const std::int64_t t = in[0], h = in[1], w = in[2], to = out[0], ho = out[1], wo = out[2];
  // The flat input offset of output (ot, oh, ow) within a plane.
  const auto source = [=](std::int64_t ot, std::int64_t oh, std::int64_t ow) {
    return (it[static_cast<std::size_t>(ot)] * h + ih[static_cast<std::size_t>(oh)]) * w +
           iw[static_cast<std::size_t>(ow)];
  };
  Tensor y = Tensor::empty(resized_shape(x, size), x.dtype());
  if (!y.is_meta())
    dispatch_floating_all(x.dtype(), "upsample_nearest", [&]<typename T>() {
      const T* xp = x.data<T>();
      T* yp = y.data<T>();
#pragma omp parallel for schedule(static) if (planes * to * ho * wo > (1 << 16))
      for (std::int64_t p = 0; p < planes; ++p)
        for (std::int64_t ot = 0; ot < to; ++ot)
          for (std::int64_t oh = 0; oh < ho; ++oh)
            for (std::int64_t ow = 0; ow < wo; ++ow)
              yp[((p * to + ot) * ho + oh) * wo + ow] = xp[p * t * h * w + source(ot, oh, ow)];
    });
  static const char* names[] = {"UpsampleNearest1DBackward0", "UpsampleNearest2DBackward0",
                                "UpsampleNearest3DBackward0"};
  record(names[dims - 1], {x_in}, {y}, {},
         [=, shape = x_in.shape()](BackwardContext& c) -> TensorList {
           const Tensor gy = as_contiguous(c.grads[0]);
           Tensor dx = Tensor::zeros(shape, gy.dtype());
           if (!dx.is_meta())
             dispatch_floating_all(gy.dtype(), "upsample_nearest backward", [&]<typename T>() {
               const T* gp = gy.data<T>();
               T* dp = dx.data<T>();
#pragma omp parallel for schedule(static) if (planes * to * ho * wo > (1 << 16))
               for (std::int64_t p = 0; p < planes; ++p)
                 for (std::int64_t ot = 0; ot < to; ++ot)
                   for (std::int64_t oh = 0; oh < ho; ++oh)
                     for (std::int64_t ow = 0; ow < wo; ++ow)
                       dp[p * t * h * w + source(ot, oh, ow)] +=
                           gp[((p * to + ot) * ho + oh) * wo + ow];
             });
           return {dx};
         });
  return y;
}

}  // namespace ckpt
