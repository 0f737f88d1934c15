// C++ halves of the transformer-sample oracle cases (cases_sample_models.py): the engine loads
// samples/gpt_mini.json and samples/vit_tiny.json themselves and runs them, through the
// Runner's executor, on PyTorch's weights and inputs. A sample whose architecture drifts from
// the PyTorch one (a parameter renamed, reshaped, added or dropped, an op moved) fails here.
#include <cstdlib>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/ops/logical.hpp"
#include "support/model_run.hpp"

using namespace ckpt;
using oracle::OracleCase;
using oracle::run_model_file;

namespace {

std::string sample_path(const std::string& file) {
  const char* src = std::getenv("CKPTLAB_SOURCE_DIR");
  return std::string(src && *src ? src : CKPTLAB_ORACLE_CASES_SOURCE_DIR) + "/samples/" + file;
}

// Runs the sample `file` on PyTorch's tensors (support/model_run.hpp). With `mode` "reentrant"
// or "non_reentrant" every child of `blocks` is checkpointed; "bf16", "bf16_reentrant" and
// "bf16_non_reentrant" run the forward and the loss under PyTorch 1.13's CPU autocast
// (issue 31) and return the logits as float32, as the Python half does. Returns the model's
// outputs and its loss.
TensorList run_sample(OracleCase& c, const std::string& file, const std::string& blocks) {
  const std::string mode = c.attr_string("mode");
  const bool bf16 = mode.rfind("bf16", 0) == 0;
  const std::string checkpointing = mode == "bf16" ? "plain"
                                    : bf16         ? mode.substr(std::string("bf16_").size())
                                                   : mode;
  const auto every_block = [&](const Model& model) {
    std::set<std::string> modules;
    if (checkpointing == "plain") return modules;
    const Module* parent = model.find_module(blocks);
    if (!parent) throw std::invalid_argument(file + ": no module " + blocks);
    for (const auto& b : parent->children) modules.insert(b->path);
    c.check(modules.size() == 4,
            file + ": " + std::to_string(modules.size()) + " blocks, PyTorch has 4");
    return modules;
  };
  std::optional<AutocastState> autocast;
  if (bf16) autocast = AutocastState{true, DType::bf16, Device::cpu};
  TensorList out =
      run_model_file(c, sample_path(file), every_block, checkpointing == "reentrant", autocast);
  if (out.size() < 2) throw std::invalid_argument(file + ": the sample computes no loss");
  if (bf16) out[0] = cast(out[0], DType::f32);
  return out;
}

}  // namespace

CKPTLAB_ORACLE_CASE(gpt_mini) {
  return run_sample(c, "gpt_mini.json", "h");
}

CKPTLAB_ORACLE_CASE(vit_tiny) {
  return run_sample(c, "vit_tiny.json", "blocks");
}

// Issue 39: the Llama family's layers (RMSNorm, rotary embeddings, grouped-query causal SDPA,
// SwiGLU, tied LM head) against eager PyTorch 1.13.
CKPTLAB_ORACLE_CASE(llama_mini) {
  return run_sample(c, "llama_mini.json", "layers");
}
