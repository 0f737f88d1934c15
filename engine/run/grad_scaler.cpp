#include "engine/run/grad_scaler.hpp"

#include <cmath>

#include "engine/autograd/execution_context.hpp"
#include "engine/autograd/grad_mode.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/ops/elementwise.hpp"
#include "engine/tensor/reduced_float.hpp"

namespace ckpt {

namespace {

void tag(const Tensor& t, const char* name) {
  t.storage()->ledger().tag(t.storage()->id(), name);
}

// _amp_foreach_non_finite_check_and_unscale_: every gradient times inv_scale, in place, in its
// own dtype; true when any element was inf or NaN.
bool unscale_and_check(const std::vector<TrainableParameter>& params, float inv_scale) {
  bool found = false;
  for (const auto& p : params) {
    Tensor g = p.tensor.grad();
    if (!g.defined() || g.is_meta()) continue;
    dispatch_floating_all(g.dtype(), "_amp_foreach_non_finite_check_and_unscale_",
                          [&]<typename T>() {
                            T* d = g.data<T>();
                            for_each_offset(g, [&](std::int64_t off, std::int64_t) {
                              const float v = static_cast<float>(d[off]);
                              if (!std::isfinite(v)) found = true;
                              d[off] = static_cast<T>(v * inv_scale);
                            });
                          });
  }
  return found;
}

}  // namespace

GradScaler::GradScaler(GradScalerSettings settings) : settings_(settings) {
  CategoryScope category(MemoryCategory::optimizer_state);
  scale_ = Tensor::full({}, settings_.init_scale, DType::f32);
  tag(scale_, "grad_scaler._scale");
  growth_tracker_ = Tensor::zeros({}, DType::i32);
  tag(growth_tracker_, "grad_scaler._growth_tracker");
}

Tensor GradScaler::scale(const Tensor& loss) const {
  NodeScope node("grad_scaler");
  return mul(loss, scale_);
}

bool GradScaler::step_and_update(Optimizer& optimizer) {
  NodeScope node("grad_scaler");
  NoGradGuard no_grad;
  bool found_inf = false;
  Tensor found_inf_copy;  // optimizer_state["found_inf_per_device"], until update() resets it
  {
    OpScope op("unscale_");
    // inv_scale = self._scale.double().reciprocal().float(): each temporary dies once the next
    // one is made.
    Tensor inv_scale;
    {
      Tensor reciprocal;
      {
        const Tensor as_double = cast_raw(scale_, DType::f64);
        reciprocal = Tensor::empty({}, DType::f64);
        if (!reciprocal.is_meta()) reciprocal.data<double>()[0] = 1.0 / as_double.item();
      }
      inv_scale = cast_raw(reciprocal, DType::f32);
    }
    const Tensor found_inf_master = Tensor::zeros({}, DType::f32);
    // _MultiDeviceReplicator.get(device): a copy of each master on the gradients' device.
    found_inf_copy = contiguous_copy(found_inf_master);
    const Tensor inv_scale_copy = contiguous_copy(inv_scale);
    if (!inv_scale_copy.is_meta()) {
      found_inf =
          unscale_and_check(optimizer.parameters(), static_cast<float>(inv_scale_copy.item()));
      found_inf_copy.data<float>()[0] = found_inf ? 1.0f : 0.0f;
    }
  }
  if (!found_inf) optimizer.step();
  {
    OpScope op("update");
    // _amp_update_scale_: back off on inf/NaN, grow after growth_interval clean steps.
    if (!scale_.is_meta()) {
      float& scale = scale_.data<float>()[0];
      std::int32_t& tracker = growth_tracker_.data<std::int32_t>()[0];
      if (found_inf) {
        scale = static_cast<float>(scale * settings_.backoff_factor);
        tracker = 0;
      } else if (++tracker == settings_.growth_interval) {
        scale = static_cast<float>(scale * settings_.growth_factor);
        tracker = 0;
      }
    }
    found_inf_copy = Tensor();  // self._per_optimizer_states = defaultdict(...)
  }
  return !found_inf;
}

}  // namespace ckpt
