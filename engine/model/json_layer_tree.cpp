#include <algorithm>
#include <cctype>
#include <set>

#include "engine/model/json_builder.hpp"
#include "engine/ops/schema/op_schema.hpp"

// Walking the layer tree: the root, lists of layers, containers and blocks, each layer's module
// scope, and the layer types the format knows.

namespace ckpt::json_model {

namespace {

const std::set<std::string>& container_types() {
  static const std::set<std::string> t{"sequential", "function"};
  return t;
}
const std::set<std::string>& block_types() {
  static const std::set<std::string> t{"residual",  "dense_block",     "transition",
                                       "lstm",      "attention",       "rmsnorm",
                                       "gated_mlp", "llama_attention", "tied_linear"};
  return t;
}
// Display kinds, named like the PyTorch modules they stand for.
std::string kind_of(const std::string& type) {
  static const std::map<std::string, std::string> k{
      {"sequential", "Sequential"}, {"function", "Function"},
      {"residual", "Residual"},     {"dense_block", "DenseBlock"},
      {"transition", "Transition"}, {"lstm", "LSTM"},
      {"attention", "Attention"},   {"rmsnorm", "RMSNorm"},
      {"gated_mlp", "GatedMLP"},    {"llama_attention", "LlamaAttention"},
      {"tied_linear", "Linear"}};
  if (auto it = k.find(type); it != k.end()) return it->second;
  if (const NativeLayer* layer = OpTable::instance().find_native_layer(type).layer;
      layer && layer->module_class)
    return layer->module_class;
  std::string s = type;
  if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return s;
}

std::string known_types() {
  std::vector<std::string> all = OpTable::instance().native_layers();
  for (const auto* set : {&container_types(), &block_types()})
    all.insert(all.end(), set->begin(), set->end());
  all.push_back("repeat");
  std::sort(all.begin(), all.end());
  std::string s;
  for (const auto& t : all) s += (s.empty() ? "" : ", ") + t;
  return s;
}

// The layer's configuration as module attributes (numbers, strings, lists of integers).
Attributes config_attrs(const json& j) {
  static const std::set<std::string> skip{"type",     "name",    "layers",    "body",
                                          "shortcut", "after",   "inputs",    "as",
                                          "args",     "outputs", "parameters"};
  Attributes a;
  for (const auto& [key, v] : j.items()) {
    if (skip.count(key)) continue;
    if (v.is_boolean()) {
      a[key] = std::int64_t{v.get<bool>() ? 1 : 0};
    } else if (v.is_number_integer()) {
      a[key] = v.get<std::int64_t>();
    } else if (v.is_number()) {
      a[key] = v.get<double>();
    } else if (v.is_string()) {
      a[key] = v.get<std::string>();
    } else if (v.is_array() && std::all_of(v.begin(), v.end(),
                                           [](const json& e) { return e.is_number_integer(); })) {
      a[key] = v.get<std::vector<std::int64_t>>();
    }
  }
  return a;
}

}  // namespace

Builder::Scope Builder::child(Scope& s, const std::string& name, const std::string& kind,
                              const json* layer, const std::string& where, const Naming* naming) {
  if (name.empty() || name.find('.') != std::string::npos)
    throw JsonError(where,
                    "a module name must be non-empty and contain no '.', got \"" + name + "\"");
  for (const auto& c : s.module->children)
    if (c->name == name)
      throw JsonError(where, "two modules named \"" + name + "\" in " +
                                 (s.module->path.empty() ? "the model" : s.module->path));
  auto m = std::make_unique<Module>();
  m->name = name;
  m->path = s.module->path.empty() ? name : s.module->path + "." + name;
  m->kind = kind;
  m->definition = naming ? naming->def : (s.def.empty() ? name : s.def + "." + name);
  m->instance = naming ? naming->instance : 0;
  if (layer) m->attrs = config_attrs(*layer);
  Scope c;
  c.module = m.get();
  c.def = m->definition;
  c.up = &s;
  s.module->children.push_back(std::move(m));
  return c;
}

Values Builder::build_root(const json& j, const Values& inputs) {
  const std::string where = "model";
  if (!j.is_object()) throw JsonError(where, "must be a layer object");
  const std::string type = get_string(j, "type", where, "");
  if (!container_types().count(type))
    throw JsonError(
        where, "the root layer must be a \"sequential\" or a \"function\", got \"" + type + "\"");
  model_.root.kind = kind_of(type);
  model_.root.attrs = config_attrs(j);
  for (const auto& v : inputs) root_.names[v] = v;
  if (j.contains("args")) {
    const auto args = j.at("args");
    if (!args.is_array() || args.size() != inputs.size())
      throw JsonError(
          where, "\"args\" must name each of the " + std::to_string(inputs.size()) + " inputs");
    for (std::size_t i = 0; i < inputs.size(); ++i)
      root_.names[args[i].get<std::string>()] = inputs[i];
  }
  declare_params(j, where, root_);
  if (!j.contains("layers")) throw JsonError(where, "missing \"layers\"");
  Values cur = run_layers(j.at("layers"), where + ".layers", root_, inputs);
  if (j.contains("outputs")) {
    cur.clear();
    for (const auto& o : j.at("outputs")) cur.push_back(lookup(root_, o.get<std::string>(), where));
  }
  return cur;
}

Values Builder::run_layers(const json& layers, const std::string& where, Scope& s, Values cur) {
  if (!layers.is_array()) throw JsonError(where, "must be a list of layers");
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const json& lj = layers[i];
    const std::string w = where + "[" + std::to_string(i) + "]";
    Values in = cur;
    if (lj.is_object() && lj.contains("inputs")) {
      const json& names = lj.at("inputs");
      if (!names.is_array()) throw JsonError(w, "\"inputs\" must be a list of value names");
      in.clear();
      for (const auto& n : names) {
        if (!n.is_string()) throw JsonError(w, "\"inputs\" must be a list of value names");
        in.push_back(lookup(s, n.get<std::string>(), w));
      }
    }
    Values out = expand(lj, w, s, in, i, nullptr);
    if (lj.is_object() && lj.contains("as")) {
      const json& as = lj.at("as");
      std::vector<std::string> names;
      if (as.is_string()) {
        names.push_back(as.get<std::string>());
      } else if (as.is_array()) {
        for (const auto& n : as) names.push_back(n.get<std::string>());
      } else {
        throw JsonError(w, "\"as\" must be a name or a list of names");
      }
      if (names.size() != out.size())
        throw JsonError(w, "\"as\" names " + std::to_string(names.size()) +
                               " values but the layer makes " + std::to_string(out.size()));
      for (std::size_t k = 0; k < names.size(); ++k) s.names[names[k]] = out[k];
    }
    cur = std::move(out);
  }
  return cur;
}

Values Builder::container(const json& j, const std::string& where, Scope& s, const Values& in,
                          const std::string& name, const Naming* naming, const std::string& kind) {
  Scope c = child(s, name, kind, &j, where, naming);
  if (j.contains("args")) {
    const json& args = j.at("args");
    if (!args.is_array() || args.size() != in.size())
      throw JsonError(where, "\"args\" names " + std::to_string(args.is_array() ? args.size() : 0) +
                                 " arguments but the layer is given " + std::to_string(in.size()) +
                                 " inputs");
    for (std::size_t i = 0; i < in.size(); ++i) c.names[args[i].get<std::string>()] = in[i];
  }
  declare_params(j, where, c);
  if (j.contains("pass")) {
    const json& pass = j.at("pass");
    if (!pass.is_array()) throw JsonError(where, "\"pass\" must be a list of parameter names");
    for (const auto& p : pass) {
      if (!p.is_string()) throw JsonError(where, "\"pass\" must be a list of parameter names");
      c.module->passed_parameters.push_back(lookup_param(c, p.get<std::string>(), where));
    }
  }
  if (!j.contains("layers")) throw JsonError(where, "missing \"layers\"");
  Values cur = run_layers(j.at("layers"), where + ".layers", c, in);
  if (j.contains("outputs")) {
    cur.clear();
    for (const auto& o : j.at("outputs")) cur.push_back(lookup(c, o.get<std::string>(), where));
  }
  return cur;
}

Values Builder::expand(const json& j, const std::string& where, Scope& s, const Values& in,
                       std::size_t index, const Naming* naming) {
  if (!j.is_object()) throw JsonError(where, "a layer must be an object with a \"type\"");
  const std::string type = get_string(j, "type", where, "");
  if (type.empty()) throw JsonError(where, "a layer needs a \"type\"");
  const std::string given = naming ? naming->name : get_string(j, "name", where, "");
  const std::string w = where + " (" + type + (given.empty() ? "" : " \"" + given + "\"") + ")";
  const std::string name = given.empty() ? std::to_string(index) : given;
  if (type == "repeat") return repeat(j, w, s, in);
  if (container_types().count(type)) return container(j, w, s, in, name, naming, kind_of(type));
  if (block_types().count(type)) {
    Scope c = child(s, name, kind_of(type), &j, w, naming);
    if (type == "residual") return residual(j, w, c, in);
    if (type == "dense_block") return dense_block(j, w, c, in);
    if (type == "transition") return transition(j, w, c, in);
    if (type == "lstm") return lstm(j, w, c, in);
    if (type == "rmsnorm") return rmsnorm(j, w, c, in);
    if (type == "gated_mlp") return gated_mlp(j, w, c, in);
    if (type == "llama_attention") return llama_attention(j, w, c, in);
    if (type == "tied_linear") return tied_linear(j, w, c, in);
    return attention(j, w, c, in);
  }
  if (const NativeLayerEntry entry = OpTable::instance().find_native_layer(type); entry.layer) {
    // A layer with parameters is always a module; one without is inline unless named.
    if (!entry.layer->parameters && given.empty()) return layer(entry, type, j, w, s, in, false);
    Scope c = child(s, name, kind_of(type), &j, w, naming);
    return layer(entry, type, j, w, c, in, true);
  }
  throw JsonError(where, "unknown layer type \"" + type + "\" (known: " + known_types() + ")");
}

Values Builder::module_layer(Scope& s, const std::string& name, const json& config,
                             const std::string& where, const Values& in) {
  json j = config;
  j["name"] = name;
  return expand(j, where, s, in, 0, nullptr);
}

}  // namespace ckpt::json_model
