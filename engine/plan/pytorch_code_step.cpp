// The training step around a model's forward in the PyTorch code: the optimizer, torch.autocast
// and the gradient scaler the run assumed (RunSettings::optimizer and ::amp), written the way
// PyTorch's AMP recipe writes them.
#include <sstream>

#include "engine/plan/python_expr.hpp"
#include "engine/plan/pytorch_code_detail.hpp"

namespace ckpt::pytorch_code_detail {

namespace {

const char* autocast_device(const RunSettings& s) {
  return s.device == Device::cuda ? "cuda" : "cpu";
}

}  // namespace

bool scales_gradients(const RunSettings& s) {
  return s.amp == AmpMode::fp16 && s.device == Device::cuda &&
         s.optimizer.kind != OptimizerKind::none;
}

std::string training_step_setup(const RunSettings& s) {
  std::ostringstream out;
  if (s.optimizer.kind != OptimizerKind::none)
    out << "# Checkpoint Lab's figures are a steady-state step: the optimizer's state exists from\n"
           "# the start (it is made by the first step; measure from the second).\n"
        << "optimizer = make_optimizer(model)\n";
  if (scales_gradients(s)) out << "scaler = torch.cuda.amp.GradScaler()\n";
  return out.str();
}

std::string training_step(const RunSettings& s, const std::string& forward_and_loss,
                          const std::string& outputs) {
  std::ostringstream out;
  if (s.amp != AmpMode::off) {
    if (s.amp == AmpMode::fp16 && s.device != Device::cuda)
      out << "# PyTorch 1.13's CPU autocast knows bfloat16 only: asked for float16 it warns and\n"
             "# runs float32, as Checkpoint Lab's run did.\n";
    out << "with torch.autocast(\"" << autocast_device(s) << "\", dtype=torch."
        << (s.amp == AmpMode::bf16 ? "bfloat16" : "float16") << "):\n"
        << indent(forward_and_loss, 4);
  } else {
    out << forward_and_loss;
  }
  if (s.optimizer.kind != OptimizerKind::none)
    out << "del " << outputs << "  # a training step keeps no reference to the outputs\n";
  if (scales_gradients(s)) {
    out << "scaler.scale(loss).backward()\nscaler.step(optimizer)\nscaler.update()\n"
        << "optimizer.zero_grad(set_to_none=True)\n";
  } else {
    out << "loss.backward()\n";
    if (s.optimizer.kind != OptimizerKind::none)
      out << "optimizer.step()\noptimizer.zero_grad(set_to_none=True)\n";
  }
  return out.str();
}

}  // namespace ckpt::pytorch_code_detail
