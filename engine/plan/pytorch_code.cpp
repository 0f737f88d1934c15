#include "engine/plan/pytorch_code.hpp"

#include <set>
#include <sstream>

#include "engine/plan/plan_code.hpp"
#include "engine/plan/policy_code.hpp"
#include "engine/plan/python_expr.hpp"
#include "engine/plan/pytorch_code_detail.hpp"

// The text helpers the writer shares, the ONNX helper script and the public entry point; the
// native model's writer is in pytorch_code_{analysis,forward,classes}.cpp.

namespace ckpt::pytorch_code_detail {

bool is_identifier(const std::string& s) {
  return !s.empty() && py::ident(s) == s;
}

std::string attr_ref(const std::string& attr) {
  return is_identifier(attr) ? "self." + attr : "getattr(self, " + py::quote(attr) + ")";
}

std::string last_component(const std::string& path) {
  const auto dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}

std::string owner_of(const std::string& param) {
  const auto dot = param.rfind('.');
  return dot == std::string::npos ? std::string() : param.substr(0, dot);
}

std::string checkpoint_kwargs(const RunRequest& c, const std::string& region) {
  std::string s = std::string(", use_reentrant=") + (exported_reentrant(c) ? "True" : "False");
  if (!c.settings.preserve_rng_state) s += ", preserve_rng_state=False";
  s += policy_kwargs(c.plan.policy_for(region));
  return s;
}

std::string indent(const std::string& text, int n) {
  std::string pad(static_cast<std::size_t>(n), ' '), out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out += (line.empty() ? "" : pad) + line + "\n";
  return out;
}

namespace {

// The training step the run assumed, around the user's own call and loss (an ONNX file has
// neither): nothing without an optimizer or autocast.
std::string onnx_training_step(const RunSettings& s) {
  if (s.optimizer.kind == OptimizerKind::none && s.amp == AmpMode::off) return {};
  const std::string loss = std::string("loss = out") + (s.amp != AmpMode::off ? ".float()" : "") +
                           ".sum()  # your loss\n";
  return "\n# The training step Checkpoint Lab ran, around your model's call and loss:\n" +
         training_step_setup(s) + training_step(s, "out = model(x)\n" + loss, "out");
}

}  // namespace

std::string onnx_code(const Model& m, const RunRequest& c) {
  std::ostringstream s;
  const bool captured = m.format == "capture";
  s << "# Checkpointing for " << m.source
    << (captured ? ", captured from a PyTorch model by ckptlab_capture.\n"
                 : ", exported to ONNX from a PyTorch model.\n")
    << "# Its Python source is not in the file: apply this to the PyTorch model you "
    << (captured ? "captured.\n# " : "exported it\n# from. ")
    << "The names are that model's submodules ("
    << (captured ? "state_dict paths" : "ONNX node scopes") << "), so get_submodule finds\n"
    << "# them. Memory figures in Checkpoint Lab are those of the "
    << (captured ? "captured ops" : "exported graph") << ".\n"
    << "import torch\nfrom torch.utils.checkpoint import checkpoint, checkpoint_sequential\n\n\n"
    << "def use_checkpoint(model, names, **kwargs):\n"
    << "    \"\"\"Makes each named submodule run under checkpoint() when the model calls "
       "it.\"\"\"\n"
    << "    for name in names:\n"
    << "        module = model.get_submodule(name)\n"
    << "        def forward(*args, _forward=module.forward):\n"
    << "            # Lists as tuples: a caller appending to the list it passed (torchvision's\n"
    << "            # DenseNet blocks) would hand the recomputation a longer list.\n"
    << "            args = [tuple(a) if isinstance(a, list) else a for a in args]\n"
    << "            return checkpoint(_forward, *args, **kwargs)\n"
    << "        module.forward = forward\n\n\n";
  if (c.plan.modules.empty() && c.plan.segments == 0) {
    s << "# No module is checkpointed in this configuration.\n";
    return s.str() + onnx_training_step(c.settings);
  }
  std::set<std::string> defs;
  for (const auto& path : c.plan.modules) {
    const Module* mod = m.find_module(path);
    defs.insert(mod ? mod->definition : path);
  }
  if (!defs.empty()) {
    s << "use_checkpoint(model, [\n";
    for (const auto& d : defs) s << "    " << py::quote(d) << ",\n";
    s << "], use_reentrant=" << (c.settings.use_reentrant ? "True" : "False")
      << (c.settings.preserve_rng_state ? "" : ", preserve_rng_state=False") << ")\n";
  }
  if (c.plan.segments > 0) {
    s << "\n# checkpoint_sequential over the top-level modules (valid when the model's forward\n"
      << "# just chains them); always the reentrant variant in PyTorch 1.13.\n"
      << "children = list(model.children())\n"
      << "model.forward = lambda x: checkpoint_sequential(children, " << c.plan.segments << ", x"
      << (c.settings.preserve_rng_state ? "" : ", preserve_rng_state=False") << ")\n";
  }
  return s.str() + onnx_training_step(c.settings);
}

}  // namespace ckpt::pytorch_code_detail

namespace ckpt {

std::string pytorch_code(const Model& model, const RunRequest& request) {
  // Ranges of an exported model need the plan's code: its segments in the order that nests them
  // as the engine did; so do offloaded modules (apply_plan's offload()).
  // A capture's Python source is the user's own too: the same code as an export's.
  const bool elsewhere = model.format == "onnx" || model.format == "capture";
  if (elsewhere && (!request.plan.ranges.empty() || !request.plan.offload.empty()))
    return plan_pytorch_code(model, request);
  if (elsewhere) return pytorch_code_detail::onnx_code(model, request);
  return pytorch_code_detail::NativeWriter(model, request).write();
}

}  // namespace ckpt
