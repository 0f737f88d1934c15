#include "support/model_run.hpp"

#include <memory>
#include <stdexcept>
#include <vector>

#include "engine/autograd/grad_mode.hpp"
#include "engine/model/finalize.hpp"
#include "engine/model/loader.hpp"
#include "engine/run/compiled_model.hpp"
#include "engine/run/executor.hpp"

namespace ckpt::oracle {

namespace {

// What a run needs until its backward is done: a checkpointed block's recomputation calls back
// into the executor, which reads the model, the compiled plan, the request and the parameters.
struct ModelRun {
  std::shared_ptr<Model> model;
  std::unique_ptr<CompiledModel> plan;
  RunRequest request;
  TensorList statics;
  std::unique_ptr<Executor> executor;
};
std::unique_ptr<ModelRun> last_run;

}  // namespace

TensorList run_model_file(OracleCase& c, const std::string& path,
                          const std::function<std::set<std::string>(const Model&)>& checkpointed,
                          bool reentrant, std::optional<AutocastState> autocast) {
  last_run = std::make_unique<ModelRun>();
  ModelRun& run = *last_run;
  run.model = load_model(path);
  const Model* model = run.model.get();
  for (const ParameterInfo& p : model->parameters) {
    Tensor t = p.is_buffer ? c.buffer(p.name) : c.param(p.name);
    if (t.shape() != p.initial.shape() || t.dtype() != p.initial.dtype())
      throw std::invalid_argument(path + ": parameter " + p.name + " is " + p.initial.str() +
                                  " in the model, " + t.str() + " in PyTorch");
    if (p.is_buffer)
      c.check(t.to_vector() == p.initial.to_vector(),
              path + ": buffer " + p.name + " differs from PyTorch's");
    run.statics.push_back(t);
  }
  for (const auto& [name, value] : model->constants) run.statics.push_back(value);

  // The inputs at PyTorch's batch: the model's shapes with "batch" resolved from the first.
  TensorList inputs;
  const std::int64_t batch = c.input(model->inputs.at(0).name).shape().at(0);
  for (const InputInfo& in : model->inputs) {
    Tensor t = c.input(in.name);
    if (t.shape() != resolve_input_shape(in, batch) || t.dtype() != in.dtype)
      throw std::invalid_argument(path + ": input " + in.name + " is " + t.str() +
                                  " in PyTorch, the model takes " +
                                  shape_str(resolve_input_shape(in, batch)));
    inputs.push_back(t);
  }

  run.request.settings.use_reentrant = reentrant;
  if (checkpointed) run.request.plan.modules = checkpointed(*model);
  run.plan = std::make_unique<CompiledModel>(*model);
  std::vector<int> wanted = run.plan->outputs();
  if (run.plan->loss_id() >= 0) wanted.push_back(run.plan->loss_id());
  GradModeGuard grad_on(true);
  run.executor = std::make_unique<Executor>(*model, *run.plan, run.request, nullptr);
  std::optional<AutocastScope> scope;
  if (autocast) scope.emplace(*autocast);
  return run.executor->forward(run.statics, inputs, wanted);
}

}  // namespace ckpt::oracle
