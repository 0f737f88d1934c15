#include "engine/report/config_text.hpp"

#include <map>

#include "engine/tensor/memory_semantics.hpp"

namespace ckpt {

namespace {

// ", adamw, bf16 autocast": the training step's settings, where they are not the default.
std::string step_text(const RunSettings& s) {
  std::string out;
  if (s.optimizer.kind != OptimizerKind::none)
    out += std::string(", ") + optimizer_name(s.optimizer.kind);
  if (s.amp != AmpMode::off) out += std::string(", ") + amp_name(s.amp) + " autocast";
  if (s.param_dtype != DType::f32)
    out += std::string(", ") + dtype_name(s.param_dtype) + " parameters";
  if (s.fsdp.ranks > 0) {
    out += ", FSDP2 on " + std::to_string(s.fsdp.ranks) + (s.fsdp.ranks == 1 ? " rank" : " ranks");
    if (!s.fsdp.reshard_after_forward) out += " (not resharded after forward)";
    if (s.fsdp.reduce_dtype != DType::f32)
      out += std::string(", reduce in ") + dtype_name(s.fsdp.reduce_dtype);
  }
  return out;
}

std::string checkpoints_text(const RunRequest& request) {
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
  if (!p.policy.empty()) what += ", policy " + p.policy.spelling();
  // Regions the planner gave a policy of their own: ", save:mm in 3 regions".
  std::map<std::string, int> regions;
  for (const auto& [region, own] : p.policies)
    if (own != p.policy) ++regions[own.spelling()];
  for (const auto& [spelling, count] : regions)
    what +=
        ", " + spelling + " in " + std::to_string(count) + (count == 1 ? " region" : " regions");
  return what;
}

// ", offload h.0 + 3 more": the modules whose saved tensors wait in host memory.
std::string offload_text(const CheckpointPlan& p) {
  if (p.offload.empty()) return "";
  std::string out = ", offload " + *p.offload.begin();
  if (p.offload.size() > 1) out += " + " + std::to_string(p.offload.size() - 1) + " more";
  return out;
}

}  // namespace

std::string describe_request(const RunRequest& request) {
  const RunSettings& s = request.settings;
  std::string what = checkpoints_text(request) + offload_text(request.plan) + step_text(s);
  if (s.device == Device::cpu) return what;
  // Whose memory, and PyTorch 2.x's checkpoint default where it differs from 1.13's
  // (MemorySemantics::checkpoint_early_stop: torch.utils.checkpoint.set_checkpoint_early_stop).
  const MemorySemantics& rules = memory_semantics(s.device);
  what += std::string(", ") + rules.whose;
  const CheckpointPlan& p = request.plan;
  const bool checkpoints = !p.modules.empty() || !p.ranges.empty() || p.segments > 0;
  const bool non_reentrant = !s.use_reentrant && checkpoints;
  if (non_reentrant && rules.checkpoint_early_stop && !s.early_stop)
    what += ", early stop (2.x's default)";
  return what;
}

}  // namespace ckpt
