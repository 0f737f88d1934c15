#include "engine/report/config_text.hpp"

#include "engine/tensor/memory_semantics.hpp"

namespace ckpt {

namespace {

std::string checkpoints_text(const CheckpointConfig& c) {
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

}  // namespace

std::string describe_config(const CheckpointConfig& c) {
  std::string what = checkpoints_text(c);
  if (c.device == Device::cpu) return what;
  // Whose memory, and PyTorch 2.x's checkpoint default where it differs from 1.13's
  // (MemorySemantics::checkpoint_early_stop: torch.utils.checkpoint.set_checkpoint_early_stop).
  const MemorySemantics& rules = memory_semantics(c.device);
  what += std::string(", ") + rules.whose;
  const bool non_reentrant =
      !c.use_reentrant && (c.segments > 0 || !c.modules.empty() || !c.ranges.empty());
  if (non_reentrant && rules.checkpoint_early_stop && !c.early_stop)
    what += ", early stop (2.x's default)";
  return what;
}

}  // namespace ckpt
