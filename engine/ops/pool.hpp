#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "engine/tensor/tensor.hpp"

namespace ckpt {

// Window values of a pool: one per spatial dimension, or one for all (an int in PyTorch).
using PoolInts = std::vector<std::int64_t>;

// Pooling over the last `dims` (1, 2 or 3) dims of [N, C, *] or unbatched [C, *], as F.* in
// PyTorch 1.13; each saves what PyTorch's rank saves:
//   max_pool            input and the int64 argmax indices (MaxPool2D/3DWithIndicesBackward0;
//                       1-D runs as 2-D over a unit height, as max_pool1d does); an empty
//                       stride is the kernel;
//   avg_pool            its input (AvgPool2D/3DBackward0; 1-D as 2-D);
//   adaptive_avg_pool   its input (AdaptiveAvgPool2D/3DBackward0); an output of all 1s is a
//                       mean over the spatial dims (MeanBackward1), as 1.13 computes it;
//   adaptive_max_pool   input and indices (AdaptiveMaxPool2D/3DBackward0).
Tensor max_pool(const Tensor& x, int dims, const PoolInts& kernel, const PoolInts& stride = {},
                const PoolInts& padding = {0}, const PoolInts& dilation = {1},
                bool ceil_mode = false);
Tensor avg_pool(const Tensor& x, int dims, const PoolInts& kernel, const PoolInts& stride = {},
                const PoolInts& padding = {0}, bool ceil_mode = false,
                bool count_include_pad = true);
Tensor adaptive_avg_pool(const Tensor& x, int dims, const PoolInts& output_size);
Tensor adaptive_max_pool(const Tensor& x, int dims, const PoolInts& output_size);

// The 2-D spellings, for callers that hold pairs.
inline Tensor max_pool2d(const Tensor& x, std::array<std::int64_t, 2> kernel,
                         std::array<std::int64_t, 2> stride,
                         std::array<std::int64_t, 2> padding = {0, 0},
                         std::array<std::int64_t, 2> dilation = {1, 1}, bool ceil_mode = false) {
  return max_pool(x, 2, {kernel[0], kernel[1]}, {stride[0], stride[1]}, {padding[0], padding[1]},
                  {dilation[0], dilation[1]}, ceil_mode);
}
inline Tensor avg_pool2d(const Tensor& x, std::array<std::int64_t, 2> kernel,
                         std::array<std::int64_t, 2> stride,
                         std::array<std::int64_t, 2> padding = {0, 0}, bool ceil_mode = false,
                         bool count_include_pad = true) {
  return avg_pool(x, 2, {kernel[0], kernel[1]}, {stride[0], stride[1]}, {padding[0], padding[1]},
                  ceil_mode, count_include_pad);
}
inline Tensor adaptive_avg_pool2d(const Tensor& x, std::array<std::int64_t, 2> output_size) {
  return adaptive_avg_pool(x, 2, {output_size[0], output_size[1]});
}

}  // namespace ckpt
