#include "engine/model/module_range.hpp"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

namespace ckpt {

namespace {

struct Endpoint {
  std::string parent;  // the module that directly holds it
  std::int64_t first_op = 0;
  std::int64_t end_op = 0;
};

std::string parent_of(const std::string& path) {
  const auto dot = path.rfind('.');
  return dot == std::string::npos ? std::string() : path.substr(0, dot);
}

Endpoint resolve(const Model& model, const std::string& name, const std::string& label) {
  if (const Module* m = model.find_module(name); m && !name.empty())
    return {parent_of(m->path), m->first_op, m->end_op};
  const std::int64_t k = model.op_index(name);
  if (k < 0)
    throw std::invalid_argument("cannot checkpoint the range '" + label + "': " + model.source +
                                " has no module or op '" + name + "'");
  return {model.ops[static_cast<std::size_t>(k)].module, k, k + 1};
}

bool inside(const std::string& module, const std::string& parent) {
  return parent.empty() || module == parent ||
         (module.size() > parent.size() && module.compare(0, parent.size(), parent) == 0 &&
          module[parent.size()] == '.');
}

}  // namespace

std::string range_label(const std::string& first, const std::string& last) {
  return first + ".." + last;
}

std::pair<std::string, std::string> parse_range(const std::string& text) {
  const auto dots = text.find("..");
  if (dots == std::string::npos || dots == 0 || dots + 2 >= text.size() ||
      text.find("..", dots + 2) != std::string::npos)
    throw std::invalid_argument("a range is FIRST..LAST (two sibling modules), got '" + text + "'");
  return {text.substr(0, dots), text.substr(dots + 2)};
}

Module make_range(const Model& model, const std::string& first, const std::string& last) {
  const std::string label = range_label(first, last);
  const Endpoint a = resolve(model, first, label);
  const Endpoint b = resolve(model, last, label);
  auto fail = [&](const std::string& why) {
    throw std::invalid_argument("cannot checkpoint the range '" + label + "' of " + model.source +
                                ": " + why);
  };
  if (a.parent != b.parent)
    fail("'" + first + "' and '" + last + "' are not siblings (their parents are '" + a.parent +
         "' and '" + b.parent + "')");
  if (a.first_op > b.first_op) fail("'" + first + "' runs after '" + last + "'");
  Module r;
  r.path = label;
  r.name = label;
  r.kind = "Range";
  r.definition = label;
  r.first_op = a.first_op;
  r.end_op = std::max(a.end_op, b.end_op);
  std::unordered_set<std::string> made, statics;
  for (const auto& p : model.parameters) statics.insert(p.name);
  for (const auto& [name, c] : model.constants) statics.insert(name);
  std::unordered_set<std::string> in_set, param_set;
  for (std::int64_t k = r.first_op; k < r.end_op; ++k) {
    const OpNode& op = model.ops[static_cast<std::size_t>(k)];
    if (!inside(op.module, a.parent))
      fail("op '" + op.name + "' of module '" + op.module + "' runs between its ends");
    for (const auto& v : op.inputs) {
      if (v.empty() || made.count(v)) continue;
      if (statics.count(v)) {
        if (param_set.insert(v).second) r.parameters.push_back(v);
      } else if (in_set.insert(v).second) {
        r.inputs.push_back(v);
      }
    }
    for (const auto& v : op.outputs) made.insert(v);
  }
  std::unordered_set<std::string> out_set;
  auto use = [&](const std::string& v) {
    if (made.count(v) && out_set.insert(v).second) r.outputs.push_back(v);
  };
  for (std::size_t k = static_cast<std::size_t>(r.end_op); k < model.ops.size(); ++k)
    for (const auto& v : model.ops[k].inputs) use(v);
  for (const auto& v : model.outputs) use(v);
  if (!model.scenario.loss_value.empty()) use(model.scenario.loss_value);
  if (r.outputs.empty()) fail("nothing it computes is used afterwards");
  r.checkpointable = true;
  return r;
}

}  // namespace ckpt
