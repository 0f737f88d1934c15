#include "engine/ops/activation.hpp"

#include <cmath>
#include <numbers>

#include "engine/autograd/node.hpp"
#include "engine/ops/unary_detail.hpp"

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

}  // namespace ckpt
