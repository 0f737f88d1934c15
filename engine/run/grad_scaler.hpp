#pragma once

// torch.cuda.amp.GradScaler as PyTorch 2.x runs it with float16 autocast: the loss multiplied by
// the scale before backward, the gradients unscaled and checked for inf and NaN before the
// optimizer's step (which is skipped when any is found), and the scale updated after it. Its
// state (the scale, float32, and the growth tracker, int32) is made before the forward (in
// category optimizer state, as the optimizer's: every step after the first finds it live); its
// step's small tensors are those of torch/amp/grad_scaler.py: inv_scale through a float64 and
// its reciprocal, found_inf, and their copies per device.
//
// On the CPU PyTorch 1.13 has no scaler (a GradScaler there warns and disables itself), and its
// CPU autocast knows no float16: the Runner makes none for cpu runs.

#include <cstdint>

#include "engine/run/optimizer.hpp"

namespace ckpt {

struct GradScalerSettings {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  std::int64_t growth_interval = 2000;
};

class GradScaler {
 public:
  explicit GradScaler(GradScalerSettings settings = {});

  // scaler.scale(loss): loss times the scale, a new tensor with autograd (backward from it).
  Tensor scale(const Tensor& loss) const;

  // scaler.step(optimizer) then scaler.update(): unscale the gradients of the optimizer's
  // parameters, check them, step unless an inf or NaN was found, update the scale. Returns
  // whether the optimizer stepped (always true on meta tensors, which have no values).
  bool step_and_update(Optimizer& optimizer);

  const Tensor& scale_tensor() const { return scale_; }
  const Tensor& growth_tracker() const { return growth_tracker_; }

 private:
  GradScalerSettings settings_;
  Tensor scale_;           // float32 []
  Tensor growth_tracker_;  // int32 []
};

}  // namespace ckpt
