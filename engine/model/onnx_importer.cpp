// ONNX import: the Importer's walk over the graph: opsets, initializers, inputs, node order and
// module scopes. The per-op translation is in onnx_ops.cpp, tensor reading in onnx_tensors.cpp.
#include <algorithm>
#include <queue>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "engine/kernels/kernels.hpp"
#include "engine/model/load_notes.hpp"
#include "engine/model/onnx_import.hpp"
#include "engine/model/onnx_tensors.hpp"
#include "engine/tensor/generator.hpp"

namespace ckpt::onnx_import {

Importer::Importer(Model& model, const onnx::ModelProto& proto, std::string source,
                   std::map<std::string, Tensor> bind, std::int64_t batch)
    : m_(model), proto_(proto), source_(std::move(source)), bind_(std::move(bind)), batch_(batch) {}

void Importer::fail(const std::string& what) const {
  throw std::invalid_argument(source_ + ": " + what);
}

void Importer::fail(const onnx::NodeProto& n, const std::string& what) const {
  throw std::invalid_argument(source_ + ": node '" + n.name() + "' (" + n.op_type() + "): " + what);
}

void Importer::read_opset() {
  for (const auto& o : proto_.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset_ = o.version();
  if (opset_ == 0) fail("the model imports no version of the default ONNX opset");
  if (opset_ < 11 || opset_ > 20)
    fail("opset " + std::to_string(opset_) + " is not supported (opsets 11 to 20 are)");
}

std::set<std::string> Importer::buffers_named_by_file() const {
  std::set<std::string> names;
  for (const auto& prop : proto_.metadata_props()) {
    if (prop.key() != kOnnxBuffersKey) continue;
    const std::string what = std::string("metadata '") + kOnnxBuffersKey + "'";
    nlohmann::json list;
    try {
      list = nlohmann::json::parse(prop.value());
    } catch (const std::exception&) {
      fail(what + " is not JSON (a list of initializer names): '" + prop.value().substr(0, 80) +
           "'");
    }
    if (!list.is_array()) fail(what + " is not a JSON list of initializer names");
    for (const auto& n : list) {
      if (!n.is_string()) fail(what + " holds " + n.dump() + ", not an initializer name");
      names.insert(n.get<std::string>());
    }
  }
  return names;
}

std::map<std::string, ParameterInit> Importer::parameter_inits() const {
  const auto& g = proto_.graph();
  std::map<std::string, const onnx::TensorProto*> initializers;
  for (const auto& init : g.initializer()) initializers.emplace(init.name(), &init);
  std::map<std::string, ParameterInit> out;
  for (const auto& n : g.node()) {
    const OnnxRule* rule = OpTable::instance().onnx_rule(n.op_type(), opset_);
    if (!rule) continue;
    for (std::size_t i = 0; i < rule->parameter_init.size() && i < std::size_t(n.input_size());
         ++i) {
      const std::string& name = n.input(static_cast<int>(i));
      if (!initializers.count(name) || out.count(name)) continue;
      ParameterInit init{.kind = rule->parameter_init[i], .layer = n.op_type()};
      // A bias is drawn with its layer's weight's fan_in: input 1's numel / size(0).
      if (init.kind == InitKind::bias && n.input_size() > 1)
        if (auto w = initializers.find(n.input(1));
            w != initializers.end() && w->second->dims_size() >= 2 && w->second->dims(0) > 0) {
          const Shape ws(w->second->dims().begin(), w->second->dims().end());
          init.fan_in = shape_numel(ws) / ws[0];
        }
      out.emplace(name, init);
    }
  }
  return out;
}

void Importer::read_initializers() {
  const auto& g = proto_.graph();
  const std::set<std::string> named = buffers_named_by_file();
  std::set<std::string> initializers;
  for (const auto& init : g.initializer()) initializers.insert(init.name());
  for (const auto& name : named)
    if (!initializers.count(name))
      m_.load_notes.warnings.push_back(std::string("the file's ") + kOnnxBuffersKey + " names '" +
                                       name + "', which is no initializer of the graph");
  std::set<std::string> used;
  for (const auto& n : g.node())
    for (const auto& i : n.input()) used.insert(i);
  for (const auto& o : g.output()) used.insert(o.name());
  std::unordered_map<std::string, const ParameterInfo*> shared;
  if (weights_of_)
    for (const auto& p : weights_of_->parameters) shared.emplace(p.name, &p);
  std::map<std::string, ParameterInit> inits;  // of the weights the file lacks, by their layers
  for (const auto& init : g.initializer()) {
    if (values_.count(init.name())) fail("initializer '" + init.name() + "' is defined twice");
    const auto same = shared.find(init.name());
    const bool reuse = same != shared.end() && same->second->initial.shape() ==
                                                   Shape(init.dims().begin(), init.dims().end());
    const std::string absent = reuse ? "" : absent_data(init, source_);
    if (!used.count(init.name())) continue;
    Tensor t;
    std::optional<ParameterInit> made_at_run;
    if (reuse) {
      t = same->second->initial;
      made_at_run = same->second->made_at_run;
    } else if (!absent.empty()) {
      const bool f64 = init.data_type() == onnx::TensorProto_DataType_DOUBLE;
      if (!f64 && init.data_type() != onnx::TensorProto_DataType_FLOAT)
        fail("initializer '" + init.name() + "' (" + type_name(init.data_type()) + "): " + absent +
             "; only floating weights can be made up for a run, not the graph's shapes and "
             "indices");
      if (inits.empty()) inits = parameter_inits();
      made_at_run = inits[init.name()];
      DeviceScope meta(Device::meta);
      t = Tensor::empty(Shape(init.dims().begin(), init.dims().end()),
                        f64 ? DType::f64 : DType::f32);
      if (m_.load_notes.weights_absent.empty()) m_.load_notes.weights_absent = absent;
    } else {
      t = init.data_location() == onnx::TensorProto_DataLocation_EXTERNAL
              ? tensor_from_proto(with_external_data(init, source_), source_ + ": initializer")
              : tensor_from_proto(init, source_ + ": initializer");
    }
    if (t.dtype() != DType::f32 && t.dtype() != DType::f64) {
      // Integer initializers are shapes and indices: constants, evaluated at load time.
      define(init.name(), Value{true, "", t});
      continue;
    }
    ParameterInfo p;
    p.name = init.name();
    p.initial = t;
    p.made_at_run = made_at_run;
    const bool statistic = std::find(buffers_.begin(), buffers_.end(), p.name) != buffers_.end();
    p.is_buffer = statistic || named.count(p.name);
    p.requires_grad = !p.is_buffer;
    if (p.is_buffer)
      m_.load_notes.frozen.emplace_back(
          p.name, statistic ? "BatchNorm running statistics"
                            : std::string("buffers named by the file's ") + kOnnxBuffersKey);
    m_.parameters.push_back(p);
    define(p.name, Value{false, p.name, t});
    // The shape probes run on the meta device (emit_op), so a parameter's probe is its shape
    // alone: no copy of the weights, and BatchNorm's in-place update of its running
    // statistics touches nothing at load.
    DeviceScope meta(Device::meta);
    probes_[p.name] = Tensor::empty(t.shape(), t.dtype());
  }
}

void Importer::read_inputs() {
  const auto& g = proto_.graph();
  for (const auto& in : g.input()) {
    if (values_.count(in.name())) continue;  // an initializer listed as an input
    if (auto b = bind_.find(in.name()); b != bind_.end()) {
      define(in.name(), Value{true, "", b->second});
      continue;
    }
    const std::string w = "input '" + in.name() + "'";
    if (!in.type().has_tensor_type()) fail(w + " is not a tensor");
    const auto& tt = in.type().tensor_type();
    InputInfo info;
    info.name = in.name();
    switch (tt.elem_type()) {
      case onnx::TensorProto_DataType_FLOAT:
        info.dtype = DType::f32;
        break;
      case onnx::TensorProto_DataType_DOUBLE:
        info.dtype = DType::f64;
        break;
      case onnx::TensorProto_DataType_INT64:
        info.dtype = DType::i64;
        break;
      case onnx::TensorProto_DataType_BOOL:
        info.dtype = DType::b8;  // a mask: all false unless the run is given one
        break;
      default:
        fail(w + " has element type " + type_name(tt.elem_type()) +
             ", which is not supported (FLOAT, DOUBLE, INT64, BOOL)");
    }
    if (!tt.has_shape()) fail(w + " has no shape");
    for (int d = 0; d < tt.shape().dim_size(); ++d) {
      const auto& dim = tt.shape().dim(d);
      if (dim.has_dim_value()) {
        info.shape.push_back(dim.dim_value());
      } else if (d == 0) {
        // A symbolic batch: shapes are evaluated at the requested batch (1 by default).
        info.shape.push_back(batch_ > 0 ? batch_ : 1);
        dynamic_batch_ = true;
      } else {
        fail(w + " has a symbolic dimension " + std::to_string(d) + " ('" + dim.dim_param() +
             "'); only the first may be");
      }
    }
    info.batched = !info.shape.empty();
    info.requires_grad = false;
    m_.inputs.push_back(info);
    DeviceScope meta(Device::meta);  // an input is known by its shape only (see emit_op)
    define(info.name, Value{false, info.name, Tensor::zeros(info.shape, info.dtype)});
    probes_[info.name] = values_[info.name].probe;
  }
  if (m_.inputs.empty()) fail("the graph has no input");
  m_.scenario.batch = m_.inputs[0].shape.empty() ? 1 : m_.inputs[0].shape[0];
  m_.scenario.batch_fixed = true;
}

std::vector<const onnx::NodeProto*> Importer::topological_order() const {
  const auto& g = proto_.graph();
  const int n = g.node_size();
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < n; ++i)
    for (const auto& o : g.node(i).output()) {
      if (o.empty()) continue;
      if (!producer.emplace(o, i).second || values_.count(o))
        fail(g.node(i), "value '" + o + "' is made twice");
    }
  std::vector<int> pending(static_cast<std::size_t>(n), 0);
  std::vector<std::vector<int>> users(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    std::set<int> deps;
    for (const auto& in : g.node(i).input()) {
      auto it = producer.find(in);
      if (it != producer.end()) deps.insert(it->second);
    }
    for (int d : deps) {
      users[static_cast<std::size_t>(d)].push_back(i);
      ++pending[static_cast<std::size_t>(i)];
    }
  }
  // Kahn's algorithm, keeping the file's order among ready nodes.
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (int i = 0; i < n; ++i)
    if (pending[static_cast<std::size_t>(i)] == 0) ready.push(i);
  std::vector<const onnx::NodeProto*> order;
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    order.push_back(&g.node(i));
    for (int u : users[static_cast<std::size_t>(i)])
      if (--pending[static_cast<std::size_t>(u)] == 0) ready.push(u);
  }
  if (static_cast<int>(order.size()) != n) {
    for (int i = 0; i < n; ++i)
      if (pending[static_cast<std::size_t>(i)] > 0) {
        std::string waits;
        for (const auto& in : g.node(i).input())
          if (producer.count(in)) waits += (waits.empty() ? "'" : ", '") + in + "'";
        fail(g.node(i), "the graph has a cycle: this node needs " + waits +
                            ", which depend on its own output");
      }
  }
  return order;
}

std::string Importer::module_of(const onnx::NodeProto& n) {
  // PyTorch names nodes after the module call stack: /features/denseblock1/denselayer1/Concat,
  // /layer1/layer1.0/conv1/Conv. A Sequential's child is named after its parent's scope name:
  // /features/features.13/conv/conv.1/conv.1.0/Conv is features.13.conv.1.0 (MobileNetV2).
  const std::string& name = n.name();
  if (name.empty() || name[0] != '/') return "";
  std::vector<std::string> parts;
  for (std::size_t at = 1; at <= name.size();) {
    const std::size_t next = std::min(name.find('/', at), name.size());
    parts.push_back(name.substr(at, next - at));
    at = next + 1;
  }
  parts.pop_back();  // the op itself
  std::string path, previous;
  for (const auto& p : parts) {
    if (p.empty()) continue;
    const std::string child =
        !previous.empty() && p.rfind(previous + ".", 0) == 0 ? p.substr(previous.size() + 1) : p;
    path = path.empty() ? child : path + "." + child;
    previous = p;
  }
  // Every prefix is a module.
  std::string prefix;
  Module* parent = &m_.root;
  for (std::size_t at = 0; at <= path.size() && !path.empty();) {
    const std::size_t next = std::min(path.find('.', at), path.size());
    const std::string part = path.substr(at, next - at);
    prefix = prefix.empty() ? part : prefix + "." + part;
    auto it = modules_.find(prefix);
    if (it == modules_.end()) {
      auto mod = std::make_unique<Module>();
      mod->name = part.empty() ? "_" : part;
      mod->path = prefix;
      mod->definition = prefix;
      mod->kind = "Module";
      it = modules_.emplace(prefix, mod.get()).first;
      parent->children.push_back(std::move(mod));
    }
    parent = it->second;
    at = next + 1;
  }
  return path;
}

std::string Importer::op_name(const onnx::NodeProto& n) {
  const std::string module = module_of(n);
  std::string leaf = n.name().empty() ? n.op_type() : n.name().substr(n.name().rfind('/') + 1);
  for (char& c : leaf)
    if (c == '.') c = '_';
  std::string base = module.empty() ? leaf : module + "." + leaf;
  std::int64_t& count = name_counts_[base];
  return count++ == 0 ? base : base + "_" + std::to_string(count);
}

void Importer::define(const std::string& onnx_name, Value v) {
  if (onnx_name.empty()) return;
  values_[onnx_name] = std::move(v);
}

void Importer::alias(const std::string& onnx_name, const Value& v) {
  define(onnx_name, v);
}

const onnx::AttributeProto* Importer::attr(const onnx::NodeProto& n,
                                           const std::string& name) const {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

void Importer::translate(const onnx::NodeProto& n) {
  if (!n.domain().empty() && n.domain() != "ai.onnx")
    fail(n, "op domain '" + n.domain() + "' is not supported (only the default ONNX domain)");
  const OnnxRule* rule = OpTable::instance().onnx_rule(n.op_type(), opset_);
  if (!rule) {
    std::string list;
    for (const auto& o : supported()) list += (list.empty() ? "" : ", ") + o;
    const auto known = OpTable::instance().onnx_types();
    const bool other_opsets = std::binary_search(known.begin(), known.end(), n.op_type());
    fail(n, "op type '" + n.op_type() + "' is not supported" +
                (other_opsets ? " at opset " + std::to_string(opset_) : std::string()) +
                " (supported: " + list + ")");
  }
  Inputs in;
  for (const auto& name : n.input()) {
    if (name.empty()) {
      in.push_back(nullptr);
      continue;
    }
    auto it = values_.find(name);
    if (it == values_.end() && unavailable_.count(name)) fail(n, unavailable_.at(name));
    if (it == values_.end())
      fail(n, "input '" + name + "' is missing: no graph input, initializer or earlier node " +
                  "makes it");
    in.push_back(&it->second);
  }
  try {
    translate_with(*rule, n, in);
  } catch (const std::exception& e) {
    // Whatever the engine throws while translating (a shape rule, a load-time evaluation) is
    // this node's error and says so.
    const std::string what = e.what();
    if (what.rfind(source_ + ":", 0) == 0) throw;
    fail(n, what);
  }
}

void Importer::run() {
  const auto& g = proto_.graph();
  read_opset();
  for (const auto& n : g.node())
    if (const OnnxRule* rule = OpTable::instance().onnx_rule(n.op_type(), opset_))
      for (int i : rule->buffer_inputs)
        if (i < n.input_size()) buffers_.push_back(n.input(i));
  read_initializers();
  read_inputs();
  Generator gen(0);  // dropout in the shape probes
  GeneratorScope generator(gen);
  const auto order = topological_order();
  find_claims(order);
  for (const onnx::NodeProto* n : order) {
    const auto claimed = claim_of_.find(n);
    if (claimed == claim_of_.end()) {
      translate(*n);
      continue;
    }
    // A claimed node waits for its subgraph's root; there the subgraph becomes one op, or its
    // nodes are translated as they are, in order.
    const Claim& c = claims_[claimed->second];
    if (c.nodes.back() != n) continue;
    if (!fuse(c))
      for (const onnx::NodeProto* part : c.nodes) translate(*part);
  }
  for (const auto& o : g.output()) {
    auto it = values_.find(o.name());
    if (it == values_.end() && unavailable_.count(o.name()))
      fail("graph output '" + o.name() + "': " + unavailable_.at(o.name()));
    if (it == values_.end()) fail("graph output '" + o.name() + "' is made by no node");
    if (it->second.constant)
      fail("graph output '" + o.name() + "' is a constant; the engine computes no gradient for it");
    if (std::find(m_.outputs.begin(), m_.outputs.end(), it->second.graph) == m_.outputs.end())
      m_.outputs.push_back(it->second.graph);
  }
  drop_unused_ops();
  for (const std::string& why : change_order_) {
    const std::int64_t n = changes_[why];
    m_.load_notes.warnings.push_back(std::to_string(n) + (n == 1 ? " node: " : " nodes: ") + why);
  }
  // A module that is one ONNX node (or one fused subgraph) is named after that op's PyTorch
  // layer (its rule's or its pattern's).
  for (auto& [path, mod] : modules_) {
    if (!mod->children.empty() || module_node_count_[path] != 1) continue;
    if (!module_class_[path].empty()) mod->kind = module_class_[path];
  }
}

}  // namespace ckpt::onnx_import
