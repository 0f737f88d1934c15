#pragma once

// torch.utils.checkpoint, both variants, with PyTorch 1.13's semantics, warnings and errors
// (see ../shared/reference/pytorch-1.13-checkpoint-facts.md), plus our extensions.
//
// CONTRACT used by engine/run. Additions are fine.

#include <functional>
#include <string>
#include <vector>

#include "engine/autograd/node.hpp"

namespace ckpt {

using SegmentFunction = std::function<TensorList(const TensorList&)>;

struct CheckpointOptions {
  bool use_reentrant = true;       // 1.13's default
  bool preserve_rng_state = true;  // stash the generator state (5,056 bytes, category rng state)
  bool early_stop = false;         // non-reentrant: stop recomputing once all needed are back
  bool determinism_check = true;   // compare recomputed op outputs with the forward's checksums
  // Selective policy: op kinds whose outputs are saved inside the segment instead of
  // recomputed ("matmul", "linear", "conv2d" for save-matmul); empty for none.
  std::vector<std::string> save_ops;
  std::string name;  // segment name for the trace ("features.denseblock1")
};

TensorList checkpoint(const SegmentFunction& fn, const TensorList& inputs,
                      const CheckpointOptions& options = {});

// 1.13's split: segment size len / segments, the first segments - 1 checkpointed, the rest
// run plainly. Bad `segments` is a std::invalid_argument.
TensorList checkpoint_sequential(const std::vector<SegmentFunction>& functions, int segments,
                                 const TensorList& input, const CheckpointOptions& options = {});

}  // namespace ckpt
