// C++ halves of the transformer-sample oracle cases (cases_sample_models.py): the engine loads
// samples/gpt_mini.json and samples/vit_tiny.json themselves and runs them, through the
// Runner's executor, on PyTorch's weights and inputs. A sample whose architecture drifts from
// the PyTorch one (a parameter renamed, reshaped, added or dropped, an op moved) fails here.
#include <cstdlib>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

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
// or "non_reentrant" every child of `blocks` is checkpointed. Returns the model's outputs and
// its loss.
TensorList run_sample(OracleCase& c, const std::string& file, const std::string& blocks) {
  const std::string mode = c.attr_string("mode");
  const auto every_block = [&](const Model& model) {
    std::set<std::string> modules;
    if (mode == "plain") return modules;
    const Module* parent = model.find_module(blocks);
    if (!parent) throw std::invalid_argument(file + ": no module " + blocks);
    for (const auto& b : parent->children) modules.insert(b->path);
    c.check(modules.size() == 4,
            file + ": " + std::to_string(modules.size()) + " blocks, PyTorch has 4");
    return modules;
  };
  TensorList out = run_model_file(c, sample_path(file), every_block, mode == "reentrant");
  if (out.size() < 2) throw std::invalid_argument(file + ": the sample computes no loss");
  return out;
}

}  // namespace

CKPTLAB_ORACLE_CASE(gpt_mini) {
  return run_sample(c, "gpt_mini.json", "h");
}

CKPTLAB_ORACLE_CASE(vit_tiny) {
  return run_sample(c, "vit_tiny.json", "blocks");
}
