#pragma once

// torch.autocast: inside an AutocastScope every op of the op table (run_op) gets its floating
// inputs cast as its row's AutocastRule says for the device whose lists apply (PyTorch 1.13's
// CPU autocast, bfloat16 only; PyTorch 2.x's CUDA autocast). A cast is an op of its own ("to"
// with a ToCopyBackward0 node, so the gradient goes back in the input's dtype), a step of the
// trace. As ATen's cached_cast does, the lower-precision cast of a float32 leaf that requires
// grad (a parameter) is made once and cached until the outermost scope exits: every later use
// in the region shares it, and it lives at least that long.

#include <cstdint>

#include "engine/ops/schema/op_schema.hpp"

namespace ckpt {

struct AutocastState {
  bool enabled = false;
  DType lower = DType::bf16;   // the lower precision: bfloat16 or float16
  Device rules = Device::cpu;  // whose lists: cpu (1.13) or cuda (2.x)

  bool operator==(const AutocastState&) const = default;
};

// This thread's state (disabled outside every scope).
AutocastState autocast_state();

// `with torch.autocast(...)`: the state for the scope's lifetime; leaving the outermost scope
// (enabled or not, as PyTorch's nesting count does) clears the cast cache.
class AutocastScope {
 public:
  explicit AutocastScope(AutocastState state);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  AutocastState previous_;
};

// The policy of `row` under the rules of `device`.
AutocastPolicy autocast_policy(const OpSchema& row, Device device);

// The inputs `row`'s op gets under the current state: `inputs` itself when autocast is off or
// the policy casts nothing.
TensorList autocast_inputs(const OpSchema& row, const TensorList& inputs);

// Cast-cache entries alive (tests).
std::int64_t autocast_cached_casts();

}  // namespace ckpt
