#include "engine/plan/policy_code.hpp"

#include <sstream>

#include "engine/ops/schema/op_schema.hpp"

namespace ckpt {

std::string selective_helper(const SelectivePolicy& policy) {
  if (policy.empty()) return "";
  const OpTable& table = OpTable::instance();
  std::ostringstream s;
  s << "\n# The per-op policy (" << policy.spelling()
    << ") needs PyTorch >= 2.4 (create_selective_checkpoint_contexts)\n"
    << "# and runs non-reentrant (use_reentrant=False): PyTorch has it in no other form.\n"
    << "from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts\n"
    << "\n# The aten functions each op kind runs as (those a PyTorch version lacks are skipped).\n"
    << "SAVE_KINDS = {\n";
  for (const std::string& kind : table.policy_kinds()) {
    s << "    \"" << kind << "\": (";
    for (const std::string& op : table.aten_of_policy_kind(kind)) s << "\"" << op << "\", ";
    s << "),\n";
  }
  s << "}\n\n\n"
    << "def selective(kinds, every=1):\n"
    << "    \"\"\"A checkpoint() context_fn: in each checkpointed region, saves the outputs of "
       "the\n"
    << "    ops of `kinds` (the 1st, (every+1)-th, ... of them) and recomputes the rest.\"\"\"\n"
    << "    ops = {getattr(torch.ops.aten, name).default for kind in kinds\n"
    << "           for name in SAVE_KINDS[kind] if hasattr(torch.ops.aten, name)}\n\n"
    << "    def context_fn():\n"
    << "        seen = {False: 0, True: 0}  # per pass: the forward, the recomputation\n\n"
    << "        def policy(ctx, op, *args, **kwargs):\n"
    << "            if op not in ops:\n"
    << "                return CheckpointPolicy.PREFER_RECOMPUTE\n"
    << "            seen[ctx.is_recompute] += 1\n"
    << "            if (seen[ctx.is_recompute] - 1) % every == 0:\n"
    << "                return CheckpointPolicy.MUST_SAVE\n"
    << "            return CheckpointPolicy.PREFER_RECOMPUTE\n\n"
    << "        return create_selective_checkpoint_contexts(policy)\n\n"
    << "    return context_fn\n";
  return s.str();
}

std::string selective_helper(const CheckpointPlan& plan) {
  if (!plan.policy.empty()) return selective_helper(plan.policy);
  for (const auto& [region, own] : plan.policies)
    if (!own.empty()) return selective_helper(own);
  return "";
}

std::string policy_context(const SelectivePolicy& policy) {
  if (policy.empty()) return "None";
  std::ostringstream s;
  s << "selective((";
  for (const std::string& kind : policy.save) s << '"' << kind << "\", ";
  s << ')';
  if (policy.every > 1) s << ", every=" << policy.every;
  s << ')';
  return s.str();
}

std::string policy_kwargs(const SelectivePolicy& policy) {
  return policy.empty() ? "" : ", context_fn=" + policy_context(policy);
}

bool exported_reentrant(const RunRequest& request) {
  return request.settings.use_reentrant && !request.plan.any_policy();
}

}  // namespace ckpt
