#pragma once

#include "engine/tensor/tensor.hpp"

namespace ckpt {

// F.batch_norm over dim 1 of [N, C, *]. Training: batch statistics (biased variance to
// normalise), running_mean/running_var updated in place with `momentum` (unbiased variance),
// num_batches_tracked += 1 when given (what nn.BatchNorm does); eval: the running statistics.
// weight, bias, running stats may be undefined (affine=False, track_running_stats=False).
// Saves (NativeBatchNormBackward0) input, weight, running stats and, when training, the batch
// mean and inverse std.
Tensor batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias,
                  const Tensor& running_mean, const Tensor& running_var, bool training,
                  double momentum = 0.1, double eps = 1e-5,
                  const Tensor& num_batches_tracked = Tensor());

// F.layer_norm over the trailing `normalized_shape` dims. Saves (NativeLayerNormBackward0)
// input, weight, bias, and the per-row mean and rstd ([*, 1, ...]).
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps = 1e-5);

}  // namespace ckpt
