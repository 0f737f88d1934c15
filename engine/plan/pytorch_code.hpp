#pragma once

// A checkpoint configuration written as PyTorch code (the GUI's "PyTorch code" view, the CLI).

#include <string>

#include "engine/model/model.hpp"
#include "engine/run/run_request.hpp"

namespace ckpt {

// For a native model: the whole model as PyTorch 1.13 modules whose forward methods call
// checkpoint(...) (or checkpoint_sequential) where `request`'s plan puts them, with the variant and
// RNG setting, plus the lines that run one training step. For an ONNX model (whose Python source
// is not known): a helper that wraps the chosen submodules of the exported PyTorch model by name.
std::string pytorch_code(const Model& model, const RunRequest& request);

}  // namespace ckpt
