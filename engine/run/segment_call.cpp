#include "engine/run/segment_call.hpp"

#include <stdexcept>

namespace ckpt {

// engine/checkpoint is not on main yet: until it lands, a run that asks for checkpointing
// fails with this message instead of failing to link.
TensorList call_checkpoint(const SegmentFunction&, const TensorList&,
                           const CheckpointOptions& options) {
  throw std::runtime_error("cannot checkpoint '" + options.name +
                           "': this build has no engine/checkpoint yet");
}

TensorList call_checkpoint_sequential(const std::vector<SegmentFunction>&, int, const TensorList&,
                                      const CheckpointOptions&) {
  throw std::runtime_error(
      "cannot run checkpoint_sequential: this build has no "
      "engine/checkpoint yet");
}

}  // namespace ckpt
