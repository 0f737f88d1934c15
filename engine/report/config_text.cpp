#include "engine/report/config_text.hpp"

namespace ckpt {

namespace {

// ", adamw, bf16 autocast": the training step's settings, where they are not the default.
std::string step_text(const RunSettings& s) {
  std::string out;
  if (s.optimizer.kind != OptimizerKind::none)
    out += std::string(", ") + optimizer_name(s.optimizer.kind);
  if (s.amp != AmpMode::off) out += std::string(", ") + amp_name(s.amp) + " autocast";
  return out;
}

}  // namespace

std::string describe_request(const RunRequest& request) {
  const CheckpointPlan& p = request.plan;
  const RunSettings& s = request.settings;
  std::string what;
  if (p.segments > 0) {
    what = "checkpoint_sequential, " + std::to_string(p.segments) + " segments";
  } else if (p.modules.empty()) {
    return "no checkpoints" + step_text(s);
  } else {
    what = *p.modules.begin();
    if (p.modules.size() > 1) what += " + " + std::to_string(p.modules.size() - 1) + " more";
  }
  what += s.use_reentrant ? ", reentrant" : ", non-reentrant";
  if (!s.preserve_rng_state) what += ", RNG not preserved";
  if (p.policy == SelectivePolicy::save_matmul) what += ", save matmuls";
  return what + step_text(s);
}

}  // namespace ckpt
