#include "engine/model/json_builder.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include "engine/ops/schema/op_schema.hpp"
#include "engine/tensor/init.hpp"

namespace ckpt::json_model {

namespace {

const std::set<std::string>& container_types() {
  static const std::set<std::string> t{"sequential", "function"};
  return t;
}
const std::set<std::string>& block_types() {
  static const std::set<std::string> t{"residual", "dense_block", "transition", "lstm",
                                       "attention"};
  return t;
}
const std::set<std::string>& param_types() {
  static const std::set<std::string> t{"linear", "conv2d", "batchnorm2d", "layernorm", "embedding"};
  return t;
}
const std::set<std::string>& simple_types() {
  static const std::set<std::string> t{
      "relu",    "gelu",      "sigmoid",     "tanh",      "sin",
      "cos",     "exp",       "log",         "sqrt",      "neg",
      "erf",     "identity",  "clone",       "relu6",     "hardtanh",
      "clamp",   "softmax",   "log_softmax", "dropout",   "flatten",
      "reshape", "view",      "transpose",   "permute",   "select",
      "slice",   "unsqueeze", "squeeze",     "cat",       "sum",
      "mean",    "add",       "sub",         "mul",       "div",
      "pow",     "matmul",    "maxpool2d",   "avgpool2d", "adaptive_avgpool2d"};
  return t;
}

// Display kinds, named like the PyTorch modules they stand for.
std::string kind_of(const std::string& type) {
  static const std::map<std::string, std::string> k{{"sequential", "Sequential"},
                                                    {"function", "Function"},
                                                    {"residual", "Residual"},
                                                    {"dense_block", "DenseBlock"},
                                                    {"transition", "Transition"},
                                                    {"lstm", "LSTM"},
                                                    {"attention", "Attention"},
                                                    {"linear", "Linear"},
                                                    {"conv2d", "Conv2d"},
                                                    {"batchnorm2d", "BatchNorm2d"},
                                                    {"layernorm", "LayerNorm"},
                                                    {"embedding", "Embedding"},
                                                    {"relu", "ReLU"},
                                                    {"gelu", "GELU"},
                                                    {"sigmoid", "Sigmoid"},
                                                    {"tanh", "Tanh"},
                                                    {"relu6", "ReLU6"},
                                                    {"hardtanh", "Hardtanh"},
                                                    {"softmax", "Softmax"},
                                                    {"log_softmax", "LogSoftmax"},
                                                    {"dropout", "Dropout"},
                                                    {"flatten", "Flatten"},
                                                    {"identity", "Identity"},
                                                    {"maxpool2d", "MaxPool2d"},
                                                    {"avgpool2d", "AvgPool2d"},
                                                    {"adaptive_avgpool2d", "AdaptiveAvgPool2d"}};
  auto it = k.find(type);
  if (it != k.end()) return it->second;
  if (const OpSchema* row = OpTable::instance().find_native_layer(type); row && row->module_class)
    return row->module_class;
  std::string s = type;
  if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return s;
}

std::string known_types() {
  std::vector<std::string> all;
  for (const auto* set : {&container_types(), &block_types(), &param_types(), &simple_types()})
    all.insert(all.end(), set->begin(), set->end());
  all.push_back("repeat");
  for (const auto& type : OpTable::instance().types())
    if (const char* layer = OpTable::instance().find(type)->native_layer) all.push_back(layer);
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

std::int64_t get_int(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) throw JsonError(where, std::string("missing \"") + key + "\"");
  const json& v = j.at(key);
  if (!v.is_number_integer())
    throw JsonError(where, std::string("\"") + key + "\" must be an integer, got " + v.dump());
  return v.get<std::int64_t>();
}

std::int64_t get_int(const json& j, const char* key, const std::string& where,
                     std::int64_t fallback) {
  return j.contains(key) ? get_int(j, key, where) : fallback;
}

double get_double(const json& j, const char* key, const std::string& where, double fallback) {
  if (!j.contains(key)) return fallback;
  const json& v = j.at(key);
  if (!v.is_number())
    throw JsonError(where, std::string("\"") + key + "\" must be a number, got " + v.dump());
  return v.get<double>();
}

bool get_bool(const json& j, const char* key, const std::string& where, bool fallback) {
  if (!j.contains(key)) return fallback;
  const json& v = j.at(key);
  if (!v.is_boolean())
    throw JsonError(where, std::string("\"") + key + "\" must be true or false, got " + v.dump());
  return v.get<bool>();
}

std::string get_string(const json& j, const char* key, const std::string& where,
                       const std::string& fallback) {
  if (!j.contains(key)) return fallback;
  const json& v = j.at(key);
  if (!v.is_string())
    throw JsonError(where, std::string("\"") + key + "\" must be a string, got " + v.dump());
  return v.get<std::string>();
}

std::vector<std::int64_t> get_int_list(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) throw JsonError(where, std::string("missing \"") + key + "\"");
  const json& v = j.at(key);
  if (v.is_number_integer()) return {v.get<std::int64_t>()};
  if (!v.is_array() ||
      !std::all_of(v.begin(), v.end(), [](const json& e) { return e.is_number_integer(); }))
    throw JsonError(where,
                    std::string("\"") + key + "\" must be a list of integers, got " + v.dump());
  return v.get<std::vector<std::int64_t>>();
}

std::vector<std::int64_t> get_ints(const json& j, const char* key, const std::string& where,
                                   std::size_t n, std::int64_t fallback) {
  if (!j.contains(key)) return std::vector<std::int64_t>(n, fallback);
  auto v = get_int_list(j, key, where);
  if (v.size() == 1) return std::vector<std::int64_t>(n, v[0]);
  if (v.size() != n)
    throw JsonError(where, std::string("\"") + key + "\" must be an integer or a list of " +
                               std::to_string(n) + ", got " + j.at(key).dump());
  return v;
}

Builder::Builder(Model& model, std::uint64_t seed)
    : model_(model), gen_(stream_seed(seed, Stream::parameters)) {
  root_.module = &model_.root;
}

Values Builder::expect(const Values& in, std::size_t n, const std::string& where,
                       const std::string& what) {
  if (in.size() != n)
    throw JsonError(where, "takes " + std::to_string(n) + " input" + (n == 1 ? "" : "s") +
                               (what.empty() ? "" : " (" + what + ")") + ", got " +
                               std::to_string(in.size()));
  return in;
}

std::string Builder::unique_name(const std::string& base) {
  if (used_names_.insert(base).second) return base;
  // Remembering the next suffix per base keeps 100 "add"s in a module linear, not quadratic.
  std::int64_t& k = next_suffix_[base];
  for (k = std::max<std::int64_t>(k, 1);; ++k) {
    std::string candidate = base + "_" + std::to_string(k);
    if (used_names_.insert(candidate).second) return candidate;
  }
}

Values Builder::emit(Scope& s, const std::string& type, const Values& inputs, Attributes attrs,
                     const std::string& hint, int outputs) {
  const std::string& mp = s.module->path;
  OpNode op;
  if (hint.empty() && !mp.empty() && !used_names_.count(mp)) {
    op.name = mp;
    used_names_.insert(mp);
  } else {
    const std::string h = hint.empty() ? type : hint;
    op.name = unique_name(mp.empty() ? h : mp + "." + h);
  }
  op.op_type = type;
  op.inputs = inputs;
  op.attrs = std::move(attrs);
  op.module = mp;
  for (int k = 0; k < outputs; ++k)
    op.outputs.push_back(outputs == 1 ? op.name : op.name + ":" + std::to_string(k));
  Values out = op.outputs;
  model_.ops.push_back(std::move(op));
  return out;
}

Values Builder::emit_root(const std::string& type, const Values& inputs, Attributes attrs,
                          const std::string& hint) {
  return emit(root_, type, inputs, std::move(attrs), hint);
}

std::string Builder::param(Scope& s, const std::string& local, const Shape& shape,
                           const std::function<Tensor()>& make, bool requires_grad, bool buffer) {
  const std::string name = s.def.empty() ? local : s.def + "." + local;
  auto it = param_index_.find(name);
  if (it != param_index_.end()) {
    const auto& existing = model_.parameters[it->second];
    if (existing.initial.shape() != shape)
      throw JsonError(s.module->path, "parameter '" + name + "' is shared with shape " +
                                          shape_str(existing.initial.shape()) +
                                          " but used here with shape " + shape_str(shape));
    return name;
  }
  ParameterInfo p;
  p.name = name;
  p.initial = make();
  p.requires_grad = requires_grad;
  p.is_buffer = buffer;
  param_index_.emplace(name, model_.parameters.size());
  model_.parameters.push_back(std::move(p));
  return name;
}

void Builder::declare_params(const json& j, const std::string& where, Scope& s) {
  if (!j.contains("parameters")) return;
  const json& ps = j.at("parameters");
  const std::string w = where + ".parameters";
  if (!ps.is_object()) throw JsonError(w, "must be an object: {\"name\": spec}");
  for (const auto& [key, spec] : ps.items()) {
    const std::string pw = w + "." + key;
    Shape shape;
    json init = spec;
    bool requires_grad = true;
    if (spec.is_object()) {
      if (spec.contains("shape")) shape = get_int_list(spec, "shape", pw);
      init = spec.contains("init") ? spec.at("init") : json("normal");
      requires_grad = get_bool(spec, "requires_grad", pw, true);
    }
    std::function<Tensor()> make;
    if (init.is_number()) {
      const double v = init.get<double>();
      make = [shape, v] { return Tensor::full(shape, v); };
    } else if (init == "zeros" || init == "ones") {
      const double v = init == "ones" ? 1.0 : 0.0;
      make = [shape, v] { return Tensor::full(shape, v); };
    } else if (init == "normal") {
      make = [this, shape] { return normal_tensor(shape, 0.0, 1.0, gen_); };
    } else if (init.is_object() && (init.contains("normal") || init.contains("uniform"))) {
      const bool normal = init.contains("normal");
      const json& ab = init.at(normal ? "normal" : "uniform");
      if (!ab.is_array() || ab.size() != 2 || !ab[0].is_number() || !ab[1].is_number())
        throw JsonError(pw, "init {\"normal\"|\"uniform\": [a, b]} needs two numbers");
      const double a = ab[0].get<double>(), b = ab[1].get<double>();
      make = [this, shape, normal, a, b] {
        return normal ? normal_tensor(shape, a, b, gen_) : uniform_tensor(shape, a, b, gen_);
      };
    } else {
      throw JsonError(pw,
                      "init must be a number, \"zeros\", \"ones\", \"normal\", "
                      "{\"normal\": [mean, std]} or {\"uniform\": [low, high]}, got " +
                          init.dump());
    }
    s.params[key] = param(s, key, shape, make, requires_grad);
  }
}

std::string Builder::lookup(const Scope& s, const std::string& name,
                            const std::string& where) const {
  for (const Scope* p = &s; p; p = p->up) {
    auto it = p->names.find(name);
    if (it != p->names.end()) return it->second;
  }
  std::string known;
  for (const Scope* p = &s; p; p = p->up)
    for (const auto& [k, v] : p->names) known += (known.empty() ? "" : ", ") + k;
  throw JsonError(where, "unknown value \"" + name +
                             "\" (names visible here: " + (known.empty() ? "none" : known) + ")");
}

std::string Builder::lookup_param(const Scope& s, const std::string& name,
                                  const std::string& where) const {
  for (const Scope* p = &s; p; p = p->up) {
    auto it = p->params.find(name);
    if (it != p->params.end()) return it->second;
  }
  throw JsonError(where, "unknown parameter \"" + name +
                             "\" (declare it in an enclosing layer's \"parameters\")");
}

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
    return attention(j, w, c, in);
  }
  if (param_types().count(type)) {
    Scope c = child(s, name, kind_of(type), &j, w, naming);
    return param_layer(type, j, w, c, in);
  }
  if (simple_types().count(type) || OpTable::instance().find_native_layer(type)) {
    if (given.empty()) return simple_op(type, j, w, s, in, false);
    Scope c = child(s, name, kind_of(type), &j, w, naming);
    return simple_op(type, j, w, c, in, true);
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
