#pragma once

#include <cstdint>

#include "engine/tensor/tensor.hpp"

namespace ckpt {

class OpTable;

// F.group_norm over [N, C, *] (any number of trailing dims, none included): C split into
// `num_groups` groups, each (image, group) normalised by its own mean and biased variance, then
// weight[c] * x + bias[c] (either may be undefined). Saves what 1.13's
// NativeGroupNormBackward0 saves: the input, the weight, and the per-(image, group) mean and
// inverse std ([N, G]). wav2vec 2.0's first convolution's norm, U-Nets', diffusion models'.
Tensor group_norm(const Tensor& x, std::int64_t num_groups, const Tensor& weight,
                  const Tensor& bias, double eps = 1e-5);

// F.instance_norm with batch statistics (nn.InstanceNorm1d/2d/3d, track_running_stats off):
// as 1.13's at::instance_norm, batch_norm over x viewed as [1, N * C, *] with the weight and bias
// repeated N times, so it saves what that saves (NativeBatchNormBackward0: the view of x, the
// repeated weight, the [N * C] mean and inverse std).
Tensor instance_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps = 1e-5);

// The rows of group_norm and instance_norm (group_norm.cpp), added with the norms' family.
void register_group_norm_ops(OpTable& table);

}  // namespace ckpt
