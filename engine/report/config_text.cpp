#include "engine/report/config_text.hpp"

namespace ckpt {

std::string describe_config(const CheckpointConfig& c) {
  std::string what;
  if (c.segments > 0) {
    what = "checkpoint_sequential, " + std::to_string(c.segments) + " segments";
  } else if (c.modules.empty()) {
    return "no checkpoints";
  } else {
    what = *c.modules.begin();
    if (c.modules.size() > 1) what += " + " + std::to_string(c.modules.size() - 1) + " more";
  }
  what += c.use_reentrant ? ", reentrant" : ", non-reentrant";
  if (!c.preserve_rng_state) what += ", RNG not preserved";
  if (c.policy == SelectivePolicy::save_matmul) what += ", save matmuls";
  return what;
}

}  // namespace ckpt
