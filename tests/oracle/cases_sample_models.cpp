// C++ halves of the transformer-sample oracle cases (cases_sample_models.py): the engine loads
// samples/gpt_mini.json and samples/vit_tiny.json themselves and runs them, through the
// Runner's executor, on PyTorch's weights and inputs. A sample whose architecture drifts from
// the PyTorch one (a parameter renamed, reshaped, added or dropped, an op moved) fails here.
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/autograd/grad_mode.hpp"
#include "engine/model/finalize.hpp"
#include "engine/model/loader.hpp"
#include "engine/run/compiled_model.hpp"
#include "engine/run/executor.hpp"
#include "support/oracle_harness.hpp"

using namespace ckpt;
using oracle::OracleCase;

namespace {

// What a run needs until its backward is done: a checkpointed block's recomputation calls back
// into the executor, which reads the model, the plan, the configuration and the parameters. The
// harness runs backward after the case returns, so the last case's run is kept here until the next
// one.
struct SampleRun {
  std::shared_ptr<Model> model;
  std::unique_ptr<CompiledModel> plan;
  RunRequest config;
  TensorList statics;
  std::unique_ptr<Executor> executor;
};
std::unique_ptr<SampleRun> last_run;

std::string sample_path(const std::string& file) {
  const char* src = std::getenv("CKPTLAB_SOURCE_DIR");
  return std::string(src && *src ? src : CKPTLAB_ORACLE_CASES_SOURCE_DIR) + "/samples/" + file;
}

// Runs the sample `file` on the tensors the Python case declared under the sample's own names:
// every parameter and buffer of the model must be one PyTorch declared, with the same shape
// (PyTorch's gradient of a parameter the sample does not use fails the harness's comparison);
// a buffer's value must be the one the sample draws (the causal mask). With `mode` "reentrant"
// or "non_reentrant" every child of `blocks` is checkpointed. Returns the model's outputs and
// its loss.
TensorList run_sample(OracleCase& c, const std::string& file, const std::string& blocks) {
  last_run = std::make_unique<SampleRun>();
  SampleRun& run = *last_run;
  run.model = load_model(sample_path(file));
  const Model* model = run.model.get();
  const std::string mode = c.attr_string("mode");
  TensorList& statics = run.statics;
  for (const ParameterInfo& p : model->parameters) {
    Tensor t = p.is_buffer ? c.buffer(p.name) : c.param(p.name);
    if (t.shape() != p.initial.shape() || t.dtype() != p.initial.dtype())
      throw std::invalid_argument(file + ": parameter " + p.name + " is " + p.initial.str() +
                                  " in the sample, " + t.str() + " in PyTorch");
    if (p.is_buffer)
      c.check(t.to_vector() == p.initial.to_vector(),
              file + ": buffer " + p.name + " differs from PyTorch's");
    statics.push_back(t);
  }
  for (const auto& [name, value] : model->constants) statics.push_back(value);

  // The inputs at PyTorch's batch: the sample's shapes with "batch" resolved from the first.
  TensorList inputs;
  const std::int64_t batch = c.input(model->inputs.at(0).name).shape().at(0);
  for (const InputInfo& in : model->inputs) {
    Tensor t = c.input(in.name);
    if (t.shape() != resolve_input_shape(in, batch) || t.dtype() != in.dtype)
      throw std::invalid_argument(file + ": input " + in.name + " is " + t.str() +
                                  " in PyTorch, the sample takes " +
                                  shape_str(resolve_input_shape(in, batch)));
    inputs.push_back(t);
  }

  RunRequest& config = run.config;
  config.settings.use_reentrant = mode == "reentrant";
  if (mode != "plain") {
    const Module* parent = model->find_module(blocks);
    if (!parent) throw std::invalid_argument(file + ": no module " + blocks);
    for (const auto& b : parent->children) config.plan.modules.insert(b->path);
    c.check(config.plan.modules.size() == 4,
            file + ": " + std::to_string(config.plan.modules.size()) + " blocks, PyTorch has 4");
  }
  run.plan = std::make_unique<CompiledModel>(*model);
  std::vector<int> wanted = run.plan->outputs();
  if (run.plan->loss_id() < 0) throw std::invalid_argument(file + ": the sample computes no loss");
  wanted.push_back(run.plan->loss_id());
  GradModeGuard grad_on(true);
  run.executor = std::make_unique<Executor>(*model, *run.plan, config, nullptr);
  return run.executor->forward(statics, inputs, wanted);
}

}  // namespace

CKPTLAB_ORACLE_CASE(gpt_mini) {
  return run_sample(c, "gpt_mini.json", "h");
}

CKPTLAB_ORACLE_CASE(vit_tiny) {
  return run_sample(c, "vit_tiny.json", "blocks");
}
