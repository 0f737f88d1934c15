// Capture import: each recorded ATen op, as its row's rule sees it (AtenNode), and the engine ops
// the rule emits, run on meta probes so that every output's shape and dtype is checked against
// what PyTorch recorded.
#include <cmath>
#include <limits>

#include "engine/model/capture_import.hpp"
#include "engine/model/op_registry.hpp"

namespace ckpt::capture_import {

class CapturedOp final : public AtenNode {
 public:
  CapturedOp(Importer& im, const json& op, std::size_t index)
      : im_(im), op_(op), where_("ops[" + std::to_string(index) + "]") {
    name_ = op.at("op").get<std::string>();
    overload_ = op.contains("overload") && op.at("overload").is_string()
                    ? op.at("overload").get<std::string>()
                    : "default";
    module_ = op.contains("module") && op.at("module").is_string()
                  ? op.at("module").get<std::string>()
                  : "";
    if (!op.contains("args") || !op.at("args").is_object())
      fail("needs \"args\", an object of the op's arguments by name");
    if (!op.contains("outputs") || !op.at("outputs").is_array())
      fail("needs \"outputs\", a list of value ids");
    for (const auto& o : op.at("outputs")) {
      if (o.is_null()) {
        outputs_.push_back(-1);
        continue;
      }
      if (!o.is_number_integer() || o.get<std::int64_t>() < 0 ||
          o.get<std::int64_t>() >= static_cast<std::int64_t>(im_.recorded_.size()))
        fail("an output is not a value id: " + o.dump());
      const std::int64_t id = o.get<std::int64_t>();
      if (im_.graph_.count(id)) fail("value " + std::to_string(id) + " is made twice");
      outputs_.push_back(id);
    }
    if (!im_.modules_.count(module_) && !module_.empty())
      fail("module '" + module_ + "' is not in \"modules\"");
  }

  const std::string& name() const override { return name_; }
  const std::string& overload() const override { return overload_; }
  const std::string& module() const override { return module_; }

  bool has(const std::string& a) const override { return arg_or_null(a) != nullptr; }
  bool is_tensor(const std::string& a) const override {
    const json* v = arg_or_null(a);
    return v && v->is_object() && v->contains("t");
  }
  std::string tensor(const std::string& a) const override { return tensor_of(arg(a), a); }
  std::vector<std::string> tensors(const std::string& a) const override {
    const json& v = arg(a);
    if (!v.is_array()) fail("argument '" + a + "' must be a list of tensors");
    std::vector<std::string> out;
    for (const auto& t : v) out.push_back(tensor_of(t, a));
    return out;
  }
  double number(const std::string& a) const override { return number_of(arg(a), a); }
  std::int64_t integer(const std::string& a) const override {
    const json& v = arg(a);
    if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
    if (!v.is_number_integer()) fail("argument '" + a + "' must be an integer, got " + v.dump());
    return v.get<std::int64_t>();
  }
  std::vector<std::int64_t> ints(const std::string& a) const override {
    const json& v = arg(a);
    if (v.is_number_integer()) return {v.get<std::int64_t>()};
    if (!v.is_array()) fail("argument '" + a + "' must be a list of integers, got " + v.dump());
    std::vector<std::int64_t> out;
    for (const auto& x : v) {
      if (!x.is_number_integer())
        fail("argument '" + a + "' must be a list of integers, got " + v.dump());
      out.push_back(x.get<std::int64_t>());
    }
    return out;
  }
  std::string text(const std::string& a) const override {
    const json& v = arg(a);
    if (v.is_string()) return v.get<std::string>();
    for (const char* key : {"dtype", "enum", "device"})
      if (v.is_object() && v.contains(key) && v.at(key).is_string())
        return v.at(key).get<std::string>();
    fail("argument '" + a + "' must be a string, a dtype or an enum, got " + v.dump());
  }

  const Tensor& probe(const std::string& graph) const override {
    auto it = im_.probes_.find(graph);
    if (it == im_.probes_.end()) fail("value '" + graph + "' has no shape (internal)");
    return it->second;
  }
  std::size_t output_count() const override { return outputs_.size(); }
  const Shape& output_shape(std::size_t k) const override { return recorded(k).shape; }
  DType output_dtype(std::size_t k) const override { return recorded(k).dtype; }

  std::vector<std::string> emit_op(const std::string& type, const std::vector<std::string>& inputs,
                                   Attributes attrs, const std::vector<int>& outs) override {
    const OpKind* kind = find_op_kind(type);
    if (!kind) fail("engine op '" + type + "' does not exist (internal)");
    OpNode op;
    op.module = module_;
    op.name = im_.op_name(module_, type);
    op.op_type = type;
    op.inputs = inputs;
    op.attrs = std::move(attrs);
    TensorList xs;
    for (const auto& v : inputs) {
      if (v.empty()) {
        xs.emplace_back();
        continue;
      }
      if (im_.pending_.count(v)) fail(pending_use(v));
      xs.push_back(probe(v));
    }
    const TensorList ys = [&] {
      DeviceScope meta(Device::meta);
      return run_op_node(*kind, op, xs);
    }();
    for (std::size_t k = 0; k < ys.size(); ++k)
      op.outputs.push_back(k == 0 ? op.name : op.name + ":" + std::to_string(k));
    for (std::size_t k = 0; k < ys.size(); ++k) {
      im_.probes_[op.outputs[k]] = ys[k];
      im_.producers_[op.outputs[k]] = Producer{op.op_type, op.inputs, op.attrs};
      const int out = k < outs.size() ? outs[k] : -1;
      if (out >= 0) bind(static_cast<std::size_t>(out), op.outputs[k], type);
    }
    im_.m_.ops.push_back(op);
    return im_.m_.ops.back().outputs;
  }
  void define(std::size_t k, const std::string& graph) override {
    if (im_.pending_.count(graph)) fail(pending_use(graph));
    bind(k, graph, "");
  }
  void define_pending(std::size_t k, Attributes info) override {
    const std::int64_t id = output_id(k);
    std::string graph = "~";
    graph += std::to_string(id);
    graph += " (";
    graph += name_;
    graph += ")";
    im_.pending_[graph] = std::move(info);
    im_.graph_[id] = graph;
  }
  const Attributes* pending(const std::string& graph) const override {
    auto it = im_.pending_.find(graph);
    return it == im_.pending_.end() ? nullptr : &it->second;
  }
  const Producer* producer(const std::string& graph) const override {
    auto it = im_.producers_.find(graph);
    return it == im_.producers_.end() ? nullptr : &it->second;
  }
  bool is_parameter(const std::string& graph) const override {
    return im_.statics_.count(graph) > 0;
  }
  void note_index_range(const std::string& graph, std::int64_t classes) override {
    im_.index_ranges_.emplace(graph, classes);
  }
  std::string failure_message(const std::string& what) const override {
    return im_.source_ + ": " + where_ + " '" + name_ + "." + overload_ + "' in module '" +
           (module_.empty() ? "<root>" : module_) + "' (PyTorch " + im_.torch_ + "): " + what;
  }

  // The outputs no rule defined: a later use is an error that says so.
  void leave_the_rest() {
    for (std::size_t k = 0; k < outputs_.size(); ++k)
      if (outputs_[k] >= 0 && !im_.graph_.count(outputs_[k]))
        im_.unavailable_[outputs_[k]] = "output " + std::to_string(k) + " of " + where_ + " '" +
                                        name_ + "' is not computed by the engine";
  }

 private:
  const json* arg_or_null(const std::string& a) const {
    const json& args = op_.at("args");
    auto it = args.find(a);
    return it == args.end() || it->is_null() ? nullptr : &*it;
  }
  const json& arg(const std::string& a) const {
    const json* v = arg_or_null(a);
    if (!v) fail("needs its argument '" + a + "'");
    return *v;
  }
  std::string tensor_of(const json& v, const std::string& a) const {
    if (!v.is_object() || !v.contains("t") || !v.at("t").is_number_integer())
      fail("argument '" + a + "' must be a tensor {\"t\": id}, got " + v.dump());
    return im_.graph_of(v.at("t").get<std::int64_t>(), failure_message("argument '" + a + "'"));
  }
  double number_of(const json& v, const std::string& a) const {
    if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
    if (v.is_number()) return v.get<double>();
    if (v.is_object() && v.contains("float") && v.at("float").is_string()) {
      const std::string s = v.at("float").get<std::string>();
      if (s == "inf") return std::numeric_limits<double>::infinity();
      if (s == "-inf") return -std::numeric_limits<double>::infinity();
      if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    }
    fail("argument '" + a + "' must be a number, got " + v.dump());
  }
  std::int64_t output_id(std::size_t k) const {
    if (k >= outputs_.size() || outputs_[k] < 0)
      fail("has no tensor output " + std::to_string(k) + " (internal)");
    return outputs_[k];
  }
  const Recorded& recorded(std::size_t k) const {
    return im_.recorded_[static_cast<std::size_t>(output_id(k))];
  }
  // Output k is `graph`, whose shape and dtype must be what PyTorch recorded.
  void bind(std::size_t k, const std::string& graph, const std::string& type) {
    const std::int64_t id = output_id(k);
    const Tensor& got = probe(graph);
    const Recorded& want = recorded(k);
    if (!want.unsupported_dtype.empty())
      fail("output " + std::to_string(k) + " has dtype '" + want.unsupported_dtype +
           "', which the engine does not have");
    if (got.shape() != want.shape || got.dtype() != want.dtype)
      fail((type.empty() ? "the value" : "engine op '" + type + "'") + " is " +
           dtype_name(got.dtype()) + shape_str(got.shape()) + " where PyTorch recorded " +
           dtype_name(want.dtype) + shape_str(want.shape) + " (output " + std::to_string(k) + ")");
    im_.graph_[id] = graph;
    if (want.storage >= 0) im_.storage_of_.emplace(graph, want.storage);
  }
  std::string pending_use(const std::string& graph) const {
    return "reads " + graph.substr(1) +
           ", a value the engine does not compute (only dropout's noise and values autograd "
           "alone reads are made without an engine op)";
  }

  Importer& im_;
  const json& op_;
  std::string where_, name_, overload_, module_;
  std::vector<std::int64_t> outputs_;
};

const std::string& Importer::graph_of(std::int64_t id, const std::string& where) const {
  auto it = graph_.find(id);
  if (it != graph_.end()) return it->second;
  auto why = unavailable_.find(id);
  if (why != unavailable_.end()) throw std::invalid_argument(where + ": " + why->second);
  throw std::invalid_argument(where + ": value " + std::to_string(id) +
                              " is made by no earlier op and is no input, parameter, buffer or "
                              "constant");
}

std::string Importer::op_name(const std::string& module, const std::string& type) {
  const std::string base = module.empty() ? type : module + "." + type;
  std::int64_t& count = name_counts_[base];
  return count++ == 0 ? base : base + "_" + std::to_string(count);
}

void Importer::translate(std::size_t index) {
  const json& op = doc_.at("ops")[index];
  const std::string where = "ops[" + std::to_string(index) + "]";
  if (!op.is_object() || !op.contains("op") || !op.at("op").is_string())
    throw CaptureError(where, "needs \"op\", the ATen op's qualified name");
  CapturedOp node(*this, op, index);
  const AtenRule* rule = OpTable::instance().aten_rule(node.name());
  if (!rule)
    node.fail("this ATen op has no translation (ckptlab-cli capture-ops lists the ones that do)");
  try {
    rule->translate(node);
  } catch (const std::exception& e) {
    // Whatever the engine throws while translating (a shape rule) is this op's error.
    const std::string what = e.what();
    if (what.rfind(source_ + ":", 0) == 0) throw;
    node.fail(what);
  }
  node.leave_the_rest();
}

}  // namespace ckpt::capture_import
