#include "engine/ops/logical.hpp"

#include <array>
#include <stdexcept>
#include <vector>

#include "engine/autograd/node.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/ops/broadcast_each.hpp"
#include "engine/tensor/reduced_float.hpp"

namespace ckpt {

namespace {

bool holds(Comparison op, double a, double b) {
  switch (op) {
    case Comparison::gt:
      return a > b;
    case Comparison::lt:
      return a < b;
    case Comparison::ge:
      return a >= b;
    case Comparison::le:
      return a <= b;
    case Comparison::eq:
      return a == b;
  }
  return false;
}

const char* name_of(Comparison op) {
  static constexpr const char* names[] = {"gt", "lt", "ge", "le", "eq"};
  return names[static_cast<int>(op)];
}

// cond ? g : 0 (take_true) or cond ? 0 : g, in g's shape (the broadcast one).
Tensor select_gradient(const Tensor& cond, const Tensor& g, bool take_true) {
  Tensor out = Tensor::empty(g.shape(), g.dtype());
  if (out.is_meta()) return out;
  const Tensor gc = g;
  with_truth(cond, [&](auto truth) {
    dispatch_floating_all(g.dtype(), "where backward", [&]<typename T>() {
      const T* gp = gc.data<T>();
      T* o = out.data<T>();
      for_each_broadcast<2>(g.shape(), {&cond, &gc}, [&](std::int64_t i, const auto& off) {
        o[i] = truth(off[0]) == take_true ? gp[off[1]] : T(0);
      });
    });
  });
  return out;
}

}  // namespace

Tensor compare(const Tensor& a_in, const Tensor& b_in, Comparison op) {
  OpScope scope(name_of(op));
  if (a_in.dtype() == DType::b8 || b_in.dtype() == DType::b8)
    if (a_in.dtype() != b_in.dtype())
      throw std::invalid_argument(std::string(name_of(op)) + ": cannot compare " + a_in.str() +
                                  " with " + b_in.str());
  const Shape shape = broadcast_shapes(a_in.shape(), b_in.shape(), name_of(op));
  Tensor out = Tensor::empty(shape, DType::b8);
  if (out.is_meta()) return out;
  bool* o = out.data<bool>();
  dispatch_every(a_in.dtype(), [&]<typename A>() {
    dispatch_every(b_in.dtype(), [&]<typename B>() {
      const A* pa = a_in.data<A>();
      const B* pb = b_in.data<B>();
      for_each_broadcast<2>(shape, {&a_in, &b_in}, [&](std::int64_t i, const auto& off) {
        o[i] = holds(op, static_cast<double>(pa[off[0]]), static_cast<double>(pb[off[1]]));
      });
    });
  });
  return out;
}

Tensor gt(const Tensor& a, const Tensor& b) {
  return compare(a, b, Comparison::gt);
}
Tensor lt(const Tensor& a, const Tensor& b) {
  return compare(a, b, Comparison::lt);
}
Tensor ge(const Tensor& a, const Tensor& b) {
  return compare(a, b, Comparison::ge);
}
Tensor le(const Tensor& a, const Tensor& b) {
  return compare(a, b, Comparison::le);
}
Tensor eq(const Tensor& a, const Tensor& b) {
  return compare(a, b, Comparison::eq);
}

Tensor where(const Tensor& cond, const Tensor& x_in, const Tensor& y_in) {
  OpScope scope("where");
  if (!is_floating(x_in.dtype()) || !is_floating(y_in.dtype()))
    throw std::invalid_argument("where: expected floating x and y, got " + x_in.str() + " and " +
                                y_in.str());
  // Type promotion (a bfloat16 x with a float32 y under autocast): on the CPU, TensorIterator
  // converts the narrower operand into a temporary of the wider dtype first.
  const DType common = promote_floating(x_in.dtype(), y_in.dtype());
  const Tensor x = x_in.dtype() == common ? x_in : cast_raw(x_in, common);
  const Tensor y = y_in.dtype() == common ? y_in : cast_raw(y_in, common);
  const Shape shape =
      broadcast_shapes(broadcast_shapes(cond.shape(), x.shape(), "where"), y.shape(), "where");
  Tensor out = Tensor::empty(shape, x.dtype());
  if (!out.is_meta())
    with_truth(cond, [&](auto truth) {
      dispatch_floating_all(x.dtype(), "where", [&]<typename T>() {
        const T* px = x.data<T>();
        const T* py = y.data<T>();
        T* o = out.data<T>();
        for_each_broadcast<3>(shape, {&cond, &x, &y}, [&](std::int64_t i, const auto& off) {
          o[i] = truth(off[0]) ? px[off[1]] : py[off[2]];
        });
      });
    });
  record("WhereBackward0", {x_in, y_in}, {out}, {cond},
         [xs = x.shape(), ys = y.shape()](BackwardContext& c) -> TensorList {
           const Tensor& g = c.grads[0];
           const Tensor& condition = c.saved[0];
           TensorList grads(2);
           if (c.needs_input_grad[0])
             grads[0] = sum_to_raw(select_gradient(condition, g, true), xs);
           if (c.needs_input_grad[1])
             grads[1] = sum_to_raw(select_gradient(condition, g, false), ys);
           return grads;
         });
  return out;
}

Tensor logical_not(const Tensor& x) {
  OpScope scope("logical_not");
  Tensor out = Tensor::empty(x.shape(), DType::b8);
  if (out.is_meta()) return out;
  bool* o = out.data<bool>();
  with_truth(x, [&](auto truth) {
    for_each_broadcast<1>(x.shape(), {&x},
                          [&](std::int64_t i, const auto& off) { o[i] = !truth(off[0]); });
  });
  return out;
}

Tensor cast(const Tensor& x, DType to) {
  OpScope scope("cast");
  Tensor out = cast_raw(x, to);
  if (is_floating(x.dtype()) && is_floating(to))
    record("ToCopyBackward0", {x}, {out}, {}, [from = x.dtype()](BackwardContext& c) -> TensorList {
      return {cast_raw(c.grads[0], from)};
    });
  return out;
}

}  // namespace ckpt
