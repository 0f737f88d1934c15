#pragma once

#include <array>
#include <cstdint>

#include "engine/tensor/tensor.hpp"

namespace ckpt {

// Pooling over the last two dims of [N, C, H, W] or unbatched [C, H, W], as F.* in PyTorch.
// max_pool2d saves its input and the int64 argmax indices (MaxPool2DWithIndicesBackward0);
// avg_pool2d saves its input.
Tensor max_pool2d(const Tensor& x, std::array<std::int64_t, 2> kernel,
                  std::array<std::int64_t, 2> stride, std::array<std::int64_t, 2> padding = {0, 0},
                  std::array<std::int64_t, 2> dilation = {1, 1}, bool ceil_mode = false);
Tensor avg_pool2d(const Tensor& x, std::array<std::int64_t, 2> kernel,
                  std::array<std::int64_t, 2> stride, std::array<std::int64_t, 2> padding = {0, 0},
                  bool ceil_mode = false, bool count_include_pad = true);
// Output {1, 1} is a mean over H and W (MeanBackward1, as PyTorch 1.13 does it); other sizes
// use PyTorch's adaptive windows (AdaptiveAvgPool2DBackward0). Both save the input.
Tensor adaptive_avg_pool2d(const Tensor& x, std::array<std::int64_t, 2> output_size);

}  // namespace ckpt
