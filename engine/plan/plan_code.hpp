#pragma once

// A plan as PyTorch 1.13 code. For a native sample: the code view's model (engine/plan/
// pytorch_code.hpp) with the plan's checkpoint() calls, ranges wrapped by name. For a model
// exported to ONNX from the user's own nn.Module: apply_plan(model), which wraps the plan's
// modules by name with apply_activation_checkpointing (it composes with FSDP) and runs each
// range of siblings as one checkpointed segment.

#include <string>

#include "engine/model/model.hpp"
#include "engine/run/run_request.hpp"

namespace ckpt {

std::string plan_pytorch_code(const Model& model, const RunRequest& request);

}  // namespace ckpt
