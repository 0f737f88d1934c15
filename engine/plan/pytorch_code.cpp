#include "engine/plan/pytorch_code.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "engine/model/finalize.hpp"
#include "engine/plan/python_expr.hpp"

namespace ckpt {

namespace {

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

std::string checkpoint_kwargs(const CheckpointConfig& c) {
  std::string s = std::string(", use_reentrant=") + (c.use_reentrant ? "True" : "False");
  if (!c.preserve_rng_state) s += ", preserve_rng_state=False";
  return s;
}

std::string indent(const std::string& text, int n) {
  std::string pad(static_cast<std::size_t>(n), ' '), out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out += (line.empty() ? "" : pad) + line + "\n";
  return out;
}

struct Unit {
  std::int64_t op = -1;           // an op of the module itself, or
  const Module* child = nullptr;  // a call of a child module
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
};

// Local variable names of one Python function.
class Names {
 public:
  std::string fresh(const std::string& want) {
    std::string base = py::ident(want), s = base;
    for (int k = 2; used_.count(s); ++k) s = base + "_" + std::to_string(k);
    used_.insert(s);
    return s;
  }
  std::map<std::string, std::string> var;  // graph value -> Python name

 private:
  std::set<std::string> used_;
};

class NativeWriter {
 public:
  NativeWriter(const Model& m, const CheckpointConfig& c) : m_(m), c_(c) {
    for (const auto& p : m.parameters) params_[p.name] = &p;
    if (m.scenario.loss == LossKind::model && !m.ops.empty() &&
        m.ops.back().outputs.front() == m.scenario.loss_value)
      loss_op_ = static_cast<std::int64_t>(m.ops.size()) - 1;
  }

  std::string write() {
    const std::string root = construct(m_.root, 4);
    std::ostringstream out;
    out << header() << "\n";
    for (const auto& def : classes_) out << "\n" << def << "\n";
    out << "\ndef build_model():\n    return " << root.substr(4) << "\n\n\n"
        << "if __name__ == \"__main__\":\n"
        << indent(usage(), 4);
    return out.str();
  }

 private:
  bool is_param(const std::string& v) const { return params_.count(v) > 0; }

  std::string attr_of(const Module& child) const { return last_component(child.definition); }

  const Module* child_containing(const Module& m, const std::string& op_module) const {
    const std::string prefix = m.path.empty() ? "" : m.path + ".";
    const std::string rest = op_module.substr(prefix.size());
    const std::string name = rest.substr(0, rest.find('.'));
    for (const auto& c : m.children)
      if (c->name == name) return c.get();
    return nullptr;
  }

  // A module that is one standard torch.nn layer: one op, its parameters named like PyTorch's.
  std::string leaf(const Module& m) const {
    if (!m.children.empty() || m.end_op - m.first_op != 1 || m.path.empty()) return "";
    const OpNode& op = m_.ops[static_cast<std::size_t>(m.first_op)];
    if (op.module != m.path) return "";
    static const std::map<std::string, std::vector<std::string>> names{
        {"linear", {"", "weight", "bias"}},
        {"conv2d", {"", "weight", "bias"}},
        {"layer_norm", {"", "weight", "bias"}},
        {"batch_norm",
         {"", "weight", "bias", "running_mean", "running_var", "num_batches_tracked"}}};
    std::vector<Shape> shapes(op.inputs.size());
    for (std::size_t i = 0; i < op.inputs.size(); ++i) {
      const auto it = params_.find(op.inputs[i]);
      if (it == params_.end()) {
        if (i > 0 && !op.inputs[i].empty()) return "";
        continue;
      }
      auto expected = names.find(op.op_type);
      if (i == 0 || expected == names.end() || i >= expected->second.size() ||
          op.inputs[i] != m.definition + "." + expected->second[i])
        return "";
      shapes[i] = it->second->initial.shape();
      if (shapes[i].empty()) shapes[i] = {1};
    }
    return py::leaf_module(op, shapes);
  }

  std::string construct(const Module& m, int ind) {
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
              checkpoint_kwargs(c_) +
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

  // 1: a plain chain of children named "0", "1", ... (an nn.Sequential); 2: the same with
  // every child checkpointed; 0 otherwise.
  int sequential_kind(const Module& m) const {
    if (m.path.empty() || m.children.empty()) return 0;
    for (const auto& p : m_.parameters)
      if (owner_of(p.name) == m.definition) return 0;
    const auto units = units_of(m);
    if (units.size() != m.children.size()) return 0;
    std::size_t checkpointed = 0;
    for (std::size_t k = 0; k < units.size(); ++k) {
      const Unit& u = units[k];
      if (!u.child || u.child != m.children[k].get() || u.child->name != std::to_string(k) ||
          u.inputs.size() != 1 || u.outputs.size() != 1 ||
          u.inputs[0] != (k == 0 ? m.inputs.at(0) : units[k - 1].outputs[0]))
        return 0;
      checkpointed += c_.modules.count(u.child->path);
    }
    if (m.inputs.size() != 1 || m.outputs.size() != 1 || units.back().outputs[0] != m.outputs[0])
      return 0;
    if (checkpointed == 0) return 1;
    return checkpointed == units.size() ? 2 : 0;
  }

  std::string param_init(const ParameterInfo& p) const {
    const Tensor& t = p.initial;
    if (t.numel() <= 8) {
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

  // The expression for parameter `name` inside module m's forward.
  std::string param_expr(const Module& m, const std::string& name, const Names& names) {
    auto it = names.var.find(name);
    if (it != names.var.end()) return it->second;  // passed as an argument
    const std::string owner = owner_of(name);
    if (owner == m.definition) return attr_ref(last_component(name));
    const std::string prefix = m.definition.empty() ? "" : m.definition + ".";
    if (!prefix.empty() && name.rfind(prefix, 0) == 0) return "self." + name.substr(prefix.size());
    if (prefix.empty() && owner.empty()) return attr_ref(name);
    captured_[m.path].insert(name);  // the owner shares it with this module at construction
    return attr_ref(last_component(name));
  }

  // Where, relative to its first op, each argument is first read and each result is made.
  // Instances of one definition run the same ops, so one class serves them all; its forward
  // returns every result that any instance's caller uses (the last LSTM step's caller does not
  // use the cell state, the others do).
  struct Signature {
    std::vector<std::pair<std::int64_t, std::size_t>> in, out;
  };
  const Signature& signature(const Module& m) const {
    auto it = signatures_.find(m.definition);
    if (it != signatures_.end()) return it->second;
    const Module* first = nullptr;
    std::vector<const Module*> all;
    for (const Module* x : m_.instances_of(m.definition))
      if (x->end_op - x->first_op == m.end_op - m.first_op) {
        if (!first) first = x;
        all.push_back(x);
      }
    Signature sig;
    for (const auto& v : first->inputs) {
      for (std::int64_t k = first->first_op; k < first->end_op; ++k) {
        const auto& ins = m_.ops[static_cast<std::size_t>(k)].inputs;
        const auto pos = std::find(ins.begin(), ins.end(), v);
        if (pos != ins.end()) {
          sig.in.emplace_back(k - first->first_op, static_cast<std::size_t>(pos - ins.begin()));
          break;
        }
      }
    }
    std::set<std::pair<std::int64_t, std::size_t>> outs;
    for (const Module* x : all)
      for (const auto& v : x->outputs)
        for (std::int64_t k = x->first_op; k < x->end_op; ++k) {
          const auto& o = m_.ops[static_cast<std::size_t>(k)].outputs;
          const auto pos = std::find(o.begin(), o.end(), v);
          if (pos != o.end())
            outs.emplace(k - x->first_op, static_cast<std::size_t>(pos - o.begin()));
        }
    sig.out.assign(outs.begin(), outs.end());
    return signatures_.emplace(m.definition, std::move(sig)).first->second;
  }

  // The values instance m is called with (inputs) or returns (outputs), in its class's order.
  std::vector<std::string> call_values(const Module& m, bool inputs) const {
    if (m_.instances_of(m.definition).size() < 2) return inputs ? m.inputs : m.outputs;
    const Signature& sig = signature(m);
    if (inputs && sig.in.size() != m.inputs.size()) return m.inputs;
    std::vector<std::string> out;
    for (const auto& [d, slot] : inputs ? sig.in : sig.out) {
      const OpNode& op = m_.ops[static_cast<std::size_t>(m.first_op + d)];
      out.push_back(inputs ? op.inputs.at(slot) : op.outputs.at(slot));
    }
    return out;
  }

  std::vector<Unit> units_of(const Module& m) const {
    std::vector<Unit> units;
    for (std::int64_t k = m.first_op; k < m.end_op;) {
      if (k == loss_op_) break;
      const OpNode& op = m_.ops[static_cast<std::size_t>(k)];
      Unit u;
      if (op.module == m.path) {
        u.op = k;
        u.inputs = op.inputs;
        u.outputs = op.outputs;
        ++k;
      } else {
        u.child = child_containing(m, op.module);
        u.inputs = call_values(*u.child, true);
        u.outputs = call_values(*u.child, false);
        k = u.child->end_op;
      }
      units.push_back(std::move(u));
    }
    return units;
  }

  std::string render(const Module& m, const Unit& u, Names& names, int placeholder) {
    std::vector<std::string> args;
    for (std::size_t i = 0; i < u.inputs.size(); ++i) {
      const std::string& v = u.inputs[i];
      if (static_cast<int>(i) == placeholder) {
        args.push_back("{x}");
      } else if (v.empty()) {
        args.push_back("");
      } else if (is_param(v)) {
        args.push_back(param_expr(m, v, names));
      } else {
        args.push_back(names.var.at(v));
      }
    }
    if (u.child) {
      std::string list;
      for (const auto& a : args) list += (list.empty() ? "" : ", ") + a;
      const std::string callee = attr_ref(attr_of(*u.child));
      if (c_.modules.count(u.child->path))
        return "checkpoint(" + callee + (list.empty() ? "" : ", " + list) + checkpoint_kwargs(c_) +
               ")";
      return callee + "(" + list + ")";
    }
    const OpNode& op = m_.ops[static_cast<std::size_t>(u.op)];
    const auto shape_it = op.inputs.empty() ? m_.values.end() : m_.values.find(op.inputs[0]);
    return py::op_expression(op, args,
                             shape_it == m_.values.end() ? Shape{} : shape_it->second.shape);
  }

  std::string short_name(const Module& m, const std::string& v) const {
    std::string s = v;
    const std::string prefix = m.path.empty() ? "" : m.path + ".";
    if (!prefix.empty() && s.rfind(prefix, 0) == 0) s = s.substr(prefix.size());
    s = last_component(s);
    std::replace(s.begin(), s.end(), ':', '_');
    return s;
  }

  std::string forward(const Module& m) {
    Names names;
    const bool root = m.path.empty();
    std::vector<std::string> args;
    std::vector<std::string> inputs = m.inputs;
    if (root) {
      inputs.clear();
      for (const auto& in : m_.inputs)
        if (!in.is_target) inputs.push_back(in.name);
    }
    const std::vector<Unit> units = units_of(m);
    std::map<std::string, int> uses;
    for (const auto& u : units)
      for (const auto& v : u.inputs) ++uses[v];
    std::vector<std::string> outputs = root ? m_.outputs : call_values(m, false);
    for (const auto& v : outputs) ++uses[v];
    // A function that hands all its inputs, in order, to one call takes *inputs (the dense
    // layers: each gets one more feature map than the last).
    // A single input qualifies when it goes to a cat or to a call that is itself variadic, so
    // that the first dense layer shares its class with the others.
    bool variadic = false;
    if (!root && !inputs.empty() &&
        std::none_of(inputs.begin(), inputs.end(), [&](const auto& v) { return is_param(v); }) &&
        std::all_of(inputs.begin(), inputs.end(), [&](const auto& v) { return uses[v] == 1; })) {
      for (const auto& u : units) {
        if (u.inputs != inputs) continue;
        const bool gathers = u.child ? variadic_.count(u.child->definition) > 0
                                     : m_.ops[static_cast<std::size_t>(u.op)].op_type == "cat";
        if (inputs.size() >= 2 || gathers) variadic = true;
      }
    }
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      const std::string& v = inputs[k];
      std::string n;
      if (variadic)
        n.append("inputs[").append(std::to_string(k)).append("]");
      else if (!root && inputs.size() == 1 && !is_param(v))
        n = names.fresh(
            "x");  // one neutral name, so that blocks fed by different layers share a class
      else
        n = names.fresh(is_param(v) ? last_component(v) : short_name(m, v));
      names.var[v] = n;
      args.push_back(n);
    }
    std::string body;
    std::size_t i = 0;
    if (root && c_.segments > 0) i = sequential_prefix(m, units, names, body);
    while (i < units.size()) {
      std::size_t j = i + 1;
      int p0 = -1;
      std::string tmpl;
      while (j < units.size() && units[j - 1].outputs.size() == 1 && units[j].outputs.size() == 1 &&
             uses[units[j - 1].outputs[0]] == 1) {
        const auto& in = units[j].inputs;
        const auto pos = std::find(in.begin(), in.end(), units[j - 1].outputs[0]);
        if (pos == in.end() || std::count(in.begin(), in.end(), *pos) != 1) break;
        const int p = static_cast<int>(pos - in.begin());
        if (j == i + 1) {
          if (static_cast<std::size_t>(p) >= units[i].inputs.size() ||
              units[i].inputs[static_cast<std::size_t>(p)].empty())
            break;
          p0 = p;
          tmpl = render(m, units[i], names, p0);
        }
        if (render(m, units[j], names, p) != tmpl) break;
        ++j;
      }
      if (j - i >= 3) {
        const std::string& in_v = units[i].inputs[static_cast<std::size_t>(p0)];
        std::string var;
        if (!is_param(in_v) && uses[in_v] == 1) {
          var = names.var.at(in_v);
        } else {
          var = names.fresh(short_name(m, units[j - 1].outputs[0]));
          body += var + " = " + (is_param(in_v) ? param_expr(m, in_v, names) : names.var.at(in_v)) +
                  "\n";
        }
        std::string stmt = tmpl;
        stmt.replace(stmt.find("{x}"), 3, var);
        body += "for _ in range(" + std::to_string(j - i) + "):\n    " + var + " = " + stmt + "\n";
        names.var[units[j - 1].outputs[0]] = var;
        i = j;
        continue;
      }
      const Unit& u = units[i];
      const std::string expr = render(m, u, names, -1);
      std::string lhs;
      for (const auto& v : u.outputs) {
        const std::string want =
            u.child && u.outputs.size() == 1 ? u.child->name : short_name(m, v);
        const std::string n = names.fresh(want);
        names.var[v] = n;
        lhs += (lhs.empty() ? "" : ", ") + n;
      }
      body += lhs + " = " + expr + "\n";
      ++i;
    }
    std::string ret;
    for (const auto& v : outputs) ret += (ret.empty() ? "" : ", ") + names.var.at(v);
    body += "return " + ret + "\n";
    std::string sig = variadic ? "*inputs" : "";
    if (variadic) {
      variadic_.insert(m.definition);
      // Spell the one call that takes them all with *inputs.
      std::string list;
      for (const auto& a : args) list += (list.empty() ? "" : ", ") + a;
      const auto at = body.find(list);
      if (at != std::string::npos) body.replace(at, list.size(), "*inputs");
      if (body.find("[*inputs]") != std::string::npos)
        body.replace(body.find("[*inputs]"), 9, "list(inputs)");
    } else {
      for (const auto& a : args) sig += (sig.empty() ? "" : ", ") + a;
    }
    return "def forward(self" + (sig.empty() ? "" : ", " + sig) + "):\n" + indent(body, 4);
  }

  // checkpoint_sequential over the root's leading chain of top-level modules.
  std::size_t sequential_prefix(const Module& m, const std::vector<Unit>& units, Names& names,
                                std::string& body) {
    std::vector<std::string> fns;
    std::size_t n = 0;
    for (; n < units.size(); ++n) {
      const Unit& u = units[n];
      if (u.outputs.size() != 1) break;
      if (u.child) {
        fns.push_back(attr_ref(attr_of(*u.child)));
      } else {
        Names scratch = names;
        fns.push_back("lambda h: " + [&] {
          std::string e = render(m, u, scratch, 0);
          e.replace(e.find("{x}"), 3, "h");
          return e;
        }());
      }
    }
    const std::string in = names.var.at(units.front().inputs.front());
    const std::string out = names.fresh("out");
    body += "# checkpoint_sequential: always the reentrant variant in PyTorch 1.13\n";
    body += out + " = checkpoint_sequential(\n    [";
    for (std::size_t k = 0; k < fns.size(); ++k) body += (k ? ", " : "") + fns[k];
    body += "],\n    " + std::to_string(c_.segments) + ", " + in +
            (c_.preserve_rng_state ? "" : ", preserve_rng_state=False") + ")\n";
    names.var[units[n - 1].outputs[0]] = out;
    return n;
  }

  std::string class_for(const Module& m,
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
        if (owner_of(p) != m.definition) continue;
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
          chain.append(".").append(py::ident(attr_of(*next)));
          at = next;
        }
        shares.insert(chain + "." + py::ident(last_component(p)) + " = self." +
                      py::ident(last_component(p)) + "  # shared, as in the model\n");
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

  std::string header() const {
    std::ostringstream h;
    h << "# " << m_.scenario.title << " (" << m_.source << ") as PyTorch 1.13 code.\n";
    if (c_.modules.empty() && c_.segments == 0) {
      h << "# No checkpointing: every activation is kept for backward.\n";
    } else {
      h << "# checkpoint() goes in forward(), around the call it covers, never in __init__.\n";
      h << "# Variant: "
        << (c_.use_reentrant ? "reentrant (use_reentrant=True, 1.13's default)"
                             : "non-reentrant (use_reentrant=False)")
        << "; preserve_rng_state=" << (c_.preserve_rng_state ? "True" : "False") << ".\n";
    }
    if (c_.early_stop)
      h << "# early_stop=True needs PyTorch 2.1+ "
           "(torch.utils.checkpoint.set_checkpoint_early_stop).\n";
    if (c_.policy == SelectivePolicy::save_matmul)
      h << "# The save-matmul selective policy needs PyTorch 2.4+ "
           "(create_selective_checkpoint_contexts).\n";
    h << "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
      << "from torch.utils.checkpoint import checkpoint, checkpoint_sequential\n";
    return h.str();
  }

  std::string usage() const {
    std::ostringstream u;
    const std::int64_t batch = c_.batch > 0 ? c_.batch : m_.scenario.batch;
    u << "torch.manual_seed(" << c_.seed
      << ")\nmodel = build_model()  # weights: "
         "model.load_state_dict(...) to use Checkpoint Lab's\nmodel.train()\n";
    std::string call;
    for (const auto& in : m_.inputs) {
      const Shape s = resolve_input_shape(in, batch);
      const std::string n = py::ident(in.name);
      if (in.is_target && in.classes > 0) {
        u << n << " = torch.randint(0, " << in.classes << ", " << py::ints(s) << ")\n";
        continue;
      }
      if (in.classes > 0 || in.arange) {  // token ids or positions: integers, never grad
        if (in.classes > 0)
          u << n << " = torch.randint(0, " << in.classes << ", " << py::ints(s) << ")\n";
        else if (s.size() <= 1)
          u << n << " = torch.arange(" << (s.empty() ? 1 : s.back()) << ")\n";
        else
          u << n << " = torch.arange(" << s.back() << ").expand(" << py::ints(s)
            << ").contiguous()\n";
        call += (call.empty() ? "" : ", ") + n;
        continue;
      }
      const bool rg = !in.is_target && c_.input_requires_grad.value_or(in.requires_grad);
      u << n << " = torch.randn(" << py::ints(s) << (rg ? ", requires_grad=True" : "") << ")\n";
      if (!in.is_target) call += (call.empty() ? "" : ", ") + n;
    }
    std::string outs;
    for (std::size_t i = 0; i < m_.outputs.size(); ++i)
      outs +=
          (i ? ", " : "") + std::string(m_.outputs.size() == 1 ? "out" : "out" + std::to_string(i));
    u << outs << " = model(" << call << ")\n";
    const LossKind kind = c_.loss.value_or(m_.scenario.loss);
    if (kind == LossKind::model && loss_op_ >= 0) {
      const OpNode& op = m_.ops[static_cast<std::size_t>(loss_op_)];
      u << "loss = " << py::op_expression(op, {"out", py::ident(op.inputs[1])}, {}) << "\n";
    } else if (m_.outputs.size() == 1) {
      u << "loss = out." << (kind == LossKind::mean ? "mean" : "sum") << "()\n";
    } else {
      std::string s, n;
      for (std::size_t i = 0; i < m_.outputs.size(); ++i) {
        s += (i ? " + " : "") + std::string("out") + std::to_string(i) + ".sum()";
        n += (i ? " + " : "") + std::string("out") + std::to_string(i) + ".numel()";
      }
      u << "loss = " << (kind == LossKind::mean ? "(" + s + ") / (" + n + ")" : s) << "\n";
    }
    u << "loss.backward()\n";
    return u.str();
  }

  const Model& m_;
  const CheckpointConfig& c_;
  std::map<std::string, const ParameterInfo*> params_;
  std::int64_t loss_op_ = -1;
  std::map<std::string, std::set<std::string>> captured_;
  mutable std::map<std::string, Signature> signatures_;
  std::set<std::string> variadic_;  // definitions whose forward takes *inputs
  std::map<std::string, std::string> class_by_body_;
  std::set<std::string> class_names_;
  std::vector<std::string> classes_;
};

std::string onnx_code(const Model& m, const CheckpointConfig& c) {
  std::ostringstream s;
  s << "# Checkpointing for " << m.source << ", exported to ONNX from a PyTorch model.\n"
    << "# Its Python source is not in the file: apply this to the PyTorch model you exported it\n"
    << "# from. The names are that model's submodules (ONNX node scopes), so get_submodule finds\n"
    << "# them. Memory figures in Checkpoint Lab are those of the exported graph.\n"
    << "import torch\nfrom torch.utils.checkpoint import checkpoint, checkpoint_sequential\n\n\n"
    << "def use_checkpoint(model, names, **kwargs):\n"
    << "    \"\"\"Makes each named submodule run under checkpoint() when the model calls "
       "it.\"\"\"\n"
    << "    for name in names:\n"
    << "        module = model.get_submodule(name)\n"
    << "        def forward(*args, _forward=module.forward):\n"
    << "            return checkpoint(_forward, *args, **kwargs)\n"
    << "        module.forward = forward\n\n\n";
  if (c.modules.empty() && c.segments == 0) {
    s << "# No module is checkpointed in this configuration.\n";
    return s.str();
  }
  std::set<std::string> defs;
  for (const auto& path : c.modules) {
    const Module* mod = m.find_module(path);
    defs.insert(mod ? mod->definition : path);
  }
  if (!defs.empty()) {
    s << "use_checkpoint(model, [\n";
    for (const auto& d : defs) s << "    " << py::quote(d) << ",\n";
    s << "], use_reentrant=" << (c.use_reentrant ? "True" : "False")
      << (c.preserve_rng_state ? "" : ", preserve_rng_state=False") << ")\n";
  }
  if (c.segments > 0) {
    s << "\n# checkpoint_sequential over the top-level modules (valid when the model's forward\n"
      << "# just chains them); always the reentrant variant in PyTorch 1.13.\n"
      << "children = list(model.children())\n"
      << "model.forward = lambda x: checkpoint_sequential(children, " << c.segments << ", x"
      << (c.preserve_rng_state ? "" : ", preserve_rng_state=False") << ")\n";
  }
  return s.str();
}

}  // namespace

std::string pytorch_code(const Model& model, const CheckpointConfig& config) {
  if (model.format == "onnx") return onnx_code(model, config);
  return NativeWriter(model, config).write();
}

}  // namespace ckpt
