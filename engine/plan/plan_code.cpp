#include "engine/plan/plan_code.hpp"

#include <set>
#include <sstream>

#include "engine/plan/pytorch_code.hpp"

namespace ckpt {

namespace {

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

const char* kRangeHelper = R"(def checkpoint_range(model, first, last, **kwargs):
    """Runs the sibling submodules first..last as one checkpointed segment, as a segment of
    checkpoint_sequential: the first runs them all under checkpoint(), the others pass their
    input on. Valid where their parent calls them one after the other on one tensor."""
    parent_name, _, first_name = first.rpartition(".")
    parent = model.get_submodule(parent_name) if parent_name else model
    names = [name for name, _ in parent.named_children()]
    chain = [getattr(parent, name)
             for name in names[names.index(first_name):names.index(last.rpartition(".")[2]) + 1]]
    forwards = [m.forward for m in chain]

    def segment(x):
        for forward in forwards:
            x = forward(x)
        return x

    chain[0].forward = lambda x: checkpoint(segment, x, **kwargs)
    for m in chain[1:]:
        m.forward = lambda x: x
)";

// Names in the user's model: a module definition (all its calls), or an error text.
std::string user_name(const Model& m, const std::string& path, std::string* problem) {
  const Module* mod = m.find_module(path);
  if (!mod) {
    *problem = "'" + path + "' is an op, not a module: no name to wrap in PyTorch";
    return path;
  }
  if (m.instances_of(mod->definition).size() > 1)
    *problem = "'" + mod->definition + "' is called " +
               std::to_string(m.instances_of(mod->definition).size()) +
               " times: wrapping it by name checkpoints every call, the plan only '" + path + "'";
  return mod->definition;
}

std::string apply_code(const Model& m, const RunRequest& c, bool with_imports) {
  std::ostringstream s;
  std::vector<std::string> problems;
  if (with_imports)
    s << "import functools\n\nimport torch\nfrom torch.utils.checkpoint import checkpoint\n";
  s << "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (\n"
    << "    CheckpointImpl, apply_activation_checkpointing, checkpoint_wrapper)\n\n"
    << "MODULES = [";
  std::set<std::string> names;
  for (const auto& path : c.plan.modules) {
    std::string problem;
    names.insert(user_name(m, path, &problem));
    if (!problem.empty()) problems.push_back(problem);
  }
  for (const auto& n : names) s << "\n    " << quote(n) << ",";
  s << (names.empty() ? "]\n" : "\n]\n") << "RANGES = [";
  for (const auto& [a, b] : c.plan.ranges) {
    std::string pa, pb;
    s << "\n    (" << quote(user_name(m, a, &pa)) << ", " << quote(user_name(m, b, &pb)) << "),";
    for (auto* p : {&pa, &pb})
      if (!p->empty()) problems.push_back(*p);
  }
  s << (c.plan.ranges.empty() ? "]\n" : "\n]\n");
  for (const auto& p : problems) s << "# NOTE: " << p << "\n";
  const std::string impl = c.settings.use_reentrant ? "REENTRANT" : "NO_REENTRANT";
  s << "\n\n"
    << kRangeHelper << "\n\n"
    << "def apply_plan(model):\n"
    << "    \"\"\"Checkpoints the plan's modules and ranges of `model` in place.\"\"\"\n"
    << "    targets = {id(model.get_submodule(name)) for name in MODULES}\n"
    << "    wrapper = functools.partial(checkpoint_wrapper, checkpoint_impl=CheckpointImpl." << impl
    << ")\n"
    << "    try:\n"
    << "        apply_activation_checkpointing(\n"
    << "            model, checkpoint_wrapper_fn=wrapper,\n"
    << "            check_fn=lambda module: id(module) in targets)\n"
    << "    except (ImportError, ValueError):\n"
    << "        # It imports FSDP, which torch 1.13 cannot import on Python 3.11: wrap the same\n"
    << "        # modules by hand, innermost first, as it would.\n"
    << "        for name in sorted(MODULES, key=lambda n: -n.count(\".\")):\n"
    << "            parent_name, _, child = name.rpartition(\".\")\n"
    << "            parent = model.get_submodule(parent_name) if parent_name else model\n"
    << "            setattr(parent, child, wrapper(getattr(parent, child)))\n"
    << "    for first, last in RANGES:\n"
    << "        checkpoint_range(model, first, last, use_reentrant="
    << (c.settings.use_reentrant ? "True" : "False")
    << (c.settings.preserve_rng_state ? "" : ", preserve_rng_state=False") << ")\n"
    << "    return model\n";
  return s.str();
}

}  // namespace

std::string plan_pytorch_code(const Model& model, const RunRequest& request) {
  if (model.format == "onnx") {
    std::ostringstream s;
    s << "# Checkpoint plan for " << model.source << ", exported to ONNX from a PyTorch model.\n"
      << "# Apply it to the nn.Module you exported: apply_plan(model). The names are that\n"
      << "# model's submodules; ranges assume their parent calls them in a chain.\n";
    return s.str() + apply_code(model, request, true);
  }
  if (request.plan.ranges.empty()) return pytorch_code(model, request);
  // The code view writes the modules' checkpoint() calls; the ranges wrap its model by name.
  std::string code = pytorch_code(model, request);
  const std::string anchor = "    model.train()\n";
  const auto at = code.find(anchor);
  const auto main_at = code.find("if __name__ == \"__main__\":");
  if (at == std::string::npos || main_at == std::string::npos) return code;
  std::string ranges;
  for (const auto& [a, b] : request.plan.ranges)
    ranges += "    checkpoint_range(model, " + quote(a) + ", " + quote(b) +
              ", use_reentrant=" + (request.settings.use_reentrant ? "True" : "False") + ")\n";
  code.insert(at, ranges);
  code.insert(main_at, std::string(kRangeHelper) + "\n\n");
  return code;
}

}  // namespace ckpt
