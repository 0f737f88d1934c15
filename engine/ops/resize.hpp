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

// F.interpolate(x, size=..., mode="bilinear", align_corners=...) on [N, C, H, W], as PyTorch
// 1.13's CPU kernel computes it: output pixel o reads source coordinate o * (in - 1) / (out - 1)
// with align_corners, else (o + 0.5) * ratio - 0.5 clamped at 0, ratio being 1 / scale when a
// scale factor is given (scales[d] > 0: F.interpolate(scale_factor=...), nn.Upsample) and in / out
// otherwise. Saves nothing (UpsampleBilinear2DBackward1 keeps sizes); the backward spreads each
// output gradient over its four taps. DeepLabV3, FCN, LR-ASPP and U-Nets upsample this way.
Tensor upsample_bilinear2d(const Tensor& x, std::array<std::int64_t, 2> size, bool align_corners,
                           std::array<double, 2> scales = {0, 0});

}  // namespace ckpt
