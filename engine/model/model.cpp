#include "engine/model/model.hpp"

namespace ckpt {

namespace {

void collect(const Module& m, std::vector<const Module*>& out) {
  for (const auto& c : m.children) {
    out.push_back(c.get());
    collect(*c, out);
  }
}

}  // namespace

void Model::reindex() {
  op_index_.clear();
  module_index_.clear();
  for (std::size_t i = 0; i < ops.size(); ++i)
    op_index_.emplace(ops[i].name, static_cast<std::int64_t>(i));
  // The root is not indexed: it lives inside the Model, whose address may change on a move,
  // while the children are on the heap.
  std::vector<const Module*> all;
  collect(root, all);
  for (const Module* m : all) module_index_.emplace(m->path, m);
}

const Module* Model::find_module(const std::string& path) const {
  if (path.empty()) return &root;
  auto it = module_index_.find(path);
  return it == module_index_.end() ? nullptr : it->second;
}

std::vector<const Module*> Model::all_modules() const {
  std::vector<const Module*> out;
  collect(root, out);
  return out;
}

std::vector<const Module*> Model::instances_of(const std::string& definition) const {
  std::vector<const Module*> out;
  for (const Module* m : all_modules())
    if (m->definition == definition) out.push_back(m);
  return out;
}

std::int64_t Model::op_index(const std::string& op_name) const {
  auto it = op_index_.find(op_name);
  return it == op_index_.end() ? -1 : it->second;
}

const ParameterInfo* Model::find_parameter(const std::string& name) const {
  for (const auto& p : parameters)
    if (p.name == name) return &p;
  return nullptr;
}

const InputInfo* Model::find_input(const std::string& name) const {
  for (const auto& i : inputs)
    if (i.name == name) return &i;
  return nullptr;
}

}  // namespace ckpt
