#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/ops/schema/onnx_pattern.hpp"
#include "engine/tensor/tensor.hpp"

namespace ckpt {

class OpTable;

// F.pad's modes other than "constant" (that one is constant_pad, shape_ops.hpp).
enum class PadMode : std::uint8_t { reflect, replicate, circular };
PadMode pad_mode(const std::string& name);  // "reflect", "replicate", "circular", or an error
const char* pad_mode_name(PadMode mode);

// F.pad(x, pads, mode) for reflect, replicate and circular over the last pads.size() / 2 dims
// (1, 2 or 3 of them), `pads` in F.pad's order: (left, right) of the last dim, then of the one
// before it. As PyTorch 1.13: reflect needs each pad below the dim's size, circular at most
// the size; reflect and replicate save their input (ReflectionPad1D/2D/3DBackward0,
// ReplicationPad...), circular, made of slices and copies in 1.13, saves nothing.
Tensor pad(const Tensor& x, const Shape& pads, PadMode mode);

// PyTorch 1.13's export of F.pad(mode="circular"), Slice and Concat chains, read as the
// module's circular pad (pad_patterns.cpp).
std::vector<OnnxPattern> circular_pad_patterns();

// The rows of `pad` (pad.cpp), added with the shape ops' family.
void register_pad_ops(OpTable& table);

}  // namespace ckpt
