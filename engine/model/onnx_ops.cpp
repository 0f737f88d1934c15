// The glue between the ONNX importer and the op table: each ONNX op's rule (a fold, or a
// translation into engine ops) lives beside the engine op it becomes, in engine/ops/*_rows.cpp.
#include <algorithm>
#include <optional>

#include "engine/model/onnx_import.hpp"
#include "engine/model/op_registry.hpp"

namespace ckpt::onnx_import {

std::optional<AttrValue> attr_value(const onnx::AttributeProto& a) {
  using A = onnx::AttributeProto;
  switch (a.type()) {
    case A::INT:
      return AttrValue{std::int64_t{a.i()}};
    case A::FLOAT:
      return AttrValue{double{a.f()}};
    case A::STRING:
      return AttrValue{a.s()};
    case A::INTS:
      return AttrValue{std::vector<std::int64_t>(a.ints().begin(), a.ints().end())};
    case A::FLOATS:
      return AttrValue{std::vector<double>(a.floats().begin(), a.floats().end())};
    case A::STRINGS: {  // one string, comma-separated (an RNN's activations: "Sigmoid,Tanh,Tanh")
      std::string joined;
      for (const auto& e : a.strings()) joined += (joined.empty() ? "" : ",") + e;
      return AttrValue{joined};
    }
    case A::UNDEFINED:  // files from old exporters leave the type out: read what is set
      if (a.ints_size())
        return AttrValue{std::vector<std::int64_t>(a.ints().begin(), a.ints().end())};
      if (a.floats_size())
        return AttrValue{std::vector<double>(a.floats().begin(), a.floats().end())};
      if (a.has_s()) return AttrValue{a.s()};
      if (a.has_f()) return AttrValue{double{a.f()}};
      if (a.has_i()) return AttrValue{std::int64_t{a.i()}};
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

class NodeView final : public OnnxNode {
 public:
  NodeView(Importer& importer, const onnx::NodeProto& n, const Importer::Inputs& in)
      : im_(importer), n_(n), in_(in) {
    for (const auto& a : n.attribute())
      if (auto v = attr_value(a)) attrs_[a.name()] = std::move(*v);
  }

  const std::string& op_type() const override { return n_.op_type(); }
  std::int64_t opset() const override { return im_.opset_; }
  std::size_t input_count() const override { return in_.size(); }
  const OnnxValue* input_or_null(std::size_t i) const override {
    return i < in_.size() ? in_[i] : nullptr;
  }
  const std::string& input_name(std::size_t i) const override {
    static const std::string none;
    return i < static_cast<std::size_t>(n_.input_size()) ? n_.input(static_cast<int>(i)) : none;
  }
  int output_count() const override { return n_.output_size(); }
  const std::string& output(int k) const override {
    static const std::string none;
    return k < n_.output_size() ? n_.output(k) : none;
  }
  const AttrValue* attr(const std::string& name) const override {
    auto it = attrs_.find(name);
    return it == attrs_.end() ? nullptr : &it->second;
  }
  Tensor attr_tensor(const std::string& name) const override {
    const auto* a = im_.attr(n_, name);
    return a && a->has_t() ? tensor_from_proto(a->t(), im_.source_) : Tensor();
  }
  const OnnxValue& emit_op(const std::string& type, const std::vector<std::string>& inputs,
                           Attributes attrs, const std::string& output) override {
    return im_.emit_op(n_, type, inputs, std::move(attrs), output);
  }
  std::vector<OnnxValue> emit_multi(const std::string& type, const std::vector<std::string>& inputs,
                                    Attributes attrs,
                                    const std::vector<std::string>& outputs) override {
    std::vector<OnnxValue> values;
    for (const auto& name : im_.emit_node(n_, type, inputs, std::move(attrs), outputs))
      values.push_back(im_.values_.at(name));
    return values;
  }
  std::string operand(std::size_t i) override { return im_.operand(n_, i, in_); }
  const Producer* producer(const std::string& graph) const override {
    auto it = im_.producers_.find(graph);
    return it == im_.producers_.end() ? nullptr : &it->second;
  }
  const Tensor* probe(const std::string& graph) const override {
    auto it = im_.probes_.find(graph);
    return it == im_.probes_.end() ? nullptr : &it->second;
  }
  bool is_parameter(const std::string& graph) const override {
    return std::any_of(im_.m_.parameters.begin(), im_.m_.parameters.end(),
                       [&](const ParameterInfo& p) { return p.name == graph && !p.is_buffer; });
  }
  bool is_model_input(const std::string& graph) const override {
    return std::any_of(im_.m_.inputs.begin(), im_.m_.inputs.end(),
                       [&](const InputInfo& in) { return in.name == graph; });
  }
  void drop_if_unused(const std::string& graph) override { im_.droppable_.push_back(graph); }
  void note_index_range(const std::string& graph, std::int64_t classes) override {
    im_.note_index_range(graph, classes);
  }
  void define(const std::string& onnx_name, OnnxValue v) override {
    im_.define(onnx_name, std::move(v));
  }
  void alias(const std::string& onnx_name, const OnnxValue& v) override { im_.alias(onnx_name, v); }
  void note_change(const std::string& why) override {
    auto& count = im_.changes_[why];
    if (count++ == 0) im_.change_order_.push_back(why);
  }
  void unavailable(int k, const std::string& why) override {
    if (n_.output_size() > k && !n_.output(k).empty())
      im_.unavailable_[n_.output(k)] = "uses output '" + n_.output(k) + "' of node '" + n_.name() +
                                       "' (" + n_.op_type() + "): " + why;
  }
  std::string failure_message(const std::string& what) const override {
    return im_.source_ + ": node '" + n_.name() + "' (" + n_.op_type() + "): " + what;
  }
  void set_pending(const std::string& value, Attributes info) override {
    im_.pending_[value] = std::move(info);
  }
  const Attributes* pending(const std::string& value) const override {
    auto it = im_.pending_.find(value);
    return it == im_.pending_.end() ? nullptr : &it->second;
  }

 private:
  Importer& im_;
  const onnx::NodeProto& n_;
  const Importer::Inputs& in_;
  Attributes attrs_;
};

std::vector<std::string> Importer::supported() {
  return OpTable::instance().onnx_types();
}

void Importer::translate_with(const OnnxRule& rule, const onnx::NodeProto& n, const Inputs& in) {
  NodeView view(*this, n, in);
  if (rule.fold && rule.fold(view)) return;
  if (!rule.translate)
    fail(n, "op type '" + n.op_type() + "' needs its inputs to be known at load time here");
  rule.translate(view);
}

const Value& Importer::input(const onnx::NodeProto& n, const Inputs& in, std::size_t i,
                             const char* what) const {
  if (i >= in.size() || !in[i]) fail(n, std::string("needs its ") + what + " input");
  return *in[i];
}

Tensor Importer::constant_input(const onnx::NodeProto& n, const Inputs& in, std::size_t i,
                                const char* what) const {
  const Value& v = input(n, in, i, what);
  if (!v.constant)
    fail(n, std::string("its ") + what + " must be known when the model is loaded (a constant " +
                "or shape arithmetic on known shapes), but it is computed at run time");
  return v.probe;
}

std::string Importer::operand(const onnx::NodeProto& n, std::size_t i, const Inputs& in) {
  if (i >= in.size() || !in[i]) return "";
  const Value& v = *in[i];
  if (!v.constant) return v.graph;
  const std::string& name = n.input(static_cast<int>(i));
  if (!m_.constants.count(name)) {
    m_.constants[name] = v.probe;
    probes_[name] = v.probe;
  }
  return name;
}

const Value& Importer::emit_op(const onnx::NodeProto& n, const std::string& type,
                               const std::vector<std::string>& inputs, Attributes attrs,
                               const std::string& output) {
  return values_.at(emit_node(n, type, inputs, std::move(attrs), {output}).at(0));
}

std::vector<std::string> Importer::emit_node(const onnx::NodeProto& n, const std::string& type,
                                             const std::vector<std::string>& inputs,
                                             Attributes attrs, std::vector<std::string> outputs) {
  OpNode op;
  op.module = module_of(n);
  if (fusing_) {
    // One op in the subgraph's place, named after its module and kind, listing what it replaced.
    std::string base = op.module.empty() ? type : op.module + "." + type;
    std::int64_t& count = name_counts_[base];
    op.name = count++ == 0 ? base : base + "_" + std::to_string(count);
    for (const onnx::NodeProto* part : fusing_->nodes) op.fused.push_back(part->name());
  } else {
    op.name = op_name(n);
  }
  op.op_type = type;
  op.inputs = inputs;
  op.attrs = std::move(attrs);
  for (std::size_t k = 0; k < outputs.size(); ++k)
    if (outputs[k].empty()) outputs[k] = k == 0 ? op.name : op.name + ":" + std::to_string(k);
  op.outputs = outputs;
  TensorList xs;
  for (const auto& v : inputs) xs.push_back(v.empty() ? Tensor() : probes_.at(v));
  // Values computed at run time are probed for their shapes only: on the meta device, so that
  // loading computes no convolution and a batch beyond this machine's memory still loads.
  const TensorList ys = [&] {
    DeviceScope meta(Device::meta);
    return run_op_node(*find_op_kind(type), op, xs);
  }();
  if (ys.size() != outputs.size())
    fail(n, "engine op '" + type + "' makes " + std::to_string(ys.size()) + " outputs, " +
                std::to_string(outputs.size()) + " were named");
  if (counted_ != &n) {
    counted_ = &n;
    ++module_node_count_[op.module];
    const OnnxRule* rule = OpTable::instance().onnx_rule(n.op_type(), opset_);
    const char* kind = fusing_ ? fusing_->pattern->module_class
                       : rule  ? rule->module_class
                               : nullptr;
    std::string kind_name = kind ? kind : "";
    // A class of every rank ("ConvNd") is named for this node's: Conv1d, Conv2d, Conv3d.
    if (kind_name.size() > 2 && kind_name.ends_with("Nd") && !xs.empty() && xs[0].defined() &&
        xs[0].dim() > 2)
      kind_name.replace(kind_name.size() - 2, 1, std::to_string(xs[0].dim() - 2));
    module_class_[op.module] = kind_name;
  }
  for (const auto& out : outputs) {
    producers_[out] = OnnxNode::Producer{op.op_type, op.inputs, op.attrs};
    producer_index_[out] = m_.ops.size();
  }
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    probes_[outputs[k]] = ys[k];
    values_[outputs[k]] = Value{false, outputs[k], ys[k]};
  }
  m_.ops.push_back(std::move(op));
  return outputs;
}

void Importer::drop_unused_ops() {
  if (droppable_.empty()) return;
  std::unordered_map<std::string, std::int64_t> uses;
  for (const auto& op : m_.ops)
    for (const auto& v : op.inputs)
      if (!v.empty()) ++uses[v];
  for (const auto& v : m_.outputs) ++uses[v];
  std::vector<bool> dropped(m_.ops.size(), false);
  std::vector<std::string> work = droppable_;
  while (!work.empty()) {
    const std::string v = work.back();
    work.pop_back();
    const auto at = producer_index_.find(v);
    if (uses[v] > 0 || at == producer_index_.end() || dropped[at->second]) continue;
    const OpNode& op = m_.ops[at->second];
    if (std::any_of(op.outputs.begin(), op.outputs.end(),
                    [&](const auto& o) { return uses[o] > 0; }))
      continue;
    dropped[at->second] = true;
    for (const auto& in : op.inputs)
      if (!in.empty() && --uses[in] == 0) work.push_back(in);
  }
  std::vector<OpNode> kept;
  for (std::size_t i = 0; i < m_.ops.size(); ++i)
    if (!dropped[i]) kept.push_back(std::move(m_.ops[i]));
  m_.ops = std::move(kept);
  // Constants only the dropped ops read.
  for (auto it = m_.constants.begin(); it != m_.constants.end();)
    it = uses.count(it->first) && uses[it->first] == 0 ? m_.constants.erase(it) : std::next(it);
  producer_index_.clear();  // indices into the old list
}

void Importer::note_index_range(const std::string& graph, std::int64_t classes) {
  for (auto& in : m_.inputs)
    if (in.name == graph && in.dtype == DType::i64 && !in.is_target && classes > 0)
      in.classes = in.classes > 0 ? std::min(in.classes, classes) : classes;
}

}  // namespace ckpt::onnx_import
