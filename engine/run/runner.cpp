#include "engine/run/runner.hpp"
#include "engine/autograd/execution_context.hpp"

#include <malloc.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <unordered_map>

#include "engine/autograd/anomaly.hpp"
#include "engine/autograd/engine.hpp"
#include "engine/autograd/grad_mode.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/model/finalize.hpp"
#include "engine/ops/autocast.hpp"
#include "engine/ops/ops.hpp"
#include "engine/ops/schema/parameter_init.hpp"
#include "engine/run/compiled_model.hpp"
#include "engine/run/executor.hpp"
#include "engine/run/grad_scaler.hpp"
#include "engine/run/optimizer.hpp"
#include "engine/run/time_estimate.hpp"
#include "engine/tensor/generator.hpp"
#include "engine/tensor/init.hpp"
#include "engine/tensor/memory_semantics.hpp"

namespace ckpt {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// omp_set_num_threads for the run's thread, restored afterwards.
class ThreadsGuard {
 public:
  explicit ThreadsGuard(int n) : previous_(omp_get_max_threads()), set_(n > 0) {
    if (set_) omp_set_num_threads(n);
  }
  ~ThreadsGuard() {
    if (set_) omp_set_num_threads(previous_);
  }
  ThreadsGuard(const ThreadsGuard&) = delete;
  ThreadsGuard& operator=(const ThreadsGuard&) = delete;

 private:
  int previous_;
  bool set_;
};

void tag(const Tensor& t, const std::string& name) {
  t.storage()->ledger().tag(t.storage()->id(), name);
}

// Fresh copies of the parameters and constants for this run (so that BatchNorm's running
// statistics and every weight start from the model's initial values each time).
// With a param_dtype (FSDP2's MixedPrecisionPolicy) the run computes with the floating
// parameters and buffers in that dtype: what fully_shard all-gathers.
Tensor in_param_dtype(Tensor t, DType param_dtype) {
  if (param_dtype == DType::f32 || !is_floating(t.dtype()) || t.dtype() == param_dtype) return t;
  return cast_raw(t, param_dtype);
}

TensorList make_statics(const Model& model, const RunSettings& settings) {
  TensorList statics;
  CategoryScope category(MemoryCategory::parameter);
  for (const auto& p : model.parameters) {
    // A weight the file did not hold: a dry run needs its shape alone; a real run makes it as
    // torch.nn would (the load summary says so), the same at every run of the seed.
    Tensor t;
    if (p.made_at_run && !settings.dry_run) {
      Generator made(parameter_seed(settings.seed, p.name));
      t = make_parameter(*p.made_at_run, p.initial.shape(), made);
      if (t.dtype() != p.initial.dtype()) t = cast_raw(t, p.initial.dtype());
    } else {
      t = contiguous_copy(p.initial);
    }
    t = in_param_dtype(std::move(t), settings.param_dtype);
    if (p.requires_grad && !p.is_buffer && is_floating(t.dtype())) t.set_requires_grad(true);
    tag(t, p.name);
    statics.push_back(t);
  }
  for (const auto& [name, c] : model.constants) {
    Tensor t = contiguous_copy(c);
    tag(t, name);
    statics.push_back(t);
  }
  return statics;
}

TensorList make_inputs(const Model& model, const RunSettings& settings, std::int64_t batch) {
  CategoryScope category(MemoryCategory::input);
  Generator inputs_gen(stream_seed(settings.seed, Stream::inputs));
  Generator targets_gen(stream_seed(settings.seed, Stream::targets));
  if (!settings.inputs.empty() && settings.inputs.size() != model.inputs.size())
    throw std::invalid_argument("Runner: " + std::to_string(settings.inputs.size()) +
                                " explicit inputs given, " + model.source + " takes " +
                                std::to_string(model.inputs.size()));
  TensorList out;
  for (std::size_t i = 0; i < model.inputs.size(); ++i) {
    const InputInfo& in = model.inputs[i];
    const Shape shape = resolve_input_shape(in, batch);
    Tensor t;
    if (!settings.inputs.empty()) {
      const Tensor& given = settings.inputs[i];
      if (!given.defined() || given.dtype() != in.dtype)
        throw std::invalid_argument("Runner: explicit input '" + in.name + "' must be a " +
                                    dtype_name(in.dtype) + " tensor");
      t = contiguous_copy(given);
    } else if (in.classes > 0) {
      // A target's class indices, or token ids.
      t = class_indices(shape, in.classes, in.is_target ? targets_gen : inputs_gen);
    } else if (in.arange) {
      t = arange_indices(shape);
    } else if (in.dtype == DType::b8) {
      // A mask input (a key padding mask): nothing masked, unless the run is given one.
      t = Tensor::zeros(shape, DType::b8);
    } else if (in.dtype != DType::f32) {
      throw std::invalid_argument("Runner: cannot draw input '" + in.name + "' of type " +
                                  dtype_name(in.dtype) + "; pass it in RunSettings::inputs");
    } else {
      t = normal_tensor(shape, 0.0, 1.0, in.is_target ? targets_gen : inputs_gen);
    }
    if (!in.is_target) t = in_param_dtype(t, settings.param_dtype);
    const bool rg = in.is_target ? false : settings.input_requires_grad.value_or(in.requires_grad);
    if (rg && is_floating(t.dtype())) t.set_requires_grad(true);
    tag(t, in.name);
    out.push_back(t);
  }
  return out;
}

// The loss of the run; under autocast the outputs summed as float32 (`out.float().sum()`, as
// PyTorch's AMP recipes and the GPU oracle compute it: a bfloat16 sum of a large output loses
// its digits), which the model's own loss ops get from their fp32 autocast rule.
Tensor make_loss(const Model& model, LossKind kind, const TensorList& given,
                 const Tensor& model_loss, bool amp) {
  NodeScope node("loss");
  if (kind == LossKind::model) {
    if (!model_loss.defined())
      throw std::invalid_argument(model.source + ": the model computes no loss of its own");
    return model_loss;
  }
  TensorList outputs = given;
  if (amp)
    for (Tensor& o : outputs)
      if (is_reduced_floating(o.dtype())) o = cast(o, DType::f32);
  if (outputs.size() == 1) return kind == LossKind::sum ? sum(outputs[0]) : mean(outputs[0]);
  Tensor total;
  std::int64_t count = 0;
  for (const auto& o : outputs) {
    total = total.defined() ? add(total, sum(o)) : sum(o);
    count += o.numel();
  }
  return kind == LossKind::sum ? total : div(total, static_cast<double>(count));
}

}  // namespace

// The last few batches run, each with its compiled model (guarded: distinct threads may run
// one Runner's configurations, as the app's pins and lesson baselines do).
struct Runner::Rebatched {
  std::mutex mutex;
  std::deque<std::pair<std::int64_t, std::shared_ptr<const Runner>>> recent;
};

namespace {

// glibc keeps small freed blocks in "fast bins" and merges all of them into its free lists
// whenever a larger block is asked for or freed (malloc_consolidate). A run allocates a few small
// objects per op (the autograd node, its saved-tensor records, a label) between the trace's
// growing vectors, and that merging was 10-17% of HeavyModel's run under perf. Without fast
// bins, the thread cache and the small bins serve the same requests: 6.0-6.6 against 7.1-8.0 us
// per op execution for sin(x) + a, one thread. Process-wide, set once by the first Runner.
void turn_off_fast_bins() {
#ifdef __GLIBC__
  static const bool once = (mallopt(M_MXFAST, 0), true);
  (void)once;
#endif
}

}  // namespace

Runner::Runner(std::shared_ptr<const Model> model)
    : model_(std::move(model)),
      compiled_(std::make_shared<CompiledModel>(*model_)),
      rebatched_(std::make_shared<Rebatched>()) {
  turn_off_fast_bins();
}

std::shared_ptr<const Runner> Runner::at_batch(std::int64_t batch) const {
  {
    std::lock_guard<std::mutex> lock(rebatched_->mutex);
    for (const auto& [b, runner] : rebatched_->recent)
      if (b == batch) return runner;
  }
  auto runner = std::make_shared<const Runner>(model_->at_batch(batch));
  std::lock_guard<std::mutex> lock(rebatched_->mutex);
  rebatched_->recent.emplace_front(batch, runner);
  if (rebatched_->recent.size() > 3) rebatched_->recent.pop_back();
  return runner;
}

namespace {

// The ledger of a run: the caller's, or a fresh one, with the cap and the injected fault of a
// real run (a dry run allocates nothing, so neither applies).
std::shared_ptr<MemoryLedger> run_ledger(const RunRequest& request) {
  const RunSettings& settings = request.settings;
  auto ledger = request.hooks.ledger ? request.hooks.ledger : std::make_shared<MemoryLedger>();
  if (settings.max_memory > 0 && !settings.dry_run) ledger->set_cap(settings.max_memory);
  if (request.hooks.fail_allocation_at > 0 && !settings.dry_run)
    ledger->fail_allocation_at(request.hooks.fail_allocation_at);
  return ledger;
}

void check_batch(const Model& model, std::int64_t batch) {
  if (model.scenario.batch_fixed && batch != model.scenario.batch)
    throw std::invalid_argument(model.source +
                                ": this model's shapes were fixed at export "
                                "with batch " +
                                std::to_string(model.scenario.batch) +
                                "; it cannot run with batch " + std::to_string(batch) +
                                " (export it with dynamic_axes={\"x\": {0: \"batch\"}} for "
                                "any batch)");
}

// What the run leaves behind: parameters' and inputs' gradients, buffers' values.
void collect_results(const Model& model, const TensorList& statics, const TensorList& inputs,
                     RunResult& result) {
  for (std::size_t i = 0; i < model.parameters.size(); ++i) {
    const Tensor g = statics[i].grad();
    if (g.defined()) result.gradients[model.parameters[i].name] = g;
  }
  for (std::size_t i = 0; i < model.parameters.size(); ++i)
    if (model.parameters[i].is_buffer) result.buffers[model.parameters[i].name] = statics[i];
  for (std::size_t i = 0; i < model.inputs.size(); ++i) {
    const Tensor g = inputs[i].grad();
    if (g.defined()) result.input_gradients[model.inputs[i].name] = g;
  }
}

// The optimizer of a training step, its state made now (before the inputs and the forward:
// live from the start, as in every step after the first), over the parameters that train.
std::optional<Optimizer> make_optimizer(const Model& model, const RunSettings& settings,
                                        const TensorList& statics) {
  if (settings.optimizer.kind == OptimizerKind::none) return std::nullopt;
  if (!settings.backward)
    throw std::invalid_argument(std::string("Runner: the optimizer (") +
                                optimizer_name(settings.optimizer.kind) +
                                ") steps on gradients: a run without backward has none");
  std::vector<TrainableParameter> trainable;
  for (std::size_t i = 0; i < model.parameters.size(); ++i)
    if (statics[i].requires_grad()) trainable.push_back({model.parameters[i].name, statics[i]});
  return std::optional<Optimizer>(std::in_place, settings.optimizer,
                                  default_step_implementation(settings.device),
                                  std::move(trainable));
}

void add_step_costs(const Optimizer& optimizer, std::unordered_map<std::string, OpCost>& costs) {
  for (auto& [node, cost] : optimizer.step_costs()) costs[node] = cost;
}

// The run's mixed precision: autocast's state for the forward, or none. PyTorch 1.13's CPU
// autocast knows bfloat16 only: asked for float16 it warns and disables itself (and a
// GradScaler without CUDA does the same), so a cpu run with --amp fp16 is a float32 run, saying
// so.
std::optional<AutocastState> autocast_of(const RunSettings& settings) {
  if (settings.amp == AmpMode::off) return std::nullopt;
  const DType lower = settings.amp == AmpMode::bf16 ? DType::bf16 : DType::f16;
  if (settings.device == Device::cpu && lower == DType::f16) {
    warn(
        "In CPU autocast, but the target dtype is not supported. Disabling autocast. CPU "
        "Autocast only supports dtype of torch.bfloat16 currently. (PyTorch 1.13: --amp fp16 on "
        "the cpu runs in float32; use --amp bf16, or a dry run for --device cuda)");
    if (settings.optimizer.kind != OptimizerKind::none)
      warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.");
    return std::nullopt;
  }
  return AutocastState{true, lower, settings.device};
}

// The optimizer's step after backward (through the gradient scaler with float16): what it
// leaves is the run's parameters and state.
void run_optimizer_step(Optimizer& optimizer, GradScaler* scaler, RunResult& result) {
  {
    PhaseScope phase(Phase::optimizer);
    const auto t0 = Clock::now();
    try {
      if (scaler)
        scaler->step_and_update(optimizer);
      else
        optimizer.step();
    } catch (const std::invalid_argument& e) {
      // Parameters in a reduced dtype (--param-dtype bf16): the op without a kernel is the
      // optimizer's, on the bf16 parameters, not autocast's. FSDP2 steps on float32 shards,
      // which the per-rank figures model; a dry run shows them.
      const DType dtype =
          optimizer.parameters().empty() ? DType::f32 : optimizer.parameters()[0].tensor.dtype();
      if (!is_reduced_floating(dtype)) throw;
      throw std::invalid_argument(
          std::string("the optimizer's step on the ") + dtype_name(dtype) +
          " parameters of --param-dtype: " + e.what() +
          ". FSDP2 steps on the float32 shards, which this engine models per rank: run it dry "
          "(--dry-run), or without --optimizer for a real " +
          dtype_name(dtype) + " forward and backward");
    }
    result.times.optimizer_ms = ms_since(t0);
  }
  for (const auto& p : optimizer.parameters()) result.parameters[p.name] = p.tensor;
  result.optimizer_state = optimizer.state();
}

// A dry run computed nothing, so measured nothing: the phases take their steps' estimates.
void apply_estimated_times(RunResult& result,
                           const std::unordered_map<std::string, OpCost>& node_costs) {
  const auto estimates = estimate_step_durations(result.trace, node_costs, machine_rates());
  result.trace.set_estimated_durations(estimates);
  result.times = PhaseTimes{};
  for (std::int64_t k = 0; k < result.trace.step_count(); ++k) {
    const double ms = static_cast<double>(estimates[static_cast<std::size_t>(k)]) / 1e6;
    const Phase p = result.trace.step_phase(k);
    (p == Phase::forward     ? result.times.forward_ms
     : p == Phase::optimizer ? result.times.optimizer_ms
                             : result.times.backward_ms) += ms;
    if (p == Phase::recompute) result.times.recompute_ms += ms;
    result.times.total_ms += ms;
  }
}

// The offload's figures with its copies timed at the link's bandwidth: an estimate whatever the
// run (the copies PyTorch makes are asynchronous and may overlap compute; none is measured here).
RunResult::Offload offload_figures(const OffloadFigures& f, double gb_per_s) {
  if (!(gb_per_s > 0)) throw std::invalid_argument("--pcie: the bandwidth must be positive");
  const double bytes = static_cast<double>(f.to_host_bytes + f.to_device_bytes);
  return {f.host_peak_bytes, f.to_host_bytes, f.to_device_bytes, bytes / (gb_per_s * 1e9) * 1e3,
          gb_per_s};
}

// Copies of `ts` in a ledger of their own, which the run's trace does not see: values the run
// hands back without holding them (a dry run's are meta tensors, shapes only).
TensorList held_outside(const TensorList& ts) {
  LedgerScope own(std::make_shared<MemoryLedger>());
  TensorList out;
  for (const Tensor& t : ts) out.push_back(t.defined() ? contiguous_copy(t) : t);
  return out;
}

// The forward phase: the model's outputs, then its loss (none for an inference run whose
// outputs are integers), under `autocast` when the run has mixed precision; the values the
// executor returns die with it, before backward. Returns what backward starts from: the loss,
// or the loss the gradient scaler scaled.
Tensor run_forward(Executor& executor, const Model& model, const CompiledModel& compiled,
                   const RunSettings& settings, LossKind loss_kind, const TensorList& statics,
                   const TensorList& inputs, const std::optional<AutocastState>& amp,
                   const GradScaler* scaler, RunResult& result) {
  std::vector<int> wanted = compiled.outputs();
  if (compiled.loss_id() >= 0) wanted.push_back(compiled.loss_id());
  TensorList values;  // declared first: freed after the forward phase has ended
  PhaseScope phase(Phase::forward);
  const auto tf = Clock::now();
  {
    std::optional<AutocastScope> autocast;  // `with torch.autocast(...)`: forward and loss
    if (amp) autocast.emplace(*amp);
    values = executor.forward(statics, inputs, wanted);
    result.outputs.assign(values.begin(),
                          values.begin() + static_cast<std::ptrdiff_t>(compiled.outputs().size()));
    const bool floating = std::all_of(result.outputs.begin(), result.outputs.end(),
                                      [](const Tensor& t) { return is_floating(t.dtype()); });
    if (settings.backward || floating || loss_kind == LossKind::model)
      result.loss = make_loss(model, loss_kind, result.outputs,
                              compiled.loss_id() >= 0 ? values.back() : Tensor(), amp.has_value());
  }
  if (result.loss.defined()) check_anomaly({result.loss}, "loss", "");
  // A training step's code (`loss = criterion(model(x), y)`) keeps no reference to the outputs:
  // they live on only where autograd saved them. The result gets copies the run does not hold.
  if (settings.optimizer.kind != OptimizerKind::none) result.outputs = held_outside(result.outputs);
  // scaler.scale(loss), outside autocast.
  Tensor root = scaler && result.loss.defined() ? scaler->scale(result.loss) : result.loss;
  result.times.forward_ms = ms_since(tf);
  return root;
}

void run_backward(const RunSettings& settings, Tensor root, RunResult& result) {
  PhaseScope phase(Phase::backward);
  const auto tb = Clock::now();
  root.backward();
  root = Tensor();
  // Nor the loss, once backward has consumed it (it is a local of the step's function).
  if (settings.optimizer.kind != OptimizerKind::none) result.loss = held_outside({result.loss})[0];
  result.times.backward_ms = ms_since(tb);
}

// A real run's recompute time is its recompute steps' measured durations.
void apply_measured_times(RunResult& result, Clock::time_point t0) {
  for (std::int64_t k = 0; k < result.trace.step_count(); ++k) {
    const TraceStep& step = result.trace.step(k);
    if (step.phase == Phase::recompute) result.times.recompute_ms += step.duration_ns / 1e6;
  }
  result.times.total_ms = ms_since(t0);
}

}  // namespace

RunResult Runner::run(const RunRequest& request, const std::atomic<bool>* cancel) const {
  const Model& model = *model_;
  const RunSettings& settings = request.settings;
  RunResult result;
  auto ledger = run_ledger(request);
  result.dry_run = settings.dry_run;
  std::unordered_map<std::string, OpCost> node_costs;
  auto context = std::make_shared<ExecutionContext>(ledger, compiled_->labels());
  context->set_detect_anomaly(request.hooks.detect_anomaly && !settings.dry_run);
  Recorder recorder(*context);
  const auto t0 = Clock::now();
  if (const std::int64_t b = settings.batch; b > 0 && b != model.scenario.batch && model.at_batch) {
    // Captures its own ledger and trace: the rebatched model is a model of its own.
    try {
      return at_batch(b)->run(request, cancel);
    } catch (const std::exception& e) {
      result.set_status(RunStatus::failed, e.what());
      result.trace = recorder.finish();
      return result;
    }
  }
  // A dry run makes every tensor of the run on the meta device, parameters and inputs first
  // (after the rebatching above: loading a model computes real values).
  std::optional<DeviceScope> device;
  try {
    // The one place the device is chosen: a dry run is on meta with the memory semantics of
    // settings.device; a real run on settings.device itself (cuda without a GPU
    // fails here, saying why).
    if (settings.dry_run)
      device.emplace(Device::meta, settings.device);
    else if (settings.device != Device::cpu)
      device.emplace(settings.device);
    const std::int64_t batch = settings.batch > 0 ? settings.batch : model.scenario.batch;
    check_batch(model, batch);
    if (request.plan.segments < 0)
      throw std::invalid_argument("Runner: segments must not be negative");
    ExecutionScope execution(context);
    // The device's own buffers (cuBLAS's workspaces on CUDA), live from the run's start as in
    // every training step after the first; none on the CPU.
    const auto workspaces = hold_persistent_workspaces();
    Generator dropout_gen(stream_seed(settings.seed, Stream::dropout));
    GeneratorScope generator_scope(dropout_gen);
    GradModeGuard grad_on(true);
    ThreadsGuard threads(settings.threads);
    const LossKind loss_kind = settings.loss.value_or(model.scenario.loss);
    Executor executor(model, *compiled_, request, cancel);
    if (settings.dry_run) executor.collect_costs(&node_costs);
    const TensorList statics = make_statics(model, settings);
    std::optional<Optimizer> optimizer = make_optimizer(model, settings, statics);
    if (optimizer && settings.dry_run) add_step_costs(*optimizer, node_costs);
    const std::optional<AutocastState> amp = autocast_of(settings);
    std::optional<GradScaler> scaler;
    if (amp && amp->lower == DType::f16 && optimizer) scaler.emplace();
    const TensorList inputs = make_inputs(model, settings, batch);

    Tensor root = run_forward(executor, model, *compiled_, settings, loss_kind, statics, inputs,
                              amp, scaler ? &*scaler : nullptr, result);
    if (cancel && cancel->load()) throw RunCancelled();
    if (settings.backward) run_backward(settings, std::move(root), result);
    root = Tensor();
    if (cancel && cancel->load()) throw RunCancelled();
    if (optimizer) run_optimizer_step(*optimizer, scaler ? &*scaler : nullptr, result);
    if (const HostOffload* offload = executor.offload())
      result.offload = offload_figures(offload->figures(), settings.pcie_gb_per_s);
    collect_results(model, statics, inputs, result);
    result.set_status(RunStatus::ok);
  } catch (const RunCancelled& e) {
    result.set_status(RunStatus::cancelled, e.what());
  } catch (const std::exception& e) {
    result.set_status(RunStatus::failed, e.what());
    context->message(Severity::error, e.what());
  }
  result.trace = recorder.finish();
  if (settings.dry_run) {
    apply_estimated_times(result, node_costs);
    result.node_costs = std::move(node_costs);
  } else {
    apply_measured_times(result, t0);
  }
  if (memory_semantics(settings.device).caching_allocator)
    result.reserved = simulate_reserved(result.trace);
  return result;
}

}  // namespace ckpt
