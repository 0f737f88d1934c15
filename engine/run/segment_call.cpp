#include "engine/run/segment_call.hpp"

namespace ckpt {

TensorList call_checkpoint(const SegmentFunction& fn, const TensorList& inputs,
                           const CheckpointOptions& options) {
  return checkpoint(fn, inputs, options);
}

TensorList call_checkpoint_sequential(const std::vector<SegmentFunction>& functions, int segments,
                                      const TensorList& input, const CheckpointOptions& options) {
  return checkpoint_sequential(functions, segments, input, options);
}

}  // namespace ckpt
