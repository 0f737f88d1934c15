#pragma once

// The Runner's one door to engine/checkpoint.

#include <vector>

#include "engine/checkpoint/checkpoint.hpp"

namespace ckpt {

TensorList call_checkpoint(const SegmentFunction& fn, const TensorList& inputs,
                           const CheckpointOptions& options);
TensorList call_checkpoint_sequential(const std::vector<SegmentFunction>& functions, int segments,
                                      const TensorList& input, const CheckpointOptions& options);

}  // namespace ckpt
