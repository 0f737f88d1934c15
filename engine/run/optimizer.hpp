#pragma once

// The optimizer's step of a training step, as torch.optim runs it: SGD, SGD with momentum, Adam
// and AdamW with PyTorch's update rules, computed for real on the CPU (checked against
// torch.optim 1.13 by tests/oracle/cases_optim), and allocating what PyTorch's default
// implementation allocates on the device whose memory semantics the run follows:
//   for_loop  PyTorch 1.13 on the CPU (foreach=None means the for-loop, _single_tensor_*): one
//             parameter at a time; Adam's denominator is two temporaries of the parameter's size
//             (sqrt, then the division), the previous parameter's kept until the next one's is
//             made (a Python variable rebound), the last one freed when the step returns.
//   foreach   PyTorch 2.x on CUDA (foreach by default on CUDA tensors, _multi_tensor_*): one
//             kernel over all parameters at a time; Adam's sqrt is one temporary per parameter,
//             all made at once and freed in reverse order when the step returns
//             (docs/reference/gpu-oracle.md, train/tv_resnet50_b32__adamw_bf16.pickle); the
//             step counters are host tensors, in no device's figures.
// The state (momentum buffers; Adam's exp_avg, exp_avg_sq and, on the CPU, step) is allocated
// when the optimizer is made, before the forward, in category optimizer state: a steady-state
// step starts with it live. Its values are those of a fresh optimizer (zeros), so the one step a
// run takes is exactly PyTorch's first: a momentum buffer of zeros times 0.9 plus the gradient
// is the gradient, which PyTorch's first step clones.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/ops/schema/op_schema.hpp"
#include "engine/run/run_request.hpp"

namespace ckpt {

// The hyperparameters of a step: the settings' values, or the kind's defaults (PyTorch's where
// it has one; SGD has no default learning rate in PyTorch, 0.01 here).
struct OptimizerHyper {
  double lr = 0;
  double momentum = 0;                            // SGD
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // Adam, AdamW
  double weight_decay = 0;
};
OptimizerHyper optimizer_hyper(const OptimizerSettings& settings);

enum class StepImplementation : std::uint8_t { for_loop, foreach };
// PyTorch's default implementation for the device whose semantics a run follows.
StepImplementation default_step_implementation(Device device);

struct TrainableParameter {
  std::string name;
  Tensor tensor;  // a leaf that requires grad; its .grad() is read at the step
};

class Optimizer {
 public:
  // Makes the state of each parameter in the current ledger (category optimizer state), named
  // "<parameter>.<state>" in the trace.
  Optimizer(const OptimizerSettings& settings, StepImplementation implementation,
            std::vector<TrainableParameter> parameters);

  // One step over the parameters that have a gradient (a parameter without one is skipped, as
  // PyTorch skips p.grad None), in place; each op execution is a step of the current context.
  void step();

  // The state by parameter name, then state name ("momentum_buffer"; "exp_avg", "exp_avg_sq",
  // "step"), as optimizer.state holds it.
  std::map<std::string, std::map<std::string, Tensor>> state() const;
  const std::vector<TrainableParameter>& parameters() const { return parameters_; }
  // The cost of each step it will open, by the step's node (a parameter's name, or "optimizer"
  // for the foreach kernels, each of which gets the share of one): a dry run's time estimates.
  std::vector<std::pair<std::string, OpCost>> step_costs() const;

 private:
  struct Slot {
    Tensor momentum_buffer;
    Tensor exp_avg, exp_avg_sq;
    // A float32 scalar, as state['step']: in the run's ledger on the for_loop implementation
    // (PyTorch 1.13's CPU tensor), in host memory outside it on the foreach one.
    Tensor step;
  };
  void step_for_loop();
  void step_foreach();
  bool uses_momentum() const { return settings_.kind == OptimizerKind::momentum; }
  bool uses_moments() const {
    return settings_.kind == OptimizerKind::adam || settings_.kind == OptimizerKind::adamw;
  }

  OptimizerSettings settings_;
  OptimizerHyper hyper_;
  StepImplementation implementation_;
  std::vector<TrainableParameter> parameters_;
  std::vector<Slot> slots_;
};

}  // namespace ckpt
