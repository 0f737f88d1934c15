#include "engine/model/json_builder.hpp"

#include <algorithm>
#include <cmath>

#include "engine/ops/schema/op_schema.hpp"
#include "engine/tensor/device.hpp"
#include "engine/tensor/init.hpp"

// The Builder's bookkeeping: unique names, emitting ops, declaring and finding parameters and
// values through the scopes. Walking the layer tree is in json_layer_tree.cpp, the layers
// themselves in json_layers.cpp.

namespace ckpt::json_model {

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
  if (model_.scenario.dry_run_only && requires_grad && !buffer) {
    // A model that only runs dry never reads its weights: they are shapes on the meta device
    // (Llama 3 8B's 32 GB of float32 would not fit this machine, nor be worth drawing).
    DeviceScope meta(Device::meta);
    p.initial = Tensor::empty(shape);
  } else {
    p.initial = make();
  }
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

}  // namespace ckpt::json_model
