#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "engine/model/finalize.hpp"
#include "engine/plan/policy_code.hpp"
#include "engine/plan/pytorch_code_detail.hpp"

// The script around the forward bodies: one nn.Module class per distinct module body, their
// constructors and parameters, the header that states the variant, and the lines that run one
// training step.

namespace ckpt::pytorch_code_detail {

NativeWriter::NativeWriter(const Model& m, const RunRequest& c) : m_(m), c_(c) {
  for (const auto& p : m.parameters) params_[p.name] = &p;
  if (m.scenario.loss == LossKind::model && !m.ops.empty() &&
      m.ops.back().outputs.front() == m.scenario.loss_value)
    loss_op_ = static_cast<std::int64_t>(m.ops.size()) - 1;
}

std::string NativeWriter::write() {
  const std::string root = construct(m_.root, 4);
  std::ostringstream out;
  out << header() << "\n";
  for (const auto& def : classes_) out << "\n" << def << "\n";
  out << "\ndef build_model():\n    return " << root.substr(4) << "\n\n\n";
  if (const std::string o = py::optimizer_constructor(c_.settings.optimizer, "model.parameters()");
      !o.empty())
    out << "def make_optimizer(model):\n    \"\"\"The optimizer the run's figures assume.\"\"\"\n"
        << "    return " << o << "\n\n\n";
  out << "if __name__ == \"__main__\":\n" << indent(usage(), 4);
  return out.str();
}

std::string NativeWriter::construct(const Module& m, int ind) {
  const std::string l = leaf(m);
  if (!l.empty()) return std::string(static_cast<std::size_t>(ind), ' ') + l;
  std::vector<std::pair<std::string, std::string>> args;
  std::set<std::string> seen;
  for (const auto& c : m.children) {
    const std::string attr = attr_of(*c);
    if (!seen.insert(attr).second) continue;
    args.emplace_back(attr, construct(*c, ind + 4));
  }
  std::string pad(static_cast<std::size_t>(ind), ' ');
  if (const int seq = sequential_kind(m); seq != 0) {
    // nn.Sequential("0", "1", ...), or the tutorial's loop when every block is checkpointed.
    std::string name = "nn.Sequential";
    if (seq == 2) {
      name = "CheckpointedSequential";
      if (!class_names_.count(name)) {
        class_names_.insert(name);
        classes_.push_back(
            "class CheckpointedSequential(nn.Sequential):\n"
            "    def forward(self, x):\n"
            "        for block in self:\n"
            "            x = checkpoint(block, x" +
            checkpoint_kwargs(c_, "") +
            ")\n"
            "        return x\n");
      }
    }
    std::string s = pad + name + "(\n";
    for (const auto& [attr, expr] : args) s += expr + ",\n";
    return s + pad + ")";
  }
  const std::string name = class_for(m, args);
  if (args.empty()) return pad + name + "()";
  std::string s = pad + name + "(\n";
  for (const auto& [attr, expr] : args)
    s += std::string(static_cast<std::size_t>(ind + 4), ' ') + py::ident(attr) + "=" +
         expr.substr(static_cast<std::size_t>(ind + 4)) + ",\n";
  return s + pad + ")";
}

std::string NativeWriter::param_init(const ParameterInfo& p) const {
  const Tensor& t = p.initial;
  // A weight the file did not hold (ParameterInfo::made_at_run), or a dry-run-only model's meta
  // weight, has no values to write.
  if (t.numel() <= 8 && !p.made_at_run && !t.is_meta()) {
    const auto v = t.to_vector();
    std::string s;
    std::function<void(std::size_t, std::size_t&)> nest = [&](std::size_t d, std::size_t& k) {
      if (d == t.shape().size()) {
        s += t.dtype() == DType::i64 ? std::to_string(static_cast<std::int64_t>(v[k]))
                                     : py::number(v[k]);
        ++k;
        return;
      }
      s += "[";
      for (std::int64_t i = 0; i < t.shape()[d]; ++i) {
        if (i) s += ", ";
        nest(d + 1, k);
      }
      s += "]";
    };
    std::size_t k = 0;
    nest(0, k);
    return "torch.tensor(" + s + (t.dtype() == DType::i64 ? ", dtype=torch.long" : "") + ")";
  }
  return "torch.empty" + py::ints(t.shape());
}

std::string NativeWriter::class_for(const Module& m,
                                    const std::vector<std::pair<std::string, std::string>>& args) {
  const std::string fwd = forward(m);
  std::string init = "super().__init__()\n";
  for (const auto& p : m_.parameters) {
    if (owner_of(p.name) != m.definition) continue;
    const std::string attr = last_component(p.name);
    if (p.requires_grad && !p.is_buffer)
      init += "self." + py::ident(attr) + " = nn.Parameter(" + param_init(p) + ")\n";
    else
      init += "self.register_buffer(" + py::quote(attr) + ", " + param_init(p) + ")\n";
  }
  for (const auto& [attr, expr] : args)
    init += is_identifier(attr)
                ? "self." + attr + " = " + attr + "\n"
                : "self.add_module(" + py::quote(attr) + ", " + py::ident(attr) + ")\n";
  // Parameters of this module that descendants use directly: the same Parameter object.
  std::set<std::string> shares;
  for (const auto& [path, names] : captured_) {
    const std::string prefix = m.path.empty() ? "" : m.path + ".";
    if (path.rfind(prefix, 0) != 0 || path == m.path) continue;
    for (const auto& p : names) {
      const std::string owner = owner_of(p);
      // A weight another branch owns (a tied LM head): the root ties it, after both exist.
      const bool tied = m.path.empty() && owner != m.definition && !owner.empty() &&
                        path.rfind(owner + ".", 0) != 0 && path != owner;
      if (owner != m.definition && !tied) continue;
      std::string chain = "self";
      const Module* at = &m;
      std::string rest = path.substr(prefix.size());
      while (!rest.empty()) {
        const std::string name = rest.substr(0, rest.find('.'));
        rest = rest.find('.') == std::string::npos ? "" : rest.substr(rest.find('.') + 1);
        const Module* next = nullptr;
        for (const auto& c : at->children)
          if (c->name == name) next = c.get();
        if (!next) break;
        // A child named "0" is add_module'd: reached with getattr.
        const std::string attr = attr_of(*next);
        chain = is_identifier(attr) ? chain + "." + attr
                                    : "getattr(" + chain + ", " + py::quote(attr) + ")";
        at = next;
      }
      const std::string name = py::ident(last_component(p));
      if (tied) {
        std::string source = "self";
        for (std::string r = owner; !r.empty();) {
          const std::string part = r.substr(0, r.find('.'));
          r = r.find('.') == std::string::npos ? "" : r.substr(r.find('.') + 1);
          source = is_identifier(part) ? source + "." + part
                                       : "getattr(" + source + ", " + py::quote(part) + ")";
        }
        shares.insert(chain + "." + name + " = " + source + "." + name + "  # tied\n");
        continue;
      }
      bool buffer = false;
      for (const auto& q : m_.parameters)
        if (q.name == p) buffer = q.is_buffer || !q.requires_grad;
      // A buffer is registered again (not persistent), so that .cuda() moves the child's too.
      shares.insert(buffer
                        ? chain + ".register_buffer(" + py::quote(name) + ", self." + name +
                              ", persistent=False)  # shared, as in the model\n"
                        : chain + "." + name + " = self." + name + "  # shared, as in the model\n");
    }
  }
  for (const auto& s : shares) init += s;
  std::string sig;
  for (const auto& [attr, expr] : args) sig += ", " + py::ident(attr);
  const std::string body =
      "    def __init__(self" + sig + "):\n" + indent(init, 8) + "\n" + indent(fwd, 4);
  auto it = class_by_body_.find(body);
  if (it != class_by_body_.end()) return it->second;
  std::string base = m.path.empty() ? py::camel(m_.name)
                     : (m.kind == "Sequential" || m.kind == "Function")
                         ? py::camel(last_component(m.definition))
                         : py::camel(m.kind);
  std::string name = base;
  for (int k = 2; class_names_.count(name); ++k) name = base + std::to_string(k);
  class_names_.insert(name);
  class_by_body_[body] = name;
  classes_.push_back("class " + name + "(nn.Module):\n" + body);
  return name;
}

std::string NativeWriter::header() const {
  std::ostringstream h;
  h << "# " << m_.scenario.title << " (" << m_.source << ") as PyTorch 1.13 code.\n";
  if (c_.plan.modules.empty() && c_.plan.segments == 0) {
    h << "# No checkpointing: every activation is kept for backward.\n";
  } else {
    h << "# checkpoint() goes in forward(), around the call it covers, never in __init__.\n";
    h << "# Variant: "
      << (exported_reentrant(c_) ? "reentrant (use_reentrant=True, 1.13's default)"
                                 : "non-reentrant (use_reentrant=False)")
      << "; preserve_rng_state=" << (c_.settings.preserve_rng_state ? "True" : "False") << ".\n";
  }
  if (c_.settings.early_stop)
    h << "# early_stop=True needs PyTorch 2.1+ "
         "(torch.utils.checkpoint.set_checkpoint_early_stop).\n";
  if (c_.settings.optimizer.kind != OptimizerKind::none)
    h << "# The training step ends with " << optimizer_name(c_.settings.optimizer.kind)
      << "'s step, its state live from the start as in steady-state training (the run's "
         "figures assume it).\n";
  if (!c_.plan.offload.empty())
    h << "# Offloaded modules keep their saved tensors in pinned host memory "
         "(torch.autograd.graph.save_on_cpu), for a GPU run.\n";
  h << "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
    << "from torch.utils.checkpoint import checkpoint, checkpoint_sequential\n";
  if (!c_.plan.offload.empty())
    h << "\n\ndef offloaded(fn, *args):\n"
         "    \"\"\"fn(*args) with what it saves for backward in host memory, copied back in "
         "backward.\"\"\"\n"
         "    with torch.autograd.graph.save_on_cpu(pin_memory=True):\n"
         "        return fn(*args)\n";
  // Only where a checkpoint() is written: a policy alone changes nothing.
  if (!c_.plan.modules.empty() || !c_.plan.ranges.empty() || c_.plan.segments > 0)
    h << selective_helper(c_.plan);
  return h.str();
}

std::string NativeWriter::usage() const {
  std::ostringstream u;
  const std::int64_t batch = c_.settings.batch > 0 ? c_.settings.batch : m_.scenario.batch;
  // A run for the cuda device is a GPU's step: the model and its inputs on the GPU, where
  // torch.autocast("cuda") applies.
  const bool cuda = c_.settings.device == Device::cuda;
  const std::string on = cuda ? ", device=\"cuda\"" : "";
  u << "torch.manual_seed(" << c_.settings.seed << ")\nmodel = build_model()"
    << (cuda ? ".cuda()" : "")
    << "  # weights: model.load_state_dict(...) to use Checkpoint Lab's\nmodel.train()\n";
  std::string call;
  for (const auto& in : m_.inputs) {
    const Shape s = resolve_input_shape(in, batch);
    const std::string n = py::ident(in.name);
    if (in.is_target && in.classes > 0) {
      u << n << " = torch.randint(0, " << in.classes << ", " << py::ints(s) << on << ")\n";
      continue;
    }
    if (in.classes > 0 || in.arange) {  // token ids or positions: integers, never grad
      if (in.classes > 0)
        u << n << " = torch.randint(0, " << in.classes << ", " << py::ints(s) << on << ")\n";
      else if (s.size() <= 1)
        u << n << " = torch.arange(" << (s.empty() ? 1 : s.back()) << on << ")\n";
      else
        u << n << " = torch.arange(" << s.back() << on << ").expand(" << py::ints(s)
          << ").contiguous()\n";
      call += (call.empty() ? "" : ", ") + n;
      continue;
    }
    const bool rg = !in.is_target && c_.settings.input_requires_grad.value_or(in.requires_grad);
    u << n << " = torch.randn(" << py::ints(s) << on << (rg ? ", requires_grad=True" : "") << ")\n";
    if (!in.is_target) call += (call.empty() ? "" : ", ") + n;
  }
  std::string outs;
  for (std::size_t i = 0; i < m_.outputs.size(); ++i)
    outs +=
        (i ? ", " : "") + std::string(m_.outputs.size() == 1 ? "out" : "out" + std::to_string(i));
  // Under autocast the outputs are summed as float32 (`out.float()`), as the engine's run does.
  const std::string as_float = c_.settings.amp != AmpMode::off ? ".float()" : "";
  std::ostringstream f;
  f << outs << " = model(" << call << ")\n";
  const LossKind kind = c_.settings.loss.value_or(m_.scenario.loss);
  if (kind == LossKind::model && loss_op_ >= 0) {
    const OpNode& op = m_.ops[static_cast<std::size_t>(loss_op_)];
    f << "loss = " << py::op_expression(op, {"out", py::ident(op.inputs[1])}, {}) << "\n";
  } else if (m_.outputs.size() == 1) {
    f << "loss = out" << as_float << "." << (kind == LossKind::mean ? "mean" : "sum") << "()\n";
  } else {
    std::string s, n;
    for (std::size_t i = 0; i < m_.outputs.size(); ++i) {
      s += (i ? " + " : "") + std::string("out") + std::to_string(i) + as_float + ".sum()";
      n += (i ? " + " : "") + std::string("out") + std::to_string(i) + ".numel()";
    }
    f << "loss = " << (kind == LossKind::mean ? "(" + s + ") / (" + n + ")" : s) << "\n";
  }
  u << training_step_setup(c_.settings) << training_step(c_.settings, f.str(), outs);
  return u.str();
}

}  // namespace ckpt::pytorch_code_detail
