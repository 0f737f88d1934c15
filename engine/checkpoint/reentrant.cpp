// The reentrant variant: PyTorch 1.13's CheckpointFunction. The forward runs under no-grad and
// keeps only the inputs; the backward recomputes the whole segment with grad enabled and runs a
// backward of its own through it (hence "reentrant").

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "engine/autograd/engine.hpp"
#include "engine/autograd/execution_context.hpp"
#include "engine/autograd/grad_mode.hpp"
#include "engine/checkpoint/segment.hpp"
#include "engine/ops/autocast.hpp"

namespace ckpt::detail {

namespace {

class CheckpointFunctionBackward final : public Node {
 public:
  explicit CheckpointFunctionBackward(SegmentFunction fn)
      : Node("CheckpointFunctionBackward"), fn_(std::move(fn)) {}

  // Its recomputation and inner backward are steps of their own.
  bool opens_step() const override { return false; }
  const std::vector<SavedVariable>* saved_variables() const override { return &saved_; }

  void save_inputs(const TensorList& inputs) {
    for (const auto& t : inputs) {
      saved_.emplace_back(t, t.grad_fn());
      requires_grad_.push_back(t.requires_grad());
    }
  }
  void set_rng(Tensor stash) { rng_ = std::move(stash); }
  // torch.autocast's state at the forward (ctx.cpu_autocast_kwargs), restored to recompute.
  void set_autocast(AutocastState state) { autocast_ = state; }
  void set_outputs(std::vector<std::size_t> positions) { output_positions_ = std::move(positions); }
  SegmentRecord& record() { return record_; }

  TensorList apply(TensorList&& grads) override {
    const GraphTaskInfo* task = current_graph_task();
    if (task && task->is_grad_call)
      throw std::runtime_error(
          "Checkpointing is not compatible with .grad() or when an `inputs` parameter is passed "
          "to .backward(). Please use .backward() and do not pass its `inputs` argument.");
    // detach_variable(): fresh leaves that require grad as the inputs did.
    TensorList detached;
    detached.reserve(saved_.size());
    for (std::size_t i = 0; i < saved_.size(); ++i) {
      Tensor t = saved_[i].unpack(*this).detach();
      if (requires_grad_[i]) t.set_requires_grad(true);
      detached.push_back(std::move(t));
    }
    TensorList outputs;
    {
      RngFork fork(rng_);
      GradModeGuard enable_grad(true);
      AutocastScope autocast(autocast_);
      PhaseScope recompute(Phase::recompute);
      SegmentMark mark(true, record_.name);
      RecomputeObserver observer(record_);
      OpObserverScope observe(&observer);
      outputs = fn_(detached);
      observer.report();
    }
    TensorList with_grad, grad_args;
    for (std::size_t j = 0; j < output_positions_.size(); ++j) {
      const std::size_t i = output_positions_[j];
      if (i < outputs.size() && outputs[i].defined() && outputs[i].requires_grad()) {
        with_grad.push_back(outputs[i]);
        grad_args.push_back(j < grads.size() ? grads[j] : Tensor());
      }
    }
    if (with_grad.empty())
      throw std::runtime_error(
          "none of output has requires_grad=True, this checkpoint() is not necessary");
    outputs.clear();
    grads.clear();
    backward(with_grad, grad_args);
    with_grad.clear();
    grad_args.clear();
    TensorList result;
    result.reserve(detached.size());
    for (const auto& t : detached) result.push_back(t.grad());
    return result;
  }

  void release_saved_tensors() override {
    for (auto& s : saved_) s.release();
    rng_ = Tensor();
    record_.checksums.clear();
    record_.checksums.shrink_to_fit();
    record_.kept.clear();
  }

 private:
  SegmentFunction fn_;
  std::vector<SavedVariable> saved_;
  std::vector<bool> requires_grad_;
  std::vector<std::size_t> output_positions_;
  Tensor rng_;
  AutocastState autocast_;
  SegmentRecord record_;
};

}  // namespace

TensorList checkpoint_reentrant(const SegmentFunction& fn, const TensorList& inputs,
                                const CheckpointOptions& options) {
  // check_backward_validity(): a warning only; what follows depends on the rest of the model.
  if (!any_requires_grad(inputs))
    warn("None of the inputs have requires_grad=True. Gradients will be None");
  const std::string name = segment_name(options);
  SegmentMark mark(false, name);
  const bool record = GradMode::is_enabled() && any_requires_grad(inputs);
  // The node (PyTorch's ctx) exists for the whole call; it outlives it only when recorded.
  auto node = std::make_shared<CheckpointFunctionBackward>(fn);
  SegmentRecord& rec = node->record();
  rec.name = name;
  rec.check = options.determinism_check;
  rec.save_ops = options.save_ops;
  rec.save_every = std::max(1, options.save_every);
  if (options.preserve_rng_state) node->set_rng(stash_rng_state(name));
  node->set_autocast(autocast_state());
  if (record) {
    node->save_inputs(inputs);
    mark_checkpoint_inputs(inputs);
  }
  TensorList outputs;
  {
    NoGradGuard no_grad;
    ForwardObserver observer(rec);
    OpObserverScope observe(&observer);
    outputs = fn(inputs);
  }
  if (!record) return outputs;
  // Fresh handles on the outputs' storage (an output may be an input itself), wired to the node.
  TensorList wired;
  std::vector<std::size_t> positions;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].defined() || !is_floating(outputs[i].dtype())) continue;
    outputs[i] = outputs[i].detach();
    wired.push_back(outputs[i]);
    positions.push_back(i);
  }
  connect(node, inputs, wired);
  node->set_outputs(std::move(positions));
  return outputs;
}

}  // namespace ckpt::detail
