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

// The rows of group_norm (group_norm.cpp), added with the norms' family.
void register_group_norm_ops(OpTable& table);

}  // namespace ckpt
