#include "engine/run/optimizer.hpp"

#include <cmath>
#include <stdexcept>

#include "engine/autograd/execution_context.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/tensor/device.hpp"

namespace ckpt {

namespace {

// The in-place arithmetic of torch.optim's steps, on the host, in the parameter's precision
// with float scalars as ATen's CPU kernels take them. A meta tensor (a dry run) has no values:
// nothing to compute. `dst` is contiguous (parameters and state are); sources may be strided
// (a gradient can be).
template <typename F>
void update(const Tensor& dst, std::initializer_list<const Tensor*> sources, const char* op, F f) {
  if (dst.is_meta()) return;
  dispatch_floating(dst.dtype(), op, [&]<typename T>() {
    T* d = dst.data<T>();
    std::vector<const T*> src;
    bool flat = true;
    for (const Tensor* s : sources) {
      if (s->dtype() != dst.dtype() || s->shape() != dst.shape())
        throw std::invalid_argument(std::string(op) + ": " + s->str() + " does not match " +
                                    dst.str());
      src.push_back(s->data<T>());
      flat = flat && s->is_contiguous();
    }
    const std::int64_t n = dst.numel();
    if (flat) {
      parallel_for(n, [&](std::int64_t i) {
        T v[3] = {};
        for (std::size_t k = 0; k < src.size(); ++k) v[k] = src[k][i];
        d[i] = f(d[i], v);
      });
      return;
    }
    // Strided sources: their offsets in row-major order, one pass each.
    std::vector<std::vector<std::int64_t>> offsets(sources.size());
    std::size_t k = 0;
    for (const Tensor* s : sources) {
      offsets[k].resize(static_cast<std::size_t>(n));
      for_each_offset(*s, [&](std::int64_t off, std::int64_t i) {
        offsets[k][static_cast<std::size_t>(i)] = off;
      });
      ++k;
    }
    for (std::int64_t i = 0; i < n; ++i) {
      T v[3] = {};
      for (std::size_t j = 0; j < src.size(); ++j)
        v[j] = src[j][offsets[j][static_cast<std::size_t>(i)]];
      d[i] = f(d[i], v);
    }
  });
}

// t.mul_(s)
void mul_(const Tensor& t, double s) {
  update(t, {}, "mul_",
         [f = static_cast<float>(s)](auto x, auto*) { return static_cast<decltype(x)>(x * f); });
}

// t.add_(x, alpha=a)
void add_(const Tensor& t, const Tensor& x, double a) {
  update(t, {&x}, "add_", [f = static_cast<float>(a)](auto y, auto* v) {
    return static_cast<decltype(y)>(y + f * v[0]);
  });
}

// t.add_(s)
void add_scalar_(const Tensor& t, double s) {
  update(t, {}, "add_",
         [f = static_cast<float>(s)](auto y, auto*) { return static_cast<decltype(y)>(y + f); });
}

// t.addcmul_(x, y, value=c)
void addcmul_(const Tensor& t, const Tensor& x, const Tensor& y, double c) {
  update(t, {&x, &y}, "addcmul_", [f = static_cast<float>(c)](auto z, auto* v) {
    return static_cast<decltype(z)>(z + f * v[0] * v[1]);
  });
}

// t.addcdiv_(x, y, value=c)
void addcdiv_(const Tensor& t, const Tensor& x, const Tensor& y, double c) {
  update(t, {&x, &y}, "addcdiv_", [f = static_cast<float>(c)](auto z, auto* v) {
    return static_cast<decltype(z)>(z + f * v[0] / v[1]);
  });
}

// t.lerp_(x, w): ATen's form for a weight under one half.
void lerp_(const Tensor& t, const Tensor& x, double w) {
  update(t, {&x}, "lerp_", [f = static_cast<float>(w)](auto z, auto* v) {
    return static_cast<decltype(z)>(z + f * (v[0] - z));
  });
}

// t.div_(s)
void div_(const Tensor& t, double s) {
  update(t, {}, "div_",
         [f = static_cast<float>(s)](auto y, auto*) { return static_cast<decltype(y)>(y / f); });
}

// A float32 scalar in host memory outside the run's ledger: the step counter PyTorch 2.x keeps
// in a CPU tensor beside the device's (a dry run's too: it holds a real count).
Tensor host_scalar() {
  LedgerScope ledger(std::make_shared<MemoryLedger>());
  DeviceScope device(Device::cpu);
  return Tensor::zeros({}, DType::f32);
}

// torch.sqrt(t): a new tensor of t's size.
Tensor sqrt_new(const Tensor& t) {
  Tensor out = Tensor::empty(t.shape(), t.dtype());
  if (out.is_meta()) return out;
  dispatch_floating(t.dtype(), "sqrt", [&]<typename T>() {
    unary_map_into<T>(t, out, [](T v) { return std::sqrt(v); });
  });
  return out;
}

// grad.add(param, alpha=a): a new tensor.
Tensor add_new(const Tensor& g, const Tensor& p, double a) {
  Tensor out = contiguous_copy(g);
  add_(out, p, a);
  return out;
}

const char* step_op(OptimizerKind kind) {
  return optimizer_name(kind);
}

}  // namespace

OptimizerHyper optimizer_hyper(const OptimizerSettings& s) {
  OptimizerHyper h;
  switch (s.kind) {
    case OptimizerKind::none:
      break;
    case OptimizerKind::sgd:
      h.lr = 0.01;
      break;
    case OptimizerKind::momentum:
      h.lr = 0.01;
      h.momentum = 0.9;
      break;
    case OptimizerKind::adam:
      h.lr = 1e-3;
      break;
    case OptimizerKind::adamw:
      h.lr = 1e-3;
      h.weight_decay = 1e-2;
      break;
  }
  if (s.lr) h.lr = *s.lr;
  if (s.weight_decay) h.weight_decay = *s.weight_decay;
  if (!(h.lr >= 0) || !std::isfinite(h.lr))
    throw std::invalid_argument("optimizer: invalid learning rate " + std::to_string(h.lr));
  if (!(h.weight_decay >= 0) || !std::isfinite(h.weight_decay))
    throw std::invalid_argument("optimizer: invalid weight decay " +
                                std::to_string(h.weight_decay));
  return h;
}

StepImplementation default_step_implementation(Device device) {
  return device == Device::cuda ? StepImplementation::foreach : StepImplementation::for_loop;
}

Optimizer::Optimizer(const OptimizerSettings& settings, StepImplementation implementation,
                     std::vector<TrainableParameter> parameters)
    : settings_(settings),
      hyper_(optimizer_hyper(settings)),
      implementation_(implementation),
      parameters_(std::move(parameters)),
      slots_(parameters_.size()) {
  if (settings_.kind == OptimizerKind::none)
    throw std::logic_error("Optimizer: kind none has no step");
  CategoryScope category(MemoryCategory::optimizer_state);
  auto make = [](const Tensor& like, const std::string& name, const Shape& shape) {
    Tensor t = Tensor::zeros(shape, like.dtype());
    t.storage()->ledger().tag(t.storage()->id(), name);
    return t;
  };
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    const Tensor& p = parameters_[i].tensor;
    const std::string& name = parameters_[i].name;
    Slot& s = slots_[i];
    // The order of PyTorch's lazy initialisation: step, exp_avg, exp_avg_sq.
    if (uses_moments()) {
      if (implementation_ == StepImplementation::for_loop) {
        s.step = Tensor::zeros({}, DType::f32);
        s.step.storage()->ledger().tag(s.step.storage()->id(), name + ".step");
      } else {
        s.step = host_scalar();
      }
      s.exp_avg = make(p, name + ".exp_avg", p.shape());
      s.exp_avg_sq = make(p, name + ".exp_avg_sq", p.shape());
    }
    if (uses_momentum()) s.momentum_buffer = make(p, name + ".momentum_buffer", p.shape());
  }
}

void Optimizer::step() {
  // PyTorch's state exists for the parameters that had a gradient in the steps before; this
  // one made state for every trainable parameter before knowing.
  std::int64_t without = 0, bytes = 0;
  std::string first;
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    if (parameters_[i].tensor.grad().defined()) continue;
    if (without++ == 0) first = parameters_[i].name;
    for (const Tensor* t : {&slots_[i].momentum_buffer, &slots_[i].exp_avg, &slots_[i].exp_avg_sq})
      if (t->defined()) bytes += t->nbytes();
  }
  if (without > 0)
    warn(std::to_string(without) + " trainable parameter(s) got no gradient ('" + first +
         "' first): the optimizer skips them, and in steady-state training PyTorch would hold no "
         "state for them; their " +
         std::to_string(bytes) + " bytes of state are counted here all the same");
  if (implementation_ == StepImplementation::for_loop) {
    step_for_loop();
  } else {
    step_foreach();
  }
}

// PyTorch 1.13's _single_tensor_sgd / _single_tensor_adam / _single_tensor_adamw. The Python
// variables that hold a temporary (`grad`, `d_p`, `denom`) keep it until they are rebound in
// the next iteration or the function returns: `held` plays them.
void Optimizer::step_for_loop() {
  const OptimizerHyper& h = hyper_;
  Tensor held_grad, held_denom;
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    const Tensor& p = parameters_[i].tensor;
    Tensor grad = p.grad();
    if (!grad.defined()) continue;
    Slot& s = slots_[i];
    NodeScope node(parameters_[i].name);
    OpScope op(step_op(settings_.kind));
    held_grad = Tensor();  // `grad = grads[i]` rebinds the previous iteration's temporary
    switch (settings_.kind) {
      case OptimizerKind::none:
        break;
      case OptimizerKind::sgd:
      case OptimizerKind::momentum: {
        Tensor d_p = grad;
        if (h.weight_decay != 0) held_grad = d_p = add_new(d_p, p, h.weight_decay);
        if (uses_momentum()) {
          mul_(s.momentum_buffer, h.momentum);
          add_(s.momentum_buffer, d_p, 1.0);
          held_grad = Tensor();  // `d_p = buf`
          d_p = s.momentum_buffer;
        }
        add_(p, d_p, -h.lr);
        break;
      }
      case OptimizerKind::adam:
      case OptimizerKind::adamw: {
        if (!s.step.is_meta()) s.step.data<float>()[0] += 1.0f;
        const double step = s.step.is_meta() ? 1.0 : s.step.data<float>()[0];
        if (settings_.kind == OptimizerKind::adamw) {
          mul_(p, 1.0 - h.lr * h.weight_decay);
        } else if (h.weight_decay != 0) {
          held_grad = grad = add_new(grad, p, h.weight_decay);
        }
        mul_(s.exp_avg, h.beta1);
        add_(s.exp_avg, grad, 1.0 - h.beta1);
        mul_(s.exp_avg_sq, h.beta2);
        addcmul_(s.exp_avg_sq, grad, grad, 1.0 - h.beta2);
        const double bias_correction1 = 1.0 - std::pow(h.beta1, step);
        const double bias_correction2 = 1.0 - std::pow(h.beta2, step);
        const double step_size = h.lr / bias_correction1;
        // denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps): the sqrt dies once the
        // division has made its result; the old denom once the new one is bound.
        Tensor denom =
            binary_scalar_raw(BinaryOp::div, sqrt_new(s.exp_avg_sq), std::sqrt(bias_correction2));
        held_denom = Tensor();
        add_scalar_(denom, h.eps);
        held_denom = denom;
        addcdiv_(p, s.exp_avg, denom, -step_size);
        break;
      }
    }
    p.bump_version();
  }
}

// PyTorch 2.x's _multi_tensor_sgd / _multi_tensor_adam (AdamW is Adam with decoupled weight
// decay there), one step per foreach kernel.
void Optimizer::step_foreach() {
  const OptimizerHyper& h = hyper_;
  std::vector<std::size_t> with_grad;
  for (std::size_t i = 0; i < parameters_.size(); ++i)
    if (parameters_[i].tensor.grad().defined()) with_grad.push_back(i);
  if (with_grad.empty()) return;
  NodeScope node("optimizer");
  auto each = [&](const char* name, auto f) {
    OpScope op(name);
    for (std::size_t i : with_grad) f(parameters_[i].tensor, slots_[i]);
  };
  switch (settings_.kind) {
    case OptimizerKind::none:
      return;
    case OptimizerKind::sgd:
    case OptimizerKind::momentum: {
      std::vector<Tensor> grads;
      if (h.weight_decay != 0) {
        OpScope op("_foreach_add");
        for (std::size_t i : with_grad)
          grads.push_back(
              add_new(parameters_[i].tensor.grad(), parameters_[i].tensor, h.weight_decay));
      } else {
        for (std::size_t i : with_grad) grads.push_back(parameters_[i].tensor.grad());
      }
      if (uses_momentum()) {
        each("_foreach_mul_", [&](const Tensor&, Slot& s) { mul_(s.momentum_buffer, h.momentum); });
        std::size_t k = 0;
        each("_foreach_add_",
             [&](const Tensor&, Slot& s) { add_(s.momentum_buffer, grads[k++], 1.0); });
        for (std::size_t j = 0; j < with_grad.size(); ++j)
          grads[j] = slots_[with_grad[j]].momentum_buffer;
      }
      std::size_t k = 0;
      each("_foreach_add_", [&](const Tensor& p, Slot&) { add_(p, grads[k++], -h.lr); });
      while (!grads.empty()) grads.pop_back();  // the list dies last element first
      break;
    }
    case OptimizerKind::adam:
    case OptimizerKind::adamw: {
      for (std::size_t i : with_grad) slots_[i].step.data<float>()[0] += 1.0f;  // on the host
      std::vector<Tensor> grads;
      for (std::size_t i : with_grad) grads.push_back(parameters_[i].tensor.grad());
      if (h.weight_decay != 0) {
        if (settings_.kind == OptimizerKind::adamw) {
          each("_foreach_mul_",
               [&](const Tensor& p, Slot&) { mul_(p, 1.0 - h.lr * h.weight_decay); });
        } else {
          OpScope op("_foreach_add");
          for (std::size_t j = 0; j < with_grad.size(); ++j)
            grads[j] = add_new(grads[j], parameters_[with_grad[j]].tensor, h.weight_decay);
        }
      }
      std::size_t k = 0;
      each("_foreach_lerp_",
           [&](const Tensor&, Slot& s) { lerp_(s.exp_avg, grads[k++], 1.0 - h.beta1); });
      each("_foreach_mul_", [&](const Tensor&, Slot& s) { mul_(s.exp_avg_sq, h.beta2); });
      k = 0;
      each("_foreach_addcmul_", [&](const Tensor&, Slot& s) {
        addcmul_(s.exp_avg_sq, grads[k], grads[k], 1.0 - h.beta2);
        ++k;
      });
      while (!grads.empty()) grads.pop_back();  // `del device_grads`
      std::vector<Tensor> denoms;
      each("_foreach_sqrt",
           [&](const Tensor&, Slot& s) { denoms.push_back(sqrt_new(s.exp_avg_sq)); });
      k = 0;
      each("_foreach_div_", [&](const Tensor&, Slot& s) {
        div_(denoms[k++], std::sqrt(1.0 - std::pow(h.beta2, s.step.item())));
      });
      k = 0;
      each("_foreach_add_", [&](const Tensor&, Slot&) { add_scalar_(denoms[k++], h.eps); });
      k = 0;
      each("_foreach_addcdiv_", [&](const Tensor& p, Slot& s) {
        const double step_size = h.lr / (1.0 - std::pow(h.beta1, s.step.item()));
        addcdiv_(p, s.exp_avg, denoms[k++], -step_size);
      });
      while (!denoms.empty()) denoms.pop_back();  // freed as the step returns, last first
      break;
    }
  }
  for (std::size_t i : with_grad) parameters_[i].tensor.bump_version();
}

std::vector<std::pair<std::string, OpCost>> Optimizer::step_costs() const {
  // Elementwise passes over a parameter's elements: reads and writes of the parameter, its
  // gradient and its state, and the arithmetic of each (Adam's sqrt and division included).
  double accesses = 3, flops = 2;
  if (uses_momentum()) accesses += 4, flops += 2;
  if (uses_moments()) accesses = 20, flops = 14;
  if (hyper_.weight_decay != 0) accesses += 3, flops += 2;
  std::vector<std::pair<std::string, OpCost>> out;
  double total_flops = 0, total_bytes = 0;
  for (const auto& p : parameters_) {
    const auto n = static_cast<double>(p.tensor.numel());
    const OpCost c{flops * n, accesses * n * static_cast<double>(p.tensor.element_size())};
    if (implementation_ == StepImplementation::for_loop) out.emplace_back(p.name, c);
    total_flops += c.flops;
    total_bytes += c.bytes;
  }
  if (implementation_ == StepImplementation::foreach) {
    const double kernels = uses_moments() ? 8 : uses_momentum() ? 3 : 1;
    out.emplace_back("optimizer", OpCost{total_flops / kernels, total_bytes / kernels});
  }
  return out;
}

std::map<std::string, std::map<std::string, Tensor>> Optimizer::state() const {
  std::map<std::string, std::map<std::string, Tensor>> out;
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    const Slot& s = slots_[i];
    auto& m = out[parameters_[i].name];
    if (s.momentum_buffer.defined()) m["momentum_buffer"] = s.momentum_buffer;
    if (s.exp_avg.defined()) {
      m["exp_avg"] = s.exp_avg;
      m["exp_avg_sq"] = s.exp_avg_sq;
      m["step"] = s.step;
    }
    if (m.empty()) out.erase(parameters_[i].name);
  }
  return out;
}

}  // namespace ckpt
