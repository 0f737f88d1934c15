#include "engine/ops/mask.hpp"

#include <cmath>
#include <stdexcept>

#include "engine/autograd/grad_mode.hpp"
#include "engine/autograd/node.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/ops/broadcast_each.hpp"

namespace ckpt {

namespace {

// In-place writes are for masks being built; a tensor autograd tracks would need PyTorch's
// CopySlices, which this engine does not do.
void check_untracked(const Tensor& x, const char* op) {
  if (GradMode::is_enabled() && x.requires_grad())
    throw std::invalid_argument(std::string(op) + " on " + x.str() +
                                ", which requires grad: in-place writes are supported on masks "
                                "(tensors that do not require grad) only");
}

// b compared in a's dtype where a is floating (PyTorch wraps a Python number so).
bool holds(const std::string& op, double a, double b) {
  if (op == "eq") return a == b;
  if (op == "ne") return a != b;
  if (op == "gt") return a > b;
  if (op == "lt") return a < b;
  if (op == "ge") return a >= b;
  if (op == "le") return a <= b;
  throw std::invalid_argument("comparison '" + op + "' is not one of eq ne gt lt ge le");
}

// The mask broadcast to `shape` (PyTorch's masked_fill broadcasts the mask, never self).
void check_mask(const Tensor& mask, const Shape& shape, const char* op) {
  if (mask.dtype() != DType::b8)
    throw std::invalid_argument(std::string(op) + ": the mask must be bool, got " + mask.str());
  if (broadcast_shapes(shape, mask.shape(), op) != shape)
    throw std::invalid_argument(std::string(op) + ": the mask " + mask.str() +
                                " does not broadcast to " + shape_str(shape));
}

Tensor masked_values(const Tensor& x, const Tensor& mask, double value) {
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  if (out.is_meta()) return out;
  with_truth(mask, [&](auto truth) {
    dispatch_every(x.dtype(), [&]<typename T>() {
      const T* px = x.data<T>();
      T* o = out.data<T>();
      const T v = static_cast<T>(value);
      for_each_broadcast<2>(x.shape(), {&x, &mask}, [&](std::int64_t i, const auto& off) {
        o[i] = truth(off[1]) ? v : px[off[0]];
      });
    });
  });
  return out;
}

}  // namespace

Tensor filled(const Shape& shape, double value, DType dtype) {
  OpScope scope("full");
  for (std::int64_t d : shape)
    if (d < 0) throw std::invalid_argument("full: negative size in " + shape_str(shape));
  return Tensor::full(shape, value, dtype);
}

Tensor arange_range(double start, double end, double step, DType dtype) {
  OpScope scope("arange");
  if (step == 0 || !std::isfinite(start) || !std::isfinite(end) || !std::isfinite(step) ||
      (end - start) / step < 0)
    throw std::invalid_argument("arange: no values from " + std::to_string(start) + " to " +
                                std::to_string(end) + " by " + std::to_string(step));
  const auto n = static_cast<std::int64_t>(std::ceil((end - start) / step));
  Tensor out = Tensor::empty({n}, dtype);
  if (out.is_meta()) return out;
  dispatch_every(dtype, [&]<typename T>() {
    T* o = out.data<T>();
    for (std::int64_t i = 0; i < n; ++i)
      o[i] = static_cast<T>(start + static_cast<double>(i) * step);
  });
  return out;
}

Tensor trilu(const Tensor& x, std::int64_t diagonal, bool upper) {
  const char* name = upper ? "triu" : "tril";
  OpScope scope(name);
  if (x.dim() < 2)
    throw std::invalid_argument(std::string(name) + ": needs at least 2 dims, got " + x.str());
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  const std::int64_t rows = x.size(-2), cols = x.size(-1);
  const auto keep = [=](std::int64_t i) {
    const std::int64_t r = (i / cols) % rows, c = i % cols;
    return upper ? c - r >= diagonal : c - r <= diagonal;
  };
  if (!out.is_meta())
    dispatch_every(x.dtype(), [&]<typename T>() {
      const T* p = x.data<T>();
      T* o = out.data<T>();
      for_each_offset(x, [&](std::int64_t off, std::int64_t i) { o[i] = keep(i) ? p[off] : T(0); });
    });
  record(upper ? "TriuBackward0" : "TrilBackward0", {x}, {out}, {},
         [diagonal, upper](BackwardContext& c) -> TensorList {
           return {trilu(c.grads[0], diagonal, upper)};
         });
  return out;
}

Tensor compare_scalar(const Tensor& x, double value, const std::string& op) {
  OpScope scope(op.c_str());
  holds(op, 0, 0);  // the op's name is checked even in a dry run
  Tensor out = Tensor::empty(x.shape(), DType::b8);
  if (out.is_meta()) return out;
  bool* o = out.data<bool>();
  dispatch_every(x.dtype(), [&]<typename T>() {
    const T* p = x.data<T>();
    const double v = is_floating(x.dtype()) ? static_cast<double>(static_cast<T>(value)) : value;
    for_each_offset(x, [&](std::int64_t off, std::int64_t i) {
      o[i] = holds(op, static_cast<double>(p[off]), v);
    });
  });
  return out;
}

Tensor not_equal(const Tensor& a, const Tensor& b) {
  OpScope scope("ne");
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), "ne");
  Tensor out = Tensor::empty(shape, DType::b8);
  if (out.is_meta()) return out;
  bool* o = out.data<bool>();
  dispatch_every(a.dtype(), [&]<typename A>() {
    dispatch_every(b.dtype(), [&]<typename B>() {
      const A* pa = a.data<A>();
      const B* pb = b.data<B>();
      for_each_broadcast<2>(shape, {&a, &b}, [&](std::int64_t i, const auto& off) {
        o[i] = static_cast<double>(pa[off[0]]) != static_cast<double>(pb[off[1]]);
      });
    });
  });
  return out;
}

Tensor logical_binary(const Tensor& a, const Tensor& b, const std::string& op) {
  OpScope scope(op == "and" ? "logical_and" : "logical_or");
  if (op != "and" && op != "or")
    throw std::invalid_argument("logical: op '" + op + "' is not \"and\" or \"or\"");
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), "logical");
  Tensor out = Tensor::empty(shape, DType::b8);
  if (out.is_meta()) return out;
  bool* o = out.data<bool>();
  const bool both = op == "and";
  with_truth(a, [&](auto ta) {
    with_truth(b, [&](auto tb) {
      for_each_broadcast<2>(shape, {&a, &b}, [&](std::int64_t i, const auto& off) {
        o[i] = both ? ta(off[0]) && tb(off[1]) : ta(off[0]) || tb(off[1]);
      });
    });
  });
  return out;
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  OpScope scope("masked_fill");
  check_mask(mask, x.shape(), "masked_fill");
  Tensor out = masked_values(x, mask, value);
  record("MaskedFillBackward0", {x}, {out}, {mask}, [](BackwardContext& c) -> TensorList {
    return {masked_values(c.grads[0], c.saved[0], 0.0)};
  });
  return out;
}

Tensor& masked_fill_(Tensor& x, const Tensor& mask, double value) {
  OpScope scope("masked_fill_");
  check_untracked(x, "masked_fill_");
  check_mask(mask, x.shape(), "masked_fill_");
  if (!x.is_meta())
    with_truth(mask, [&](auto truth) {
      dispatch_every(x.dtype(), [&]<typename T>() {
        T* p = x.data<T>();
        const T v = static_cast<T>(value);
        for_each_broadcast<2>(x.shape(), {&x, &mask}, [&](std::int64_t, const auto& off) {
          if (truth(off[1])) p[off[0]] = v;
        });
      });
    });
  x.bump_version();
  return x;
}

Tensor& fill_(Tensor& x, double value) {
  OpScope scope("fill_");
  check_untracked(x, "fill_");
  if (!x.is_meta())
    dispatch_every(x.dtype(), [&]<typename T>() {
      const T v = static_cast<T>(value);
      T* p = x.data<T>();
      for_each_offset(x, [&](std::int64_t off, std::int64_t) { p[off] = v; });
    });
  x.bump_version();
  return x;
}

}  // namespace ckpt
