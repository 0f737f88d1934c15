#pragma once

#include <array>
#include <cstdint>

#include "engine/tensor/tensor.hpp"

namespace ckpt {

// F.interpolate(x, size=..., mode="nearest") on [N, C, H, W]: output pixel o takes input pixel
// floor(o * in / out) (PyTorch's legacy nearest, in float as PyTorch computes it). Saves nothing
// (UpsampleNearest2DBackward0 keeps only sizes); the backward sums each input pixel's copies.
// U-Nets, FPNs and YOLO necks upsample this way.
Tensor upsample_nearest2d(const Tensor& x, std::array<std::int64_t, 2> size);

}  // namespace ckpt
