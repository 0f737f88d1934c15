#include "engine/model/finalize.hpp"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "engine/autograd/grad_mode.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/model/op_registry.hpp"
#include "engine/tensor/generator.hpp"

namespace ckpt {

namespace {

constexpr int kStatic = -2;  // parameters, buffers, constants: captured, never passed
constexpr int kInput = -1;   // model inputs: made before the first op

struct Analysis {
  std::vector<Module*> modules;  // pre-order, root first
  std::vector<int> parent;       // index into modules, -1 for the root
  std::vector<int> depth;
  std::vector<int> op_module;  // op -> innermost module
  std::vector<std::int64_t> count;
  std::vector<std::unordered_set<std::string>> in_set, out_set, param_set;
};

void walk(Module* m, int parent, int depth, Analysis& a) {
  const int me = static_cast<int>(a.modules.size());
  a.modules.push_back(m);
  a.parent.push_back(parent);
  a.depth.push_back(depth);
  for (auto& c : m->children) walk(c.get(), me, depth + 1, a);
}

// Lowest common ancestor of two modules.
int common(const Analysis& a, int x, int y) {
  while (a.depth[x] > a.depth[y]) x = a.parent[x];
  while (a.depth[y] > a.depth[x]) y = a.parent[y];
  while (x != y) {
    x = a.parent[x];
    y = a.parent[y];
  }
  return x;
}

[[noreturn]] void fail(const Model& m, const std::string& what) {
  throw std::invalid_argument(m.source + ": " + what);
}

void add_once(std::unordered_set<std::string>& set, std::vector<std::string>& list,
              const std::string& v) {
  if (set.insert(v).second) list.push_back(v);
}

// Each module's index by path (a path used twice is an error), its analysis sets sized and its
// derived fields cleared.
std::unordered_map<std::string, int> index_modules(const Model& model, Analysis& a) {
  const std::size_t nm = a.modules.size();
  std::unordered_map<std::string, int> by_path;
  for (std::size_t i = 0; i < nm; ++i) {
    if (!by_path.emplace(a.modules[i]->path, static_cast<int>(i)).second)
      fail(model, "module path '" + a.modules[i]->path + "' is used twice");
  }
  a.count.assign(nm, 0);
  a.in_set.resize(nm);
  a.out_set.resize(nm);
  a.param_set.resize(nm);
  for (Module* m : a.modules) {
    m->first_op = 0;
    m->end_op = 0;
    m->inputs.clear();
    m->outputs.clear();
    m->parameters.clear();
  }
  return by_path;
}

// Every op's module, and each module's range of ops (first, end) and op count.
void assign_op_ranges(const Model& model, const std::unordered_map<std::string, int>& by_path,
                      Analysis& a) {
  const auto nops = static_cast<std::int64_t>(model.ops.size());
  a.op_module.resize(model.ops.size());
  for (std::int64_t i = 0; i < nops; ++i) {
    const OpNode& op = model.ops[static_cast<std::size_t>(i)];
    auto it = by_path.find(op.module);
    if (it == by_path.end())
      fail(model, "node '" + op.name + "' belongs to module '" + op.module +
                      "', which is not in the module tree");
    a.op_module[static_cast<std::size_t>(i)] = it->second;
    for (int m = it->second; m >= 0; m = a.parent[m]) {
      Module* mod = a.modules[m];
      if (a.count[m] == 0) mod->first_op = i;
      mod->end_op = i + 1;
      ++a.count[m];
    }
  }
}

// Inputs: a value used by op i and made outside module M (which contains op i); outputs: the
// same use seen from the producer's side, and the model's outputs and loss; parameters used.
void collect_module_values(const Model& model, const std::unordered_map<std::string, int>& producer,
                           Analysis& a) {
  for (std::size_t i = 0; i < model.ops.size(); ++i) {
    const int mi = a.op_module[i];
    for (const auto& v : model.ops[i].inputs) {
      if (v.empty()) continue;
      const int p = producer.at(v);
      if (p == kStatic) {
        for (int m = mi; m >= 0; m = a.parent[m]) {
          Module* mod = a.modules[m];
          add_once(a.param_set[m], mod->parameters, v);
          const auto& passed = mod->passed_parameters;
          if (std::find(passed.begin(), passed.end(), v) != passed.end())
            add_once(a.in_set[m], mod->inputs, v);
        }
        continue;
      }
      const int stop = p == kInput ? -1 : common(a, mi, a.op_module[static_cast<std::size_t>(p)]);
      for (int m = mi; m != stop && m >= 0; m = a.parent[m])
        add_once(a.in_set[m], a.modules[m]->inputs, v);
      if (p >= 0)
        for (int m = a.op_module[static_cast<std::size_t>(p)]; m != stop; m = a.parent[m])
          add_once(a.out_set[m], a.modules[m]->outputs, v);
    }
  }
  std::vector<std::string> finals = model.outputs;
  if (!model.scenario.loss_value.empty()) finals.push_back(model.scenario.loss_value);
  for (const auto& v : finals) {
    const int p = producer.at(v);
    if (p < 0) continue;
    for (int m = a.op_module[static_cast<std::size_t>(p)]; m >= 0; m = a.parent[m])
      add_once(a.out_set[m], a.modules[m]->outputs, v);
  }
}

// Whether module i can be checkpointed as one function, and why not.
void judge_checkpointable(const Model& model, const Analysis& a, std::size_t i) {
  Module* m = a.modules[i];
  for (const auto& p : m->passed_parameters)
    if (!a.param_set[i].count(p))
      fail(model,
           "module '" + m->path + "' passes parameter '" + p + "', which none of its ops uses");
  m->checkpointable = false;
  m->not_checkpointable_reason.clear();
  if (a.count[i] == 0) {
    m->not_checkpointable_reason = "it runs no op";
  } else if (a.count[i] != m->end_op - m->first_op) {
    // Name the first op inside its range that is not its own.
    std::string intruder;
    for (std::int64_t k = m->first_op; k < m->end_op && intruder.empty(); ++k) {
      int x = a.op_module[static_cast<std::size_t>(k)];
      while (x >= 0 && x != static_cast<int>(i)) x = a.parent[x];
      if (x < 0) intruder = model.ops[static_cast<std::size_t>(k)].name;
    }
    m->not_checkpointable_reason =
        "its ops are not contiguous in execution order: op '" + intruder +
        "' of another module runs between its first and last op, so it is not one function";
  } else if (m->outputs.empty()) {
    m->not_checkpointable_reason = "nothing it computes is used afterwards";
  } else {
    m->checkpointable = true;
  }
}

void analyse_modules(Model& model, const std::unordered_map<std::string, int>& producer) {
  Analysis a;
  walk(&model.root, -1, 0, a);
  const auto by_path = index_modules(model, a);
  assign_op_ranges(model, by_path, a);
  collect_module_values(model, producer, a);
  for (std::size_t i = 1; i < a.modules.size(); ++i) judge_checkpointable(model, a, i);
  model.root.first_op = 0;
  model.root.end_op = static_cast<std::int64_t>(model.ops.size());
}

// Shapes and dtypes of every value, from one forward on the meta device: each op's own shape
// rules, no arithmetic and no memory, so a model too big for this machine still loads (and a
// big one loads without computing its convolutions).
void infer_shapes(Model& model) {
  auto ledger = std::make_shared<MemoryLedger>();
  LedgerScope scope(ledger);
  DeviceScope meta(Device::meta);
  Generator gen(model.scenario.seed);
  GeneratorScope gscope(gen);
  NoGradGuard no_grad;
  std::unordered_map<std::string, Tensor> env;
  std::unordered_set<std::string> statics;
  for (const auto& p : model.parameters) statics.insert(p.name);
  for (const auto& [name, t] : model.constants) statics.insert(name);
  // Copies, because ops such as batch_norm update their buffers in place.
  for (const auto& p : model.parameters) env[p.name] = contiguous_copy(p.initial);
  for (const auto& [name, t] : model.constants) env[name] = t;
  for (const auto& in : model.inputs)
    env[in.name] = Tensor::zeros(resolve_input_shape(in, model.scenario.batch), in.dtype);
  std::unordered_map<std::string, std::size_t> last_use;
  for (std::size_t i = 0; i < model.ops.size(); ++i)
    for (const auto& v : model.ops[i].inputs) last_use[v] = i;
  auto record = [&](const std::string& name, const Tensor& t) {
    model.values[name] = ValueInfo{name, t.shape(), t.dtype()};
  };
  model.values.clear();
  for (const auto& [name, t] : env) record(name, t);
  for (std::size_t i = 0; i < model.ops.size(); ++i) {
    const OpNode& op = model.ops[i];
    TensorList xs;
    for (const auto& v : op.inputs) xs.push_back(v.empty() ? Tensor() : env.at(v));
    TensorList ys;
    try {
      ys = run_op_node(*find_op_kind(op.op_type), op, xs);
    } catch (const std::exception& e) {
      fail(model, e.what());
    }
    if (ys.size() != op.outputs.size())
      fail(model, "node '" + op.name + "' (" + op.op_type + ") makes " + std::to_string(ys.size()) +
                      " outputs, the graph names " + std::to_string(op.outputs.size()));
    for (std::size_t k = 0; k < ys.size(); ++k) {
      record(op.outputs[k], ys[k]);
      env[op.outputs[k]] = ys[k];
    }
    for (const auto& v : op.inputs) {
      auto it = last_use.find(v);
      if (it != last_use.end() && it->second == i && !statics.count(v)) env.erase(v);
    }
  }
}

}  // namespace

Shape resolve_input_shape(const InputInfo& in, std::int64_t batch) {
  Shape s = in.shape;
  for (auto& d : s)
    if (d < 0) d *= -batch;
  return s;
}

void finalize_model(Model& model) {
  std::unordered_map<std::string, int> producer;
  auto define = [&](const std::string& v, int who, const std::string& by) {
    if (v.empty()) fail(model, by + " has a value with an empty name");
    if (!producer.emplace(v, who).second)
      fail(model, "value '" + v + "' is defined twice (again by " + by + ")");
  };
  for (const auto& in : model.inputs) define(in.name, kInput, "input '" + in.name + "'");
  for (const auto& p : model.parameters) {
    if (!p.initial.defined()) fail(model, "parameter '" + p.name + "' has no value");
    define(p.name, kStatic, "parameter '" + p.name + "'");
  }
  for (const auto& [name, t] : model.constants) define(name, kStatic, "constant '" + name + "'");
  std::unordered_set<std::string> op_names;
  for (std::size_t i = 0; i < model.ops.size(); ++i) {
    const OpNode& op = model.ops[i];
    if (!op_names.insert(op.name).second) fail(model, "node name '" + op.name + "' is used twice");
    if (!find_op_kind(op.op_type))
      fail(model, "node '" + op.name + "': unknown op kind '" + op.op_type + "'");
    for (const auto& v : op.inputs) {
      if (v.empty()) continue;
      auto it = producer.find(v);
      if (it == producer.end())
        fail(model, "node '" + op.name + "' uses value '" + v +
                        "', which no input, parameter, constant or earlier node makes");
    }
    for (const auto& v : op.outputs) define(v, static_cast<int>(i), "node '" + op.name + "'");
  }
  if (model.outputs.empty()) fail(model, "the model has no output");
  for (const auto& v : model.outputs)
    if (!producer.count(v)) fail(model, "output '" + v + "' is not a value of the graph");
  if (model.scenario.loss == LossKind::model && !producer.count(model.scenario.loss_value))
    fail(model, "loss value '" + model.scenario.loss_value + "' is not a value of the graph");
  analyse_modules(model, producer);
  infer_shapes(model);
  model.reindex();
}

}  // namespace ckpt
