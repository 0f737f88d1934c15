#pragma once

#include <string_view>

#include "engine/autograd/node.hpp"

namespace ckpt {

// Sees every op's outputs at the moment the op hands them to autograd (record()), also under
// no-grad when nothing is recorded. Checkpointing uses it to checksum a segment's op outputs in
// the forward and compare them at recompute, to notice ops with side effects (BatchNorm's
// running statistics), and to give selective checkpointing its saved outputs back.
// Observers form a per-thread stack; every observer on it is told, innermost first.
class OpObserver {
 public:
  virtual ~OpObserver() = default;
  // `op` is the engine op of the current step ("linear"), or the backward name when no step
  // is open; `saved` is what the op keeps for backward (undefined entries: nothing, e.g.
  // batch_norm's batch statistics in eval mode).
  virtual void on_outputs(std::string_view op, const TensorList& outputs,
                          const TensorList& saved) = 0;
  // Selective checkpointing: the outputs to return instead of computing the op again (all the
  // outputs of its next record(), in order). Asked by the ops a policy may save (matmul's
  // products, linear, conv2d, attention) just before they compute; the op's next record() is
  // then those outputs. Empty: compute.
  virtual TensorList replay_outputs(std::string_view /*op*/) { return {}; }
};

class OpObserverScope {
 public:
  explicit OpObserverScope(OpObserver* observer);
  ~OpObserverScope();
  OpObserverScope(const OpObserverScope&) = delete;
  OpObserverScope& operator=(const OpObserverScope&) = delete;
};

// Called by record() with the op's outputs and what it saves.
void notify_op_outputs(std::string_view fallback_name, const TensorList& outputs,
                       const TensorList& saved);

// Asked by matmul's products, linear, conv2d and attention before computing: the saved outputs
// to use instead (every observer is asked, innermost first; the first answer wins), or an
// empty list.
TensorList replay_saved_outputs(std::string_view op);
// The first of them (an op of one output), or an undefined tensor.
Tensor replay_saved_output(std::string_view op);

}  // namespace ckpt
