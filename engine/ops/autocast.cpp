#include "engine/ops/autocast.hpp"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/autograd/grad_mode.hpp"
#include "engine/autograd/node.hpp"
#include "engine/kernels/kernels.hpp"

namespace ckpt {

namespace {

struct CachedCast {
  std::weak_ptr<TensorImpl> source;
  Tensor cast;
};

struct AutocastThread {
  AutocastState state;
  int nesting = 0;
  std::vector<CachedCast> cache;  // few entries (one per parameter): a linear search
};
thread_local AutocastThread t_autocast;

// x.to(dtype) as an op: a step of its own, ToCopyBackward0 when x requires grad.
Tensor cast_op(const Tensor& x, DType to) {
  OpScope scope(to == DType::f32   ? "to(float32)"
                : to == DType::f16 ? "to(float16)"
                                   : "to(bfloat16)");
  Tensor out = cast_raw(x, to);
  record("ToCopyBackward0", {x}, {out}, {}, [from = x.dtype()](BackwardContext& c) -> TensorList {
    return {cast_raw(c.grads[0], from)};
  });
  return out;
}

// ATen's cached_cast: which tensors autocast touches (floating, not float64), and the cache of
// parameters' lower-precision casts.
bool eligible(const Tensor& t) {
  return t.defined() && is_floating(t.dtype()) && t.dtype() != DType::f64;
}

Tensor cached_cast(const Tensor& t, DType to) {
  if (!eligible(t) || t.dtype() == to) return t;
  AutocastThread& a = t_autocast;
  const bool can_cache =
      to == a.state.lower && t.dtype() == DType::f32 && t.requires_grad() && t.is_leaf();
  if (!can_cache) return cast_op(t, to);
  for (const CachedCast& c : a.cache)
    if (!c.source.expired() && c.source.lock().get() == t.impl()) return c.cast;
  Tensor cast = cast_op(t, to);
  a.cache.push_back({t.impl_ptr(), cast});
  return cast;
}

DType widest(const TensorList& inputs) {
  DType w = DType::bf16;
  bool any = false;
  for (const Tensor& t : inputs) {
    if (!eligible(t)) continue;
    w = any ? promote_floating(w, t.dtype()) : t.dtype();
    any = true;
  }
  return w;
}

}  // namespace

AutocastState autocast_state() {
  return t_autocast.state;
}

AutocastScope::AutocastScope(AutocastState state) : previous_(t_autocast.state) {
  if (state.enabled && !is_reduced_floating(state.lower))
    throw std::invalid_argument(std::string("autocast: ") + dtype_name(state.lower) +
                                " is not a lower precision (bfloat16 or float16)");
  t_autocast.state = state;
  ++t_autocast.nesting;
}

AutocastScope::~AutocastScope() {
  t_autocast.state = previous_;
  if (--t_autocast.nesting == 0) t_autocast.cache.clear();
}

AutocastPolicy autocast_policy(const OpSchema& row, Device device) {
  return device == Device::cuda ? row.autocast.cuda : row.autocast.cpu;
}

TensorList autocast_inputs(const OpSchema& row, const TensorList& inputs) {
  const AutocastState& s = t_autocast.state;
  if (!s.enabled) return inputs;
  const AutocastPolicy policy = autocast_policy(row, s.rules);
  DType to = DType::f32;
  switch (policy) {
    case AutocastPolicy::none:
      return inputs;
    case AutocastPolicy::lower:
      to = s.lower;
      break;
    case AutocastPolicy::fp32:
      break;
    case AutocastPolicy::fp32_set_opt_dtype: {
      bool lower = false;
      for (const Tensor& t : inputs) lower = lower || (t.defined() && t.dtype() == s.lower);
      if (!lower) return inputs;
      break;
    }
    case AutocastPolicy::promote:
      to = widest(inputs);
      break;
  }
  // Last argument first: ATen's autocast wrappers cast their arguments in one call expression,
  // whose arguments GCC (PyTorch's Linux builds) evaluates right to left: linear casts its bias,
  // then its weight, then its input (what a memory snapshot of an autocast step shows).
  TensorList out(inputs.size());
  for (std::size_t i = inputs.size(); i-- > 0;) out[i] = cached_cast(inputs[i], to);
  return out;
}

std::int64_t autocast_cached_casts() {
  return static_cast<std::int64_t>(t_autocast.cache.size());
}

}  // namespace ckpt
