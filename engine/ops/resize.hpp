#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "engine/tensor/tensor.hpp"

namespace ckpt {

// F.interpolate(x, size=..., mode="nearest") on [N, C, *] with 1, 2 or 3 spatial dims (the
// size's length): output index o reads input index floor(o * in / out) on each axis (PyTorch's
// legacy nearest, in float as PyTorch computes it). Saves nothing (UpsampleNearest1D/2D/
// 3DBackward0 keep only sizes); the backward sums each input pixel's copies. U-Nets, FPNs,
// YOLO necks and 3-D medical U-Nets upsample this way.
Tensor upsample_nearest(const Tensor& x, const Shape& size);

// F.interpolate(x, size=..., mode="linear" | "bilinear" | "trilinear", align_corners=...) on
// [N, C, *] with 1, 2 or 3 spatial dims, as PyTorch 1.13's CPU kernels compute it: on each
// axis, output index o reads source coordinate o * (in - 1) / (out - 1) with align_corners,
// else (o + 0.5) * ratio - 0.5 clamped at 0, ratio being 1 / scale when a scale factor is given
// (scales[d] > 0: F.interpolate(scale_factor=...), nn.Upsample) and in / out otherwise. Saves
// nothing (UpsampleLinear1D / Bilinear2D / Trilinear3DBackward1 keep sizes); the backward
// spreads each output gradient over its 2, 4 or 8 taps. DeepLabV3, FCN and U-Nets upsample
// this way.
Tensor upsample_linear(const Tensor& x, const Shape& size, bool align_corners,
                       const std::vector<double>& scales = {});

// The 2-D spellings.
inline Tensor upsample_nearest2d(const Tensor& x, std::array<std::int64_t, 2> size) {
  return upsample_nearest(x, {size[0], size[1]});
}
inline Tensor upsample_bilinear2d(const Tensor& x, std::array<std::int64_t, 2> size,
                                  bool align_corners, std::array<double, 2> scales = {0, 0}) {
  return upsample_linear(x, {size[0], size[1]}, align_corners,
                         scales[0] > 0 || scales[1] > 0 ? std::vector<double>{scales[0], scales[1]}
                                                        : std::vector<double>{});
}

}  // namespace ckpt
