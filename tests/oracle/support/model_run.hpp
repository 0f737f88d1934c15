#pragma once

// Runs a model file (a sample's JSON, an ONNX file PyTorch exported for the case) through the
// Runner's executor on the tensors the Python case declared under the model's own names: the
// C++ half of the cases whose PyTorch half is a real module (cases_sample_models,
// cases_recurrent).

#include <functional>
#include <optional>
#include <set>
#include <string>

#include "engine/model/model.hpp"
#include "engine/ops/autocast.hpp"
#include "support/oracle_harness.hpp"

namespace ckpt::oracle {

// Every parameter and buffer of the model must be one the Python case declared, with the same
// shape (PyTorch's gradient of a parameter the model does not use fails the harness's
// comparison); a buffer's value must be the one the model holds. Inputs are the case's, by the
// model's input names. `checkpointed(model)` names the module instances to checkpoint
// (reentrant or not); `autocast`, when given, is the autocast the forward and the loss run
// under (a checkpointed block's recomputation restores it, as torch.utils.checkpoint does).
// Returns the model's outputs, then its loss when the model computes one. The run stays alive
// until the next call: the harness runs backward after the case returns.
TensorList run_model_file(OracleCase& c, const std::string& path,
                          const std::function<std::set<std::string>(const Model&)>& checkpointed,
                          bool reentrant, std::optional<AutocastState> autocast = std::nullopt);

}  // namespace ckpt::oracle
