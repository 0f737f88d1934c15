#include "engine/run/compiled_model.hpp"

#include <stdexcept>

namespace ckpt {

CompiledModel::CompiledModel(const Model& model) {
  auto add = [&](const std::string& n) {
    if (!ids_.emplace(n, static_cast<int>(names_.size())).second)
      throw std::invalid_argument(model.source + ": value '" + n + "' is defined twice");
    names_.push_back(n);
  };
  for (const auto& p : model.parameters) add(p.name);
  parameters_ = static_cast<int>(names_.size());
  for (const auto& [n, t] : model.constants) add(n);
  statics_ = static_cast<int>(names_.size());
  for (const auto& in : model.inputs) add(in.name);
  ops_.reserve(model.ops.size());
  for (const auto& op : model.ops) {
    first_out_.push_back(static_cast<int>(names_.size()));
    CompiledOp c;
    c.node = &op;
    c.kind = find_op_kind(op.op_type);
    if (!c.kind)
      throw std::invalid_argument(model.source + ": node '" + op.name + "': unknown op kind '" +
                                  op.op_type + "'");
    for (const auto& v : op.inputs) c.inputs.push_back(v.empty() ? -1 : id(v));
    for (const auto& v : op.outputs) {
      add(v);
      c.outputs.push_back(static_cast<int>(names_.size()) - 1);
    }
    ops_.push_back(std::move(c));
  }
  first_out_.push_back(static_cast<int>(names_.size()));
  outputs_ = ids(model.outputs);
  auto labels = std::make_shared<LabelTable>();
  op_labels_.reserve(ops_.size());
  for (const auto& op : ops_) op_labels_.push_back(labels->intern(op.node->name));
  value_labels_.reserve(names_.size());
  for (const auto& n : names_) value_labels_.push_back(labels->intern(n));
  labels_ = std::move(labels);
  if (model.scenario.loss == LossKind::model) loss_ = id(model.scenario.loss_value);

  // Last use of every value; a value nobody reads dies right after the op that made it.
  const auto n = static_cast<std::int64_t>(ops_.size());
  std::vector<std::int64_t> last(names_.size(), -1);
  for (std::int64_t k = 0; k < n; ++k) {
    for (int v : ops_[static_cast<std::size_t>(k)].outputs) last[static_cast<std::size_t>(v)] = k;
    for (int v : ops_[static_cast<std::size_t>(k)].inputs)
      if (v >= 0) last[static_cast<std::size_t>(v)] = k;
  }
  std::vector<bool> keep(names_.size(), false);
  for (int v : outputs_) keep[static_cast<std::size_t>(v)] = true;
  if (loss_ >= 0) keep[static_cast<std::size_t>(loss_)] = true;
  release_.resize(static_cast<std::size_t>(n));
  for (std::size_t v = static_cast<std::size_t>(statics_); v < names_.size(); ++v)
    if (!keep[v] && last[v] >= 0)
      release_[static_cast<std::size_t>(last[v])].push_back(static_cast<int>(v));
}

int CompiledModel::id(const std::string& name) const {
  auto it = ids_.find(name);
  if (it == ids_.end()) throw std::invalid_argument("unknown value '" + name + "'");
  return it->second;
}

std::vector<int> CompiledModel::ids(const std::vector<std::string>& names) const {
  std::vector<int> out;
  out.reserve(names.size());
  for (const auto& n : names) out.push_back(id(n));
  return out;
}

}  // namespace ckpt
