#pragma once

// A per-op policy as PyTorch code: PyTorch 2.4+'s selective activation checkpointing
// (torch.utils.checkpoint.create_selective_checkpoint_contexts with a policy function that
// answers CheckpointPolicy.MUST_SAVE for the ops the policy keeps, PREFER_RECOMPUTE for the
// rest), shared by the code view and the plan export.

#include <string>

#include "engine/run/run_request.hpp"

namespace ckpt {

// The header comment (what the code needs), the imports and the Python helper
// `selective(kinds, every=1)`, which makes a checkpoint() context_fn; "" without a policy.
std::string selective_helper(const SelectivePolicy& policy);
// The same for a plan: "" unless some region of it runs under a policy.
std::string selective_helper(const CheckpointPlan& plan);

// ", context_fn=selective(("mm", "sdpa"), every=2)" for the policy; "" without one.
std::string policy_kwargs(const SelectivePolicy& policy);
// "selective(("mm", "sdpa"), every=2)" for the policy; "None" without one.
std::string policy_context(const SelectivePolicy& policy);

// PyTorch's selective checkpointing is non-reentrant only: with a policy the export writes
// use_reentrant=False whatever the run's variant.
bool exported_reentrant(const RunRequest& request);

}  // namespace ckpt
