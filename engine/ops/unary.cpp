#include "engine/ops/unary.hpp"

#include <cmath>
#include <numbers>

#include "engine/autograd/node.hpp"
#include "engine/ops/kernels.hpp"

namespace ckpt {

namespace {

template <typename F>
Tensor map_floating(const Tensor& x, const char* op, F f) {
  return dispatch_floating(x.dtype(), op, [&]<typename T>() {
    return unary_map<T>(x, [&](T v) { return static_cast<T>(f(static_cast<double>(v))); });
  });
}

// grad * d, with d computed elementwise from a saved tensor.
template <typename F>
Tensor chain(const Tensor& grad, const Tensor& saved, const char* op, F derivative) {
  return mul_raw(grad, map_floating(saved, op, derivative));
}

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

}  // namespace

Tensor exp(const Tensor& x) {
  OpScope op("exp");
  Tensor out = map_floating(x, "exp", [](double v) { return std::exp(v); });
  record("ExpBackward0", {x}, {out}, {out},
         [](BackwardContext& c) -> TensorList { return {mul_raw(c.grads[0], c.saved[0])}; });
  return out;
}

Tensor log(const Tensor& x) {
  OpScope op("log");
  Tensor out = map_floating(x, "log", [](double v) { return std::log(v); });
  record("LogBackward0", {x}, {out}, {x},
         [](BackwardContext& c) -> TensorList { return {div_raw(c.grads[0], c.saved[0])}; });
  return out;
}

Tensor sqrt(const Tensor& x) {
  OpScope op("sqrt");
  Tensor out = map_floating(x, "sqrt", [](double v) { return std::sqrt(v); });
  record("SqrtBackward0", {x}, {out}, {out}, [](BackwardContext& c) -> TensorList {
    return {chain(c.grads[0], c.saved[0], "sqrt", [](double r) { return 0.5 / r; })};
  });
  return out;
}

Tensor relu(const Tensor& x) {
  OpScope op("relu");
  Tensor out = map_floating(x, "relu", [](double v) { return v > 0 ? v : 0.0; });
  record("ReluBackward0", {x}, {out}, {out}, [](BackwardContext& c) -> TensorList {
    return {chain(c.grads[0], c.saved[0], "relu", [](double r) { return r > 0 ? 1.0 : 0.0; })};
  });
  return out;
}

Tensor gelu(const Tensor& x) {
  OpScope op("gelu");
  Tensor out =
      map_floating(x, "gelu", [](double v) { return 0.5 * v * (1.0 + std::erf(v * kInvSqrt2)); });
  record("GeluBackward0", {x}, {out}, {x}, [](BackwardContext& c) -> TensorList {
    return {chain(c.grads[0], c.saved[0], "gelu", [](double v) {
      const double cdf = 0.5 * (1.0 + std::erf(v * kInvSqrt2));
      const double pdf = kInvSqrt2Pi * std::exp(-0.5 * v * v);
      return cdf + v * pdf;
    })};
  });
  return out;
}

Tensor tanh(const Tensor& x) {
  OpScope op("tanh");
  Tensor out = map_floating(x, "tanh", [](double v) { return std::tanh(v); });
  record("TanhBackward0", {x}, {out}, {out}, [](BackwardContext& c) -> TensorList {
    return {chain(c.grads[0], c.saved[0], "tanh", [](double r) { return 1.0 - r * r; })};
  });
  return out;
}

Tensor sigmoid(const Tensor& x) {
  OpScope op("sigmoid");
  Tensor out = map_floating(x, "sigmoid", [](double v) { return 1.0 / (1.0 + std::exp(-v)); });
  record("SigmoidBackward0", {x}, {out}, {out}, [](BackwardContext& c) -> TensorList {
    return {chain(c.grads[0], c.saved[0], "sigmoid", [](double r) { return r * (1.0 - r); })};
  });
  return out;
}

Tensor sin(const Tensor& x) {
  OpScope op("sin");
  Tensor out = map_floating(x, "sin", [](double v) { return std::sin(v); });
  record("SinBackward0", {x}, {out}, {x}, [](BackwardContext& c) -> TensorList {
    return {chain(c.grads[0], c.saved[0], "sin", [](double v) { return std::cos(v); })};
  });
  return out;
}

Tensor cos(const Tensor& x) {
  OpScope op("cos");
  Tensor out = map_floating(x, "cos", [](double v) { return std::cos(v); });
  record("CosBackward0", {x}, {out}, {x}, [](BackwardContext& c) -> TensorList {
    return {chain(c.grads[0], c.saved[0], "cos", [](double v) { return -std::sin(v); })};
  });
  return out;
}

}  // namespace ckpt
