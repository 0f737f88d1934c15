#include "engine/ops/elementwise.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include "engine/autograd/grad_mode.hpp"
#include "engine/autograd/node.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/tensor/reduced_float.hpp"

namespace ckpt {

bool needs_grad(const Tensor& t) {
  return GradMode::is_enabled() && t.requires_grad();
}

namespace {
Tensor maybe(bool keep, const Tensor& t) {
  return keep ? t : Tensor();
}
}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  OpScope op("add");
  Tensor out = add_raw(a, b);
  record("AddBackward0", {a, b}, {out}, {},
         [sa = a.shape(), sb = b.shape()](BackwardContext& c) -> TensorList {
           return {c.needs_input_grad[0] ? sum_to_raw(c.grads[0], sa) : Tensor(),
                   c.needs_input_grad[1] ? sum_to_raw(c.grads[0], sb) : Tensor()};
         });
  return out;
}

Tensor sub(const Tensor& a, const Tensor& b) {
  OpScope op("sub");
  Tensor out = sub_raw(a, b);
  record("SubBackward0", {a, b}, {out}, {},
         [sa = a.shape(), sb = b.shape()](BackwardContext& c) -> TensorList {
           return {
               c.needs_input_grad[0] ? sum_to_raw(c.grads[0], sa) : Tensor(),
               c.needs_input_grad[1] ? sum_to_raw(mul_scalar_raw(c.grads[0], -1.0), sb) : Tensor()};
         });
  return out;
}

Tensor mul(const Tensor& a, const Tensor& b) {
  OpScope op("mul");
  Tensor out = mul_raw(a, b);
  record("MulBackward0", {a, b}, {out}, {maybe(needs_grad(b), a), maybe(needs_grad(a), b)},
         [sa = a.shape(), sb = b.shape()](BackwardContext& c) -> TensorList {
           const Tensor& g = c.grads[0];
           return {c.needs_input_grad[0] ? sum_to_raw(mul_raw(g, c.saved[1]), sa) : Tensor(),
                   c.needs_input_grad[1] ? sum_to_raw(mul_raw(g, c.saved[0]), sb) : Tensor()};
         });
  return out;
}

Tensor div(const Tensor& a, const Tensor& b) {
  OpScope op("div");
  Tensor out = div_raw(a, b);
  record("DivBackward0", {a, b}, {out}, {maybe(needs_grad(b), a), b},
         [sa = a.shape(), sb = b.shape()](BackwardContext& c) -> TensorList {
           const Tensor& g = c.grads[0];
           const Tensor& bb = c.saved[1];
           Tensor ga, gb;
           if (c.needs_input_grad[0]) ga = sum_to_raw(div_raw(g, bb), sa);
           if (c.needs_input_grad[1])
             gb = sum_to_raw(mul_scalar_raw(div_raw(mul_raw(g, c.saved[0]), mul_raw(bb, bb)), -1.0),
                             sb);
           return {ga, gb};
         });
  return out;
}

Tensor add(const Tensor& a, double b) {
  OpScope op("add");
  Tensor out = add_scalar_raw(a, b);
  record("AddBackward1", {a}, {out}, {},
         [](BackwardContext& c) -> TensorList { return {c.grads[0]}; });
  return out;
}

Tensor sub(const Tensor& a, double b) {
  OpScope op("sub");
  Tensor out = add_scalar_raw(a, -b);
  record("SubBackward1", {a}, {out}, {},
         [](BackwardContext& c) -> TensorList { return {c.grads[0]}; });
  return out;
}

Tensor mul(const Tensor& a, double b) {
  OpScope op("mul");
  Tensor out = mul_scalar_raw(a, b);
  // PyTorch wraps the Python scalar in a 0-d tensor and saves it: 8 bytes.
  const bool keep = needs_grad(a);
  record("MulBackward0", {a}, {out}, {keep ? Tensor::scalar(b, DType::f64) : Tensor()},
         [b](BackwardContext& c) -> TensorList { return {mul_scalar_raw(c.grads[0], b)}; });
  return out;
}

Tensor div(const Tensor& a, double b) {
  OpScope op("div");
  Tensor out = mul_scalar_raw(a, 1.0 / b);
  const bool keep = needs_grad(a);
  record("DivBackward0", {a}, {out}, {keep ? Tensor::scalar(b, DType::f64) : Tensor()},
         [b](BackwardContext& c) -> TensorList { return {mul_scalar_raw(c.grads[0], 1.0 / b)}; });
  return out;
}

Tensor neg(const Tensor& a) {
  OpScope op("neg");
  Tensor out = mul_scalar_raw(a, -1.0);
  record("NegBackward0", {a}, {out}, {},
         [](BackwardContext& c) -> TensorList { return {mul_scalar_raw(c.grads[0], -1.0)}; });
  return out;
}

Tensor pow(const Tensor& a, double e) {
  OpScope op("pow");
  Tensor out = dispatch_floating_all(a.dtype(), "pow", [&]<typename T>() {
    using M = opmath_t<T>;
    return unary_map<T>(a, [e](T x) { return static_cast<T>(std::pow(static_cast<M>(x), e)); });
  });
  record("PowBackward0", {a}, {out}, {a}, [e](BackwardContext& c) -> TensorList {
    const Tensor& x = c.saved[0];
    Tensor d = dispatch_floating_all(x.dtype(), "pow", [&]<typename T>() {
      using M = opmath_t<T>;
      return unary_map<T>(x, [e](T v) {
        return e == 0 ? T(0) : static_cast<T>(e * std::pow(static_cast<M>(v), e - 1));
      });
    });
    return {mul_raw(c.grads[0], d)};
  });
  return out;
}

namespace {

// max (Max = true) or min of a and b, and the backward's share of the gradient for a: 1 where a
// wins, 1/2 on a tie, 0 where b wins (b's share is the same with a and b swapped).
template <bool Max>
Tensor extremum(const Tensor& a, const Tensor& b, const char* name, const char* node) {
  OpScope op(name);
  if (a.dtype() != b.dtype())
    throw std::invalid_argument(std::string(name) + ": " + a.str() + " and " + b.str() +
                                " must have the same dtype");
  Tensor out = dispatch_floating_all(a.dtype(), name, [&]<typename T>() {
    return binary_map<T>(
        a, b,
        [](T x, T y) { return std::isnan(x) || std::isnan(y) ? x + y : (Max == (x > y) ? x : y); },
        name);
  });
  record(node, {a, b}, {out}, {a, b}, [name](BackwardContext& c) -> TensorList {
    auto share = [&](const Tensor& x, const Tensor& y) {
      return dispatch_floating_all(x.dtype(), name, [&]<typename T>() {
        return binary_map<T>(
            x, y, [](T p, T q) { return p == q ? T(0.5) : (Max == (p > q) ? T(1) : T(0)); }, name);
      });
    };
    const Tensor &a2 = c.saved[0], &b2 = c.saved[1], &g = c.grads[0];
    return {c.needs_input_grad[0] ? sum_to_raw(mul_raw(g, share(a2, b2)), a2.shape()) : Tensor(),
            c.needs_input_grad[1] ? sum_to_raw(mul_raw(g, share(b2, a2)), b2.shape()) : Tensor()};
  });
  return out;
}

}  // namespace

Tensor maximum(const Tensor& a, const Tensor& b) {
  return extremum<true>(a, b, "maximum", "MaximumBackward0");
}

Tensor minimum(const Tensor& a, const Tensor& b) {
  return extremum<false>(a, b, "minimum", "MinimumBackward0");
}

Tensor operator+(const Tensor& a, const Tensor& b) {
  return add(a, b);
}
Tensor operator-(const Tensor& a, const Tensor& b) {
  return sub(a, b);
}
Tensor operator*(const Tensor& a, const Tensor& b) {
  return mul(a, b);
}
Tensor operator/(const Tensor& a, const Tensor& b) {
  return div(a, b);
}
Tensor operator+(const Tensor& a, double b) {
  return add(a, b);
}
Tensor operator-(const Tensor& a, double b) {
  return sub(a, b);
}
Tensor operator*(const Tensor& a, double b) {
  return mul(a, b);
}
Tensor operator/(const Tensor& a, double b) {
  return div(a, b);
}
Tensor operator-(const Tensor& a) {
  return neg(a);
}

}  // namespace ckpt
