#include <algorithm>
#include <map>
#include <set>

#include "engine/ops/schema/op_schema.hpp"
#include "engine/plan/pytorch_code_detail.hpp"

// What a module is made of, as the writer sees it: its own ops and its children's calls, whether
// it is a torch.nn layer or an nn.Sequential, and the values each instance is called with.

namespace ckpt::pytorch_code_detail {

const Module* NativeWriter::child_containing(const Module& m, const std::string& op_module) const {
  const std::string prefix = m.path.empty() ? "" : m.path + ".";
  const std::string rest = op_module.substr(prefix.size());
  const std::string name = rest.substr(0, rest.find('.'));
  for (const auto& c : m.children)
    if (c->name == name) return c.get();
  return nullptr;
}

// A module that is one standard torch.nn layer: one op, its parameters named like PyTorch's.
std::string NativeWriter::leaf(const Module& m) const {
  if (!m.children.empty() || m.end_op - m.first_op != 1 || m.path.empty()) return "";
  const OpNode& op = m_.ops[static_cast<std::size_t>(m.first_op)];
  if (op.module != m.path) return "";
  // Its parameters are named as the torch.nn layer's (the row's parameter_names, from input 1).
  const OpSchema* row = OpTable::instance().find(op.op_type);
  const std::vector<const char*> none;
  const std::vector<const char*>& names = row ? row->parameter_names : none;
  std::vector<Shape> shapes(op.inputs.size());
  for (std::size_t i = 0; i < op.inputs.size(); ++i) {
    const auto it = params_.find(op.inputs[i]);
    if (it == params_.end()) {
      if (i > 0 && !op.inputs[i].empty()) return "";
      continue;
    }
    if (i == 0 || i > names.size() || op.inputs[i] != m.definition + "." + names[i - 1]) return "";
    shapes[i] = it->second->initial.shape();
    if (shapes[i].empty()) shapes[i] = {1};
  }
  return py::leaf_module(op, shapes);
}

// 1: a plain chain of children named "0", "1", ... (an nn.Sequential); 2: the same with
// every child checkpointed; 0 otherwise (an offloaded child included).
int NativeWriter::sequential_kind(const Module& m) const {
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
    checkpointed += c_.plan.modules.count(u.child->path);
    // An offloaded block is called through offloaded(): a forward of the module's own.
    if (c_.plan.offload.count(u.child->path)) return 0;
    // A block under a policy of its own: its checkpoint() call says which.
    if (c_.plan.policy_for(u.child->path) != c_.plan.policy) return 0;
  }
  if (m.inputs.size() != 1 || m.outputs.size() != 1 || units.back().outputs[0] != m.outputs[0])
    return 0;
  if (checkpointed == 0) return 1;
  return checkpointed == units.size() ? 2 : 0;
}

// The expression for parameter `name` inside module m's forward.
std::string NativeWriter::param_expr(const Module& m, const std::string& name, const Names& names) {
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
const NativeWriter::Signature& NativeWriter::signature(const Module& m) const {
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
std::vector<std::string> NativeWriter::call_values(const Module& m, bool inputs) const {
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

std::vector<Unit> NativeWriter::units_of(const Module& m) const {
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

}  // namespace ckpt::pytorch_code_detail
