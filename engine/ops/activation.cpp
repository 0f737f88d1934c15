#include "engine/ops/activation.hpp"

#include <cmath>
#include <numbers>

#include "engine/autograd/node.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/ops/unary_detail.hpp"
#include "engine/tensor/reduced_float.hpp"

namespace ckpt {

using unary_detail::chain;
using unary_detail::k;
using unary_detail::map_floating;

namespace {
constexpr double kBeta = std::numbers::sqrt2 * std::numbers::inv_sqrtpi;  // sqrt(2/pi)
constexpr double kKappa = 0.044715;
}  // namespace

Tensor silu(const Tensor& x) {
  OpScope op("silu");
  Tensor out = map_floating(x, "silu", [](auto v) {
    using V = decltype(v);
    return v / (k<V>(1) + std::exp(-v));
  });
  record("SiluBackward0", {x}, {out}, {x}, [](BackwardContext& c) -> TensorList {
    return {chain(c.grads[0], c.saved[0], "silu", [](auto v) {
      using V = decltype(v);
      const V s = k<V>(1) / (k<V>(1) + std::exp(-v));
      return s * (k<V>(1) + v * (k<V>(1) - s));
    })};
  });
  return out;
}

// PyTorch's CPU kernel: softplus without its threshold, log1p(exp(x)).
Tensor mish(const Tensor& x) {
  OpScope op("mish");
  Tensor out =
      map_floating(x, "mish", [](auto v) { return v * std::tanh(std::log1p(std::exp(v))); });
  record("MishBackward0", {x}, {out}, {x}, [](BackwardContext& c) -> TensorList {
    return {chain(c.grads[0], c.saved[0], "mish", [](auto v) {
      using V = decltype(v);
      const V t = std::tanh(std::log1p(std::exp(v)));
      const V s = k<V>(1) / (k<V>(1) + std::exp(-v));
      return t + v * s * (k<V>(1) - t * t);
    })};
  });
  return out;
}

// GeluBackward0 with approximate='tanh': PyTorch 1.13's GeluKernel formulas.
Tensor gelu_tanh(const Tensor& x) {
  OpScope op("gelu");
  Tensor out = map_floating(x, "gelu", [](auto v) {
    using V = decltype(v);
    const V inner = k<V>(kBeta) * (v + k<V>(kKappa) * v * v * v);
    return k<V>(0.5) * v * (k<V>(1) + std::tanh(inner));
  });
  record("GeluBackward0", {x}, {out}, {x}, [](BackwardContext& c) -> TensorList {
    return {chain(c.grads[0], c.saved[0], "gelu", [](auto v) {
      using V = decltype(v);
      const V x_sq = v * v;
      const V inner = k<V>(kBeta) * (v + k<V>(kKappa) * x_sq * v);
      const V t = std::tanh(inner);
      const V left = k<V>(0.5) * v, right = k<V>(1) + t;
      const V right_derivative =
          left * (k<V>(1) - t * t) * k<V>(kBeta) * (k<V>(1) + k<V>(3 * kKappa) * x_sq);
      return k<V>(0.5) * right + right_derivative;
    })};
  });
  return out;
}

namespace {

// glu's input as [outer, 2, half, inner] around `dim`: element (o, h, i) of a half is at
// o * 2 * half * inner + h * inner + i, its other half's half * inner further.
struct GluShape {
  std::int64_t outer = 1, half = 1, inner = 1;
  std::int64_t first(std::int64_t o, std::int64_t r) const { return o * 2 * half * inner + r; }
  std::int64_t out(std::int64_t o, std::int64_t r) const { return o * half * inner + r; }
};

GluShape glu_shape(const Tensor& x, std::int64_t d) {
  GluShape g;
  for (std::int64_t i = 0; i < d; ++i) g.outer *= x.shape()[static_cast<std::size_t>(i)];
  for (std::int64_t i = d + 1; i < x.dim(); ++i) g.inner *= x.shape()[static_cast<std::size_t>(i)];
  g.half = x.shape()[static_cast<std::size_t>(d)] / 2;
  return g;
}

}  // namespace

// PyTorch 1.13's CPU kernels: a * (1 / (1 + exp(-b))) forward; backward, sigmoid(b) into the
// first half, then (1 - s) * s * a * dY into the second and the first multiplied by dY.
Tensor glu(const Tensor& x_in, std::int64_t dim) {
  OpScope op("glu");
  if (x_in.dim() == 0)
    throw std::invalid_argument("glu: does not support scalars because halving size must be even");
  if (!is_floating(x_in.dtype()))
    throw std::invalid_argument("glu: expected a floating-point input, got " + x_in.str());
  const std::int64_t d = wrap_dim(dim, x_in.dim(), "glu");
  const std::int64_t size = x_in.shape()[static_cast<std::size_t>(d)];
  if (size % 2 != 0)
    throw std::invalid_argument("glu: Halving dimension must be even, but dimension " +
                                std::to_string(d) + " is size " + std::to_string(size) + " in " +
                                x_in.str());
  const Tensor x = as_contiguous(x_in);
  const GluShape g = glu_shape(x, d);
  Shape out_shape = x.shape();
  out_shape[static_cast<std::size_t>(d)] = g.half;
  Tensor out = Tensor::empty(out_shape, x.dtype());
  const std::int64_t block = g.half * g.inner;
  if (!out.is_meta())
    dispatch_floating_all(x.dtype(), "glu", [&]<typename T>() {
      using M = opmath_t<T>;
      const T* xp = x.data<T>();
      T* yp = out.data<T>();
#pragma omp parallel for schedule(static) if (g.outer * block > kParallelGrain)
      for (std::int64_t o = 0; o < g.outer; ++o)
        for (std::int64_t r = 0; r < block; ++r) {
          const M a = static_cast<M>(xp[g.first(o, r)]);
          const M b = static_cast<M>(xp[g.first(o, r) + block]);
          yp[g.out(o, r)] = static_cast<T>(a * (M(1) / (M(1) + std::exp(-b))));
        }
    });
  record("GluBackward0", {x_in}, {out}, {x_in}, [g, block](BackwardContext& c) -> TensorList {
    const Tensor gy = as_contiguous(c.grads[0]);
    const Tensor x = as_contiguous(c.saved[0]);
    Tensor dx = Tensor::empty(x.shape(), x.dtype());
    if (dx.is_meta()) return {dx};
    dispatch_floating_all(x.dtype(), "glu backward", [&]<typename T>() {
      using M = opmath_t<T>;
      const T* xp = x.data<T>();
      const T* gp = gy.data<T>();
      T* dp = dx.data<T>();
#pragma omp parallel for schedule(static) if (g.outer * block > kParallelGrain)
      for (std::int64_t o = 0; o < g.outer; ++o)
        for (std::int64_t r = 0; r < block; ++r) {
          const std::int64_t i = g.first(o, r);
          // Each intermediate rounded to T, as the kernels write them to the gradient's halves.
          const T s = static_cast<T>(M(1) / (M(1) + std::exp(-static_cast<M>(xp[i + block]))));
          const M gv = static_cast<M>(gp[g.out(o, r)]);
          dp[i + block] = static_cast<T>((M(1) - static_cast<M>(s)) * static_cast<M>(s) *
                                         static_cast<M>(xp[i]) * gv);
          dp[i] = static_cast<T>(static_cast<M>(s) * gv);
        }
    });
    return {dx};
  });
  return out;
}

}  // namespace ckpt
