#pragma once

#include <cstdint>

#include "engine/tensor/tensor.hpp"

namespace ckpt {

class OpTable;

// F.pixel_shuffle: [*, C * r * r, H, W] -> [*, C, H * r, W * r], each output pixel's r x r block
// read from r * r consecutive channels (ONNX DepthToSpace, mode CRD); `channels_last_blocks`:
// the blocks' channels outermost instead (DepthToSpace's DCR, TensorFlow's order). Saves nothing
// (PixelShuffleBackward0 keeps the factor only); a copy through a permuted view.
Tensor pixel_shuffle(const Tensor& x, std::int64_t upscale, bool channels_last_blocks = false);
// F.pixel_unshuffle, its inverse: [*, C, H * r, W * r] -> [*, C * r * r, H, W] (with
// `channels_last_blocks`, ONNX SpaceToDepth's order). Saves nothing.
Tensor pixel_unshuffle(const Tensor& x, std::int64_t downscale, bool channels_last_blocks = false);

// Their rows (pixel_shuffle.cpp), added with the shape ops' family.
void register_pixel_shuffle_ops(OpTable& table);

}  // namespace ckpt
