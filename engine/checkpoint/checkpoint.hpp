#pragma once

// torch.utils.checkpoint, both variants, with PyTorch 1.13's semantics, warnings and errors
// (see docs/reference/pytorch-1.13-checkpoint-facts.md), plus our extensions.
//
// CONTRACT used by engine/run. Additions are fine.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/autograd/node.hpp"

namespace ckpt {

using SegmentFunction = std::function<TensorList(const TensorList&)>;

struct CheckpointOptions {
  bool use_reentrant = true;       // 1.13's default
  bool preserve_rng_state = true;  // stash the generator state (5,056 bytes, category rng state)
  // Non-reentrant: stop recomputing once all needed are back. Unset: the default of the
  // device's memory semantics (off in PyTorch 1.13, which has no early stop; on in PyTorch 2.x
  // on CUDA, torch.utils.checkpoint's _checkpoint_early_stop).
  std::optional<bool> early_stop;
  bool determinism_check = true;  // compare recomputed op outputs with the forward's checksums
  // Selective policy: op types whose outputs are saved inside the segment instead of
  // recomputed (ops_of_kinds), empty for none; of those, the 1st, (n+1)-th, (2n+1)-th ... in
  // the segment's forward with save_every = n (torchtitan saves every second matmul).
  std::vector<std::string> save_ops;
  int save_every = 1;
  std::string name;  // segment name for the trace ("features.denseblock1")
};

// Defaults reproduce PyTorch 1.13 (reentrant, RNG preserved, no early stop); the recompute
// check (determinism_check) is our extension and costs one pass over each op output.
//
// Reentrant: warns "None of the inputs have requires_grad=True. Gradients will be None" (a
// run warning) when no input requires grad, and then records nothing; its backward fails
// under grad() and when the recomputed outputs do not require grad, with PyTorch's texts.
// Non-reentrant: saved tensors become placeholders; the segment re-runs on the first unpack
// (never when its ops save nothing); works with grad(), nesting, and early_stop.
// The segment's forward is marked checkpoint_begin/end, its recomputation recompute_begin/end.
TensorList checkpoint(const SegmentFunction& fn, const TensorList& inputs,
                      const CheckpointOptions& options = {});

// The op types a per-op policy naming `kinds` keeps (the op table's PolicyKind names: "mm",
// "conv", "sdpa").
std::vector<std::string> ops_of_kinds(const std::vector<std::string>& kinds);

// 1.13's split: segment size len / segments, the first segments - 1 checkpointed, the rest
// run plainly. Bad `segments` (< 1, or more than there are functions) is a
// std::invalid_argument. Segments are named "<options.name or segment>[i]". Non-reentrant is
// allowed here (our extension; 1.13 rejects use_reentrant).
TensorList checkpoint_sequential(const std::vector<SegmentFunction>& functions, int segments,
                                 const TensorList& input, const CheckpointOptions& options = {});

}  // namespace ckpt
