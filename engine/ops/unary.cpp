#include "engine/ops/unary.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

#include "engine/autograd/node.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/ops/unary_detail.hpp"

namespace ckpt {

using unary_detail::chain;
using unary_detail::k;
using unary_detail::kInvSqrt2;
using unary_detail::kInvSqrt2Pi;
using unary_detail::map_floating;

Tensor exp(const Tensor& x) {
  OpScope op("exp");
  Tensor out = map_floating(x, "exp", [](auto v) { return std::exp(v); });
  record("ExpBackward0", {x}, {out}, {out},
         [](BackwardContext& c) -> TensorList { return {mul_raw(c.grads[0], c.saved[0])}; });
  return out;
}

// 1 / √x computed as PyTorch does (one rounding of the float reciprocal of the root); the
// gradient -½ · grad · r³ from the saved result.
Tensor rsqrt(const Tensor& x) {
  OpScope op("rsqrt");
  Tensor out = map_floating(x, "rsqrt", [](auto v) { return decltype(v)(1) / std::sqrt(v); });
  record("RsqrtBackward0", {x}, {out}, {out}, [](BackwardContext& c) -> TensorList {
    return {chain(c.grads[0], c.saved[0], "rsqrt",
                  [](auto r) { return k<decltype(r)>(-0.5) * r * r * r; })};
  });
  return out;
}

Tensor log(const Tensor& x) {
  OpScope op("log");
  Tensor out = map_floating(x, "log", [](auto v) { return std::log(v); });
  record("LogBackward0", {x}, {out}, {x},
         [](BackwardContext& c) -> TensorList { return {div_raw(c.grads[0], c.saved[0])}; });
  return out;
}

Tensor sqrt(const Tensor& x) {
  OpScope op("sqrt");
  Tensor out = map_floating(x, "sqrt", [](auto v) { return std::sqrt(v); });
  record("SqrtBackward0", {x}, {out}, {out}, [](BackwardContext& c) -> TensorList {
    return {chain(c.grads[0], c.saved[0], "sqrt", [](auto r) { return k<decltype(r)>(0.5) / r; })};
  });
  return out;
}

Tensor relu(const Tensor& x) {
  OpScope op("relu");
  // Typed, not through double: ReLU is on every hot path. NaN propagates, as in PyTorch.
  Tensor out = dispatch_floating_all(x.dtype(), "relu", [&]<typename T>() {
    return unary_map<T>(x, [](T v) { return v < T(0) ? T(0) : v; });
  });
  record("ReluBackward0", {x}, {out}, {out}, [](BackwardContext& c) -> TensorList {
    return {dispatch_floating_all(c.grads[0].dtype(), "relu backward", [&]<typename T>() {
      return binary_map<T>(
          c.grads[0], c.saved[0], [](T g, T r) { return r > T(0) ? g : T(0); }, "relu backward");
    })};
  });
  return out;
}

Tensor gelu(const Tensor& x) {
  OpScope op("gelu");
  Tensor out = map_floating(x, "gelu", [](auto v) {
    using V = decltype(v);
    return k<V>(0.5) * v * (k<V>(1) + std::erf(v * k<V>(kInvSqrt2)));
  });
  record("GeluBackward0", {x}, {out}, {x}, [](BackwardContext& c) -> TensorList {
    return {chain(c.grads[0], c.saved[0], "gelu", [](auto v) {
      using V = decltype(v);
      const V cdf = k<V>(0.5) * (k<V>(1) + std::erf(v * k<V>(kInvSqrt2)));
      const V pdf = k<V>(kInvSqrt2Pi) * std::exp(k<V>(-0.5) * v * v);
      return cdf + v * pdf;
    })};
  });
  return out;
}

Tensor tanh(const Tensor& x) {
  OpScope op("tanh");
  Tensor out = map_floating(x, "tanh", [](auto v) { return std::tanh(v); });
  record("TanhBackward0", {x}, {out}, {out}, [](BackwardContext& c) -> TensorList {
    return {
        chain(c.grads[0], c.saved[0], "tanh", [](auto r) { return k<decltype(r)>(1) - r * r; })};
  });
  return out;
}

Tensor sigmoid(const Tensor& x) {
  OpScope op("sigmoid");
  Tensor out = map_floating(x, "sigmoid", [](auto v) {
    using V = decltype(v);
    return k<V>(1) / (k<V>(1) + std::exp(-v));
  });
  record("SigmoidBackward0", {x}, {out}, {out}, [](BackwardContext& c) -> TensorList {
    return {chain(c.grads[0], c.saved[0], "sigmoid",
                  [](auto r) { return r * (k<decltype(r)>(1) - r); })};
  });
  return out;
}

Tensor sin(const Tensor& x) {
  OpScope op("sin");
  Tensor out = map_floating(x, "sin", [](auto v) { return std::sin(v); });
  record("SinBackward0", {x}, {out}, {x}, [](BackwardContext& c) -> TensorList {
    return {chain(c.grads[0], c.saved[0], "sin", [](auto v) { return std::cos(v); })};
  });
  return out;
}

Tensor cos(const Tensor& x) {
  OpScope op("cos");
  Tensor out = map_floating(x, "cos", [](auto v) { return std::cos(v); });
  record("CosBackward0", {x}, {out}, {x}, [](BackwardContext& c) -> TensorList {
    return {chain(c.grads[0], c.saved[0], "cos", [](auto v) { return -std::sin(v); })};
  });
  return out;
}

Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max) {
  OpScope op("clamp");
  if (!min && !max)
    throw std::invalid_argument("torch.clamp: At least one of 'min' or 'max' must not be None");
  const bool has_min = min.has_value(), has_max = max.has_value();
  const double lo = min.value_or(0), hi = max.value_or(0);
  Tensor out = dispatch_floating_all(x.dtype(), "clamp", [&]<typename T>() {
    const T l = static_cast<T>(lo), h = static_cast<T>(hi);
    return unary_map<T>(x, [=](T v) {
      if (std::isnan(v)) return v;
      if (has_min && v < l) v = l;
      if (has_max && v > h) v = h;
      return v;
    });
  });
  record("ClampBackward1", {x}, {out}, {x}, [=](BackwardContext& c) -> TensorList {
    return {dispatch_floating_all(c.grads[0].dtype(), "clamp backward", [&]<typename T>() {
      const T l = static_cast<T>(lo), h = static_cast<T>(hi);
      return binary_map<T>(
          c.grads[0], c.saved[0],
          [=](T g, T v) { return (!has_min || v >= l) && (!has_max || v <= h) ? g : T(0); },
          "clamp backward");
    })};
  });
  return out;
}

Tensor hardtanh(const Tensor& x, double min, double max) {
  OpScope op("hardtanh");
  Tensor out = dispatch_floating_all(x.dtype(), "hardtanh", [&]<typename T>() {
    const T l = static_cast<T>(min), h = static_cast<T>(max);
    return unary_map<T>(x, [=](T v) { return std::isnan(v) ? v : (v < l ? l : (v > h ? h : v)); });
  });
  record("HardtanhBackward0", {x}, {out}, {x}, [=](BackwardContext& c) -> TensorList {
    return {dispatch_floating_all(c.grads[0].dtype(), "hardtanh backward", [&]<typename T>() {
      const T l = static_cast<T>(min), h = static_cast<T>(max);
      return binary_map<T>(
          c.grads[0], c.saved[0], [=](T g, T v) { return v <= l || v >= h ? T(0) : g; },
          "hardtanh backward");
    })};
  });
  return out;
}

Tensor erf(const Tensor& x) {
  OpScope op("erf");
  Tensor out = map_floating(x, "erf", [](auto v) { return std::erf(v); });
  record("ErfBackward0", {x}, {out}, {x}, [](BackwardContext& c) -> TensorList {
    return {chain(c.grads[0], c.saved[0], "erf", [](auto v) {
      using V = decltype(v);
      return k<V>(2.0 / std::sqrt(std::numbers::pi)) * std::exp(-v * v);
    })};
  });
  return out;
}

Tensor hardswish(const Tensor& x) {
  OpScope op("hardswish");
  Tensor out = map_floating(x, "hardswish", [](auto v) {
    using V = decltype(v);
    return v * std::min(std::max(v + k<V>(3), k<V>(0)), k<V>(6)) / k<V>(6);
  });
  // PyTorch 1.13's slope: 0 below -3, x/3 + 1/2 on [-3, 3] (both ends included), 1 above.
  record("HardswishBackward0", {x}, {out}, {x}, [](BackwardContext& c) -> TensorList {
    return {chain(c.grads[0], c.saved[0], "hardswish", [](auto v) {
      using V = decltype(v);
      return v < k<V>(-3) ? k<V>(0) : v <= k<V>(3) ? v / k<V>(3) + k<V>(0.5) : k<V>(1);
    })};
  });
  return out;
}

Tensor hardsigmoid(const Tensor& x) {
  OpScope op("hardsigmoid");
  Tensor out = map_floating(x, "hardsigmoid", [](auto v) {
    using V = decltype(v);
    return std::min(std::max(v + k<V>(3), k<V>(0)), k<V>(6)) / k<V>(6);
  });
  // Slope 1/6 strictly inside (-3, 3), as PyTorch 1.13, whose kernel spells it 1.0f / 6.0f in
  // every dtype: float32's 1/6 (0.1666666716...) also in float64, 3e-8 off the exact slope,
  // which MobileNetV3's squeeze-excitation gates carry into every earlier layer's gradient.
  record("HardsigmoidBackward0", {x}, {out}, {x}, [](BackwardContext& c) -> TensorList {
    return {chain(c.grads[0], c.saved[0], "hardsigmoid", [](auto v) {
      using V = decltype(v);
      return v > k<V>(-3) && v < k<V>(3) ? static_cast<V>(1.0f / 6.0f) : k<V>(0);
    })};
  });
  return out;
}

// The activations below save their input (PyTorch 1.13's LeakyReluBackward0, EluBackward0,
// SoftplusBackward0, AbsBackward0: `self`), and their slopes are PyTorch's at the kinks.
Tensor leaky_relu(const Tensor& x, double slope) {
  OpScope op("leaky_relu");
  Tensor out = map_floating(x, "leaky_relu", [slope](auto v) {
    using V = decltype(v);
    return v > k<V>(0) ? v : v * k<V>(slope);
  });
  record("LeakyReluBackward0", {x}, {out}, {x}, [slope](BackwardContext& c) -> TensorList {
    return {chain(c.grads[0], c.saved[0], "leaky_relu", [slope](auto v) {
      using V = decltype(v);
      return v > k<V>(0) ? k<V>(1) : k<V>(slope);
    })};
  });
  return out;
}

Tensor elu(const Tensor& x, double alpha) {
  OpScope op("elu");
  Tensor out = map_floating(x, "elu", [alpha](auto v) {
    using V = decltype(v);
    return v > k<V>(0) ? v : k<V>(alpha) * std::expm1(v);
  });
  record("EluBackward0", {x}, {out}, {x}, [alpha](BackwardContext& c) -> TensorList {
    return {chain(c.grads[0], c.saved[0], "elu", [alpha](auto v) {
      using V = decltype(v);
      return v <= k<V>(0) ? k<V>(alpha) * std::exp(v) : k<V>(1);
    })};
  });
  return out;
}

// F.softplus with beta 1 and threshold 20: linear above the threshold, as PyTorch.
Tensor softplus(const Tensor& x) {
  OpScope op("softplus");
  Tensor out = map_floating(x, "softplus", [](auto v) {
    using V = decltype(v);
    return v > k<V>(20) ? v : std::log1p(std::exp(v));
  });
  record("SoftplusBackward0", {x}, {out}, {x}, [](BackwardContext& c) -> TensorList {
    return {chain(c.grads[0], c.saved[0], "softplus", [](auto v) {
      using V = decltype(v);
      const V z = std::exp(v);
      return v > k<V>(20) ? k<V>(1) : z / (z + k<V>(1));
    })};
  });
  return out;
}

Tensor abs(const Tensor& x) {
  OpScope op("abs");
  Tensor out = map_floating(x, "abs", [](auto v) { return std::abs(v); });
  record("AbsBackward0", {x}, {out}, {x}, [](BackwardContext& c) -> TensorList {
    return {chain(c.grads[0], c.saved[0], "abs", [](auto v) {
      using V = decltype(v);
      return v > k<V>(0) ? k<V>(1) : v < k<V>(0) ? k<V>(-1) : k<V>(0);
    })};
  });
  return out;
}

Tensor sign(const Tensor& x) {
  OpScope op("sign");
  Tensor out = map_floating(x, "sign", [](auto v) {
    using V = decltype(v);
    return std::isnan(v) ? v : v > k<V>(0) ? k<V>(1) : v < k<V>(0) ? k<V>(-1) : k<V>(0);
  });
  record("SignBackward0", {x}, {out}, {}, [shape = x.shape()](BackwardContext& c) -> TensorList {
    return {Tensor::zeros(shape, c.grads[0].dtype())};
  });
  return out;
}

}  // namespace ckpt
