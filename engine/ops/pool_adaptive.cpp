#include <limits>
#include <stdexcept>
#include <string>

#include "engine/autograd/node.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/ops/pool.hpp"
#include "engine/ops/pool_detail.hpp"
#include "engine/ops/reduce.hpp"
#include "engine/ops/shape_ops.hpp"
#include "engine/tensor/reduced_float.hpp"

// Adaptive average and max pooling over 1, 2 or 3 spatial dimensions.

namespace ckpt {

using namespace pool_detail;

namespace {

// PyTorch's adaptive windows: [floor(o*in/out), ceil((o+1)*in/out)).
inline std::int64_t adaptive_start(std::int64_t o, std::int64_t out, std::int64_t in) {
  return (o * in) / out;
}
inline std::int64_t adaptive_end(std::int64_t o, std::int64_t out, std::int64_t in) {
  return ((o + 1) * in + out - 1) / out;
}

// An adaptive pool's planes and extents (t = to = 1 below 3-D).
struct AdaptiveGeometry {
  std::int64_t planes, t, h, w, to, ho, wo;
  std::int64_t in_size() const { return t * h * w; }
  std::int64_t out_size() const { return to * ho * wo; }
};

// The window of one output cell.
struct Cell {
  std::int64_t t0, t1, h0, h1, w0, w1;
  std::int64_t size() const { return (t1 - t0) * (h1 - h0) * (w1 - w0); }
};
inline Cell cell(const AdaptiveGeometry& g, std::int64_t ot, std::int64_t oh, std::int64_t ow) {
  return {adaptive_start(ot, g.to, g.t), adaptive_end(ot, g.to, g.t),
          adaptive_start(oh, g.ho, g.h), adaptive_end(oh, g.ho, g.h),
          adaptive_start(ow, g.wo, g.w), adaptive_end(ow, g.wo, g.w)};
}

// Calls f(plane, output index within the plane, cell) for every output cell, in parallel over
// planes (no two planes share an element).
template <typename F>
void for_each_cell(const AdaptiveGeometry& g, F&& f) {
#pragma omp parallel for schedule(static) if (g.planes * g.in_size() > kParallelGrain)
  for (std::int64_t pl = 0; pl < g.planes; ++pl)
    for (std::int64_t ot = 0; ot < g.to; ++ot)
      for (std::int64_t oh = 0; oh < g.ho; ++oh)
        for (std::int64_t ow = 0; ow < g.wo; ++ow)
          f(pl, (ot * g.ho + oh) * g.wo + ow, cell(g, ot, oh, ow));
}

AdaptiveGeometry adaptive_geometry(const std::string& fn, const Tensor& x, int dims,
                                   const PoolInts& output_size) {
  check_pool_input(fn, x, dims);
  const auto out = spread(output_size, dims, 1, fn, "output_size");
  for (int i = 3 - dims; i < 3; ++i)
    if (out[static_cast<std::size_t>(i)] <= 0)
      throw std::invalid_argument(fn + ": output size must be positive, got " +
                                  shape_str(output_size) + " for input " + x.str());
  const auto nd = static_cast<std::size_t>(x.dim());
  std::array<std::int64_t, 3> in{1, 1, 1};
  for (int i = 0; i < dims; ++i)
    in[static_cast<std::size_t>(3 - dims + i)] = x.shape()[nd - static_cast<std::size_t>(dims - i)];
  std::int64_t planes = 1;
  for (std::size_t i = 0; i + static_cast<std::size_t>(dims) < nd; ++i) planes *= x.shape()[i];
  return {planes, in[0], in[1], in[2], out[0], out[1], out[2]};
}

Shape adaptive_shape(const Tensor& x, int dims, const AdaptiveGeometry& g) {
  Shape s = x.shape();
  const std::int64_t out[3] = {g.to, g.ho, g.wo};
  for (int i = 0; i < dims; ++i)
    s[s.size() - static_cast<std::size_t>(dims - i)] = out[3 - dims + i];
  return s;
}

// 1-D as PyTorch 1.13 runs it: the 2-D pool over a unit height.
template <Tensor (*Pool)(const Tensor&, int, const PoolInts&)>
Tensor over_unit_height(const char* fn, const Tensor& x, const PoolInts& output_size) {
  check_pool_input(fn, x, 1);
  if (output_size.size() != 1)
    throw std::invalid_argument(std::string(fn) + ": output_size must be a single int, got " +
                                shape_str(output_size));
  return squeeze(Pool(unsqueeze(x, -2), 2, {1, output_size[0]}), -2);
}

}  // namespace

Tensor adaptive_avg_pool(const Tensor& x_in, int dims, const PoolInts& output_size) {
  if (dims == 1)
    return over_unit_height<adaptive_avg_pool>("adaptive_avg_pool1d", x_in, output_size);
  const std::string fn = rank_name("adaptive_avg_pool", dims, "d");
  const AdaptiveGeometry g = adaptive_geometry(fn, x_in, dims, output_size);
  // PyTorch 1.13 turns the global pool into a mean over the spatial dims, which saves its input.
  if (g.out_size() == 1) {
    std::vector<std::int64_t> spatial;
    for (int i = 1; i <= dims; ++i) spatial.push_back(-i);
    return mean(x_in, spatial, true);
  }
  OpScope op("adaptive_avg_pool");
  const Tensor x = as_contiguous(x_in);
  Tensor out = Tensor::empty(adaptive_shape(x, dims, g), x.dtype());
  if (!out.is_meta())
    dispatch_floating_all(x.dtype(), fn.c_str(), [&]<typename T>() {
      using M = opmath_t<T>;
      const T* xp = x.data<T>();
      T* yp = out.data<T>();
      for_each_cell(g, [&](std::int64_t pl, std::int64_t o, const Cell& c) {
        const T* in = xp + pl * g.in_size();
        M acc = 0;
        for (std::int64_t it = c.t0; it < c.t1; ++it)
          for (std::int64_t ih = c.h0; ih < c.h1; ++ih)
            for (std::int64_t iw = c.w0; iw < c.w1; ++iw)
              acc += static_cast<M>(in[(it * g.h + ih) * g.w + iw]);
        yp[pl * g.out_size() + o] = static_cast<T>(acc / static_cast<M>(c.size()));
      });
    });
  record(dims == 3 ? "AdaptiveAvgPool3DBackward0" : "AdaptiveAvgPool2DBackward0", {x_in}, {out},
         {x_in}, [g, shape = x_in.shape()](BackwardContext& c) -> TensorList {
           const Tensor gy = as_contiguous(c.grads[0]);
           Tensor dx = Tensor::zeros(shape, gy.dtype());
           if (!dx.is_meta())
             dispatch_floating_all(gy.dtype(), "adaptive_avg_pool backward", [&]<typename T>() {
               using M = opmath_t<T>;
               const T* gp = gy.data<T>();
               T* dp = dx.data<T>();
               for_each_cell(g, [&](std::int64_t pl, std::int64_t o, const Cell& cl) {
                 const T v = static_cast<T>(static_cast<M>(gp[pl * g.out_size() + o]) /
                                            static_cast<M>(cl.size()));
                 T* d = dp + pl * g.in_size();
                 for (std::int64_t it = cl.t0; it < cl.t1; ++it)
                   for (std::int64_t ih = cl.h0; ih < cl.h1; ++ih)
                     for (std::int64_t iw = cl.w0; iw < cl.w1; ++iw)
                       d[(it * g.h + ih) * g.w + iw] += v;
               });
             });
           return {dx};
         });
  return out;
}

Tensor adaptive_max_pool(const Tensor& x_in, int dims, const PoolInts& output_size) {
  if (dims == 1)
    return over_unit_height<adaptive_max_pool>("adaptive_max_pool1d", x_in, output_size);
  const std::string fn = rank_name("adaptive_max_pool", dims, "d");
  const AdaptiveGeometry g = adaptive_geometry(fn, x_in, dims, output_size);
  OpScope op("adaptive_max_pool");
  const Tensor x = as_contiguous(x_in);
  const Shape os = adaptive_shape(x, dims, g);
  Tensor out = Tensor::empty(os, x.dtype());
  Tensor indices = Tensor::empty(os, DType::i64);
  if (!out.is_meta())
    dispatch_floating_all(x.dtype(), fn.c_str(), [&]<typename T>() {
      const T* xp = x.data<T>();
      T* yp = out.data<T>();
      std::int64_t* ip = indices.data<std::int64_t>();
      for_each_cell(g, [&](std::int64_t pl, std::int64_t o, const Cell& c) {
        const T* in = xp + pl * g.in_size();
        // PyTorch's rule: the first strictly greater value wins, and NaN propagates.
        std::int64_t best = (c.t0 * g.h + c.h0) * g.w + c.w0;
        T m = -std::numeric_limits<T>::infinity();
        for (std::int64_t it = c.t0; it < c.t1; ++it)
          for (std::int64_t ih = c.h0; ih < c.h1; ++ih)
            for (std::int64_t iw = c.w0; iw < c.w1; ++iw) {
              const std::int64_t at = (it * g.h + ih) * g.w + iw;
              const T v = in[at];
              const bool take = v > m || v != v;
              m = take ? v : m;
              best = take ? at : best;
            }
        yp[pl * g.out_size() + o] = m;
        ip[pl * g.out_size() + o] = best;
      });
    });
  record(dims == 3 ? "AdaptiveMaxPool3DBackward0" : "AdaptiveMaxPool2DBackward0", {x_in}, {out},
         {x_in, indices}, [g, shape = x_in.shape()](BackwardContext& c) -> TensorList {
           const Tensor gy = as_contiguous(c.grads[0]);
           const Tensor& idx = c.saved[1];
           Tensor dx = Tensor::zeros(shape, gy.dtype());
           if (!dx.is_meta())
             dispatch_floating_all(gy.dtype(), "adaptive_max_pool backward", [&]<typename T>() {
               const T* gp = gy.data<T>();
               const std::int64_t* ip = idx.data<std::int64_t>();
               T* dp = dx.data<T>();
               const std::int64_t per = g.out_size();
#pragma omp parallel for schedule(static) if (g.planes * g.in_size() > kParallelGrain)
               for (std::int64_t pl = 0; pl < g.planes; ++pl)
                 for (std::int64_t o = 0; o < per; ++o)
                   dp[pl * g.in_size() + ip[pl * per + o]] += gp[pl * per + o];
             });
           return {dx};
         });
  return out;
}

}  // namespace ckpt
