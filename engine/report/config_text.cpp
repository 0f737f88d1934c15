#include "engine/report/config_text.hpp"

namespace ckpt {

std::string describe_request(const RunRequest& request) {
  const CheckpointPlan& p = request.plan;
  const RunSettings& s = request.settings;
  std::string what;
  if (p.segments > 0) {
    what = "checkpoint_sequential, " + std::to_string(p.segments) + " segments";
  } else if (p.modules.empty()) {
    return "no checkpoints";
  } else {
    what = *p.modules.begin();
    if (p.modules.size() > 1) what += " + " + std::to_string(p.modules.size() - 1) + " more";
  }
  what += s.use_reentrant ? ", reentrant" : ", non-reentrant";
  if (!s.preserve_rng_state) what += ", RNG not preserved";
  if (p.policy == SelectivePolicy::save_matmul) what += ", save matmuls";
  return what;
}

}  // namespace ckpt
