#include "engine/plan/plan_code.hpp"

#include "engine/plan/python_expr.hpp"

#include <algorithm>
#include <set>
#include <sstream>

#include "engine/model/module_range.hpp"
#include "engine/plan/fsdp_code.hpp"
#include "engine/plan/policy_code.hpp"
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

const char* kRangeHelper = R"(def checkpoint_range(model, first, last, checkpointed=(), **kwargs):
    """Runs the sibling submodules first..last as one checkpointed segment, as a segment of
    checkpoint_sequential: the first runs them all under checkpoint(), the others pass their
    input on. Valid where their parent calls them one after the other on one tensor. The
    members named in `checkpointed` run checkpointed inside the segment. A range inside this
    one must be applied first: the segment calls the forwards the members have now."""
    parent_name, _, first_name = first.rpartition(".")
    parent = model.get_submodule(parent_name) if parent_name else model
    names = [name for name, _ in parent.named_children()]
    members = names[names.index(first_name):names.index(last.rpartition(".")[2]) + 1]
    chain = [getattr(parent, name) for name in members]
    forwards = [functools.partial(checkpoint, m.forward, **kwargs) if name in checkpointed
                else m.forward for name, m in zip(members, chain)]

    def segment(x):
        for forward in forwards:
            x = forward(x)
        return x

    chain[0].forward = lambda x: checkpoint(segment, x, **kwargs)
    for m in chain[1:]:
        m.forward = lambda x: x
)";

const char* kWrapperHelper = R"(def checkpointed(module, impl, **checkpoint_kwargs):
    """checkpoint_wrapper(module), called with its list arguments as tuples: a caller that
    appends to the list it passed (torchvision's DenseNet blocks do) would otherwise hand the
    recomputation a longer list than the forward had."""
    wrapped = checkpoint_wrapper(module, checkpoint_impl=impl, **checkpoint_kwargs)
    forward = wrapped.forward
    wrapped.forward = lambda *args, **kwargs: forward(
        *(tuple(a) if isinstance(a, list) else a for a in args), **kwargs)
    return wrapped
)";

const char* kOffloadHelper = R"(def offload(module):
    """Keeps what `module` saves for backward in pinned host memory, copied back to the GPU in
    backward (torch.autograd.graph.save_on_cpu): the same weights and names, another forward."""
    forward = module.forward

    def offloaded_forward(*args, **kwargs):
        with torch.autograd.graph.save_on_cpu(pin_memory=True):
            return forward(*args, **kwargs)

    module.forward = offloaded_forward
    return module
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

// One checkpointed segment of the plan: a module, or a range of siblings.
struct Segment {
  bool range = false;
  std::string first, last;  // the module's path twice for a module
  std::int64_t first_op = 0, end_op = 0;
  bool nested = false;  // a range holds it, or it holds a range
};

// The plan's segments in the order that rebuilds the engine's nesting: innermost first (the
// engine nests by extent, and of equal extents the shorter name outside), so that each outer
// segment wraps inner ones already in place. Applying ranges in list order let an outer range
// wrap an inner one already rewritten: the model PyTorch ran was not the plan (issue 28).
std::vector<Segment> segments_inside_out(const Model& m, const CheckpointPlan& plan) {
  std::vector<Segment> out;
  for (const auto& path : plan.modules) {
    const Module* mod = m.find_module(path);
    if (mod) out.push_back({false, path, path, mod->first_op, mod->end_op, false});
  }
  for (const auto& [a, b] : plan.ranges) {
    try {
      const Module r = make_range(m, a, b);
      out.push_back({true, a, b, r.first_op, r.end_op, false});
    } catch (const std::invalid_argument&) {
      out.push_back({true, a, b, 0, 0, false});  // named in a NOTE by the caller
    }
  }
  for (Segment& s : out)
    for (const Segment& r : out)
      if (r.range && &r != &s) {
        const bool inside = r.first_op <= s.first_op && s.end_op <= r.end_op;
        const bool holds = s.first_op <= r.first_op && r.end_op <= s.end_op;
        s.nested = s.nested || inside || holds;
      }
  std::stable_sort(out.begin(), out.end(), [](const Segment& x, const Segment& y) {
    const auto lx = x.end_op - x.first_op, ly = y.end_op - y.first_op;
    if (lx != ly) return lx < ly;
    return range_label(x.first, x.last).size() > range_label(y.first, y.last).size();
  });
  return out;
}

std::string apply_code(const Model& m, const RunRequest& c, bool with_imports) {
  std::ostringstream s;
  std::vector<std::string> problems;
  auto name = [&](const std::string& path) {
    std::string problem;
    const std::string n = user_name(m, path, &problem);
    if (!problem.empty()) problems.push_back(problem);
    return n;
  };
  if (with_imports)
    s << "import functools\n\nimport torch\nfrom torch.utils.checkpoint import checkpoint\n";
  s << "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (\n"
    << "    CheckpointImpl, apply_activation_checkpointing, checkpoint_wrapper)\n\n";
  // Modules apart from every range: apply_activation_checkpointing, which composes with FSDP.
  // Ranges, and modules inside or around one: by hand, innermost first.
  std::set<std::string> names;
  std::ostringstream steps;
  // A region under a policy other than the plan's own (the planner's per-block choice) is
  // wrapped by hand too, with its context_fn in its step.
  for (const Segment& g : segments_inside_out(m, c.plan)) {
    const std::string label = g.range ? range_label(g.first, g.last) : g.first;
    const SelectivePolicy& own = c.plan.policy_for(label);
    const std::string context = ", " + policy_context(own);
    if (!g.range && !g.nested && own == c.plan.policy) {
      names.insert(name(g.first));
    } else if (!g.range) {
      steps << "\n    (\"module\", " << quote(name(g.first)) << context << "),";
    } else {
      steps << "\n    (\"range\", " << quote(name(g.first)) << ", " << quote(name(g.last))
            << context << "),";
    }
  }
  const std::string selective = selective_helper(c.plan);
  s << selective << (selective.empty() ? "" : "\n\n");
  s << "MODULES = [";
  for (const auto& n : names) s << "\n    " << quote(n) << ",";
  s << (names.empty() ? "]\n" : "\n]\n");
  s << "# Ranges and the modules nested with them, innermost first: each outer segment wraps the\n"
    << "# inner ones already in place, as the engine nested them. Each step ends with its\n"
    << "# context_fn (its per-op policy) or None.\n"
    << "STEPS = [" << steps.str() << (steps.str().empty() ? "]\n" : "\n]\n");
  std::set<std::string> offloaded;
  for (const auto& path : c.plan.offload) offloaded.insert(name(path));
  s << "# Modules whose saved tensors wait in pinned host memory (save_on_cpu), for a GPU run.\n"
    << "OFFLOAD = [";
  for (const auto& n : offloaded) s << "\n    " << quote(n) << ",";
  s << (offloaded.empty() ? "]\n" : "\n]\n");
  for (const auto& p : problems) s << "# NOTE: " << p << "\n";
  const std::string impl = exported_reentrant(c) ? "REENTRANT" : "NO_REENTRANT";
  const std::string kwargs = std::string("use_reentrant=") +
                             (exported_reentrant(c) ? "True" : "False") +
                             (c.settings.preserve_rng_state ? "" : ", preserve_rng_state=False");
  s << "\n\n"
    << kWrapperHelper << "\n\n"
    << kRangeHelper << "\n\n"
    << kOffloadHelper << "\n\n"
    << "def apply_plan(model):\n"
    << "    \"\"\"Checkpoints the plan's modules and ranges of `model` in place.\"\"\"\n"
    << "    wrapper = functools.partial(checkpointed, impl=CheckpointImpl." << impl
    << policy_kwargs(c.plan.policy) << ")\n"
    << "    for step in STEPS:\n"
    << "        context = {} if step[-1] is None else {\"context_fn\": step[-1]}\n"
    << "        if step[0] == \"range\":\n"
    << "            checkpoint_range(model, step[1], step[2], " << kwargs << ", **context)\n"
    << "            continue\n"
    << "        parent_name, _, child = step[1].rpartition(\".\")\n"
    << "        parent = model.get_submodule(parent_name) if parent_name else model\n"
    << "        setattr(parent, child, checkpointed(getattr(parent, child), impl=CheckpointImpl."
    << impl << ", **context))\n"
    << "    targets = {id(model.get_submodule(name)) for name in MODULES}\n"
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
    << "    for name in OFFLOAD:\n"
    << "        offload(model.get_submodule(name))\n"
    << "    return model\n";
  return s.str();
}

}  // namespace

namespace {

std::string plan_code_unsharded(const Model& model, const RunRequest& request) {
  if (model.format == "onnx" || model.format == "capture") {
    std::ostringstream s;
    s << "# Checkpoint plan for " << model.source
      << (model.format == "capture" ? ", captured from a PyTorch model by ckptlab_capture.\n"
                                    : ", exported to ONNX from a PyTorch model.\n")
      << "# Apply it to the nn.Module you " << (model.format == "capture" ? "captured" : "exported")
      << ": apply_plan(model). The names are that\n"
      << "# model's submodules; ranges assume their parent calls them in a chain.\n";
    if (const std::string o =
            py::optimizer_constructor(request.settings.optimizer, "model.parameters()");
        !o.empty())
      s << "# Its figures are of a training step ending with\n#     optimizer = " << o
        << "\n# whose state is live from the start (steady-state training).\n";
    return s.str() + apply_code(model, request, true);
  }
  if (request.plan.ranges.empty()) return pytorch_code(model, request);
  // The code view writes the modules' checkpoint() calls where their parents call them; a
  // range's direct members are called through the range's segment instead, so theirs move
  // into it (checkpointed=...), and the ranges wrap the model by name, innermost first.
  const auto segments = segments_inside_out(model, request.plan);
  RunRequest outside = request;
  std::string ranges;
  std::set<std::string> placed;  // a member checkpointed by its innermost range only
  for (const Segment& g : segments) {
    if (!g.range) continue;
    const std::string parent = g.first.substr(0, g.first.rfind('.') + 1);
    std::string members;
    for (const Segment& x : segments)
      if (!x.range && x.first_op >= g.first_op && x.end_op <= g.end_op &&
          x.first.rfind(parent, 0) == 0 && x.first.find('.', parent.size()) == std::string::npos &&
          placed.insert(x.first).second) {
        members += quote(x.first.substr(parent.size())) + ", ";
        outside.plan.modules.erase(x.first);
      }
    ranges += "    checkpoint_range(model, " + quote(g.first) + ", " + quote(g.last) +
              (members.empty() ? "" : ", checkpointed=(" + members + ")") +
              ", use_reentrant=" + (exported_reentrant(request) ? "True" : "False") +
              policy_kwargs(request.plan.policy_for(range_label(g.first, g.last))) + ")\n";
  }
  std::string code = pytorch_code(model, outside);
  const std::string anchor = "    model.train()\n";
  const auto at = code.find(anchor);
  const auto main_at = code.find("if __name__ == \"__main__\":");
  if (at == std::string::npos || main_at == std::string::npos) return code;
  code.insert(at, ranges);
  code.insert(main_at, std::string(kRangeHelper) + "\n\n");
  if (code.find("import functools") == std::string::npos) code = "import functools\n" + code;
  return code;
}

}  // namespace

std::string plan_pytorch_code(const Model& model, const RunRequest& request) {
  const std::string code = plan_code_unsharded(model, request);
  return fsdp_requested(request.settings) ? with_fsdp(code, model, request.settings) : code;
}

}  // namespace ckpt
