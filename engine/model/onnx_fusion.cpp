// ONNX import: the op table's pattern rules (issue 27). Before any node is translated, every
// node is offered to the patterns rooted at its op type; a match claims its nodes, which wait
// for the root's turn, where the row's op is emitted in their place (or, when a constant known
// only then is not the pattern's, they are translated one by one after all).
#include <algorithm>
#include <unordered_map>

#include "engine/model/onnx_import.hpp"

namespace ckpt::onnx_import {

// The graph as it is in the file, for the matcher.
class Importer::GraphView final : public OnnxGraphView {
 public:
  explicit GraphView(const Importer& im) : im_(im), g_(im.proto_.graph()) {
    for (int i = 0; i < g_.node_size(); ++i) {
      const auto& n = g_.node(i);
      types_.push_back(n.domain().empty() || n.domain() == "ai.onnx"
                           ? n.op_type()
                           : n.domain() + "::" + n.op_type());
      for (const auto& o : g_.node(i).output())
        if (!o.empty()) producer_.emplace(o, i);
      for (const auto& in : g_.node(i).input())
        if (!in.empty()) consumers_[in].push_back(i);
    }
    for (const auto& o : g_.output()) consumers_[o.name()].push_back(-1);
    for (const auto& init : g_.initializer()) initializers_.emplace(init.name(), &init);
  }

  // A node of another domain is named with it ("com.microsoft::Gelu"): no pattern's.
  const std::string& op_type(int node) const override {
    return types_[static_cast<std::size_t>(node)];
  }
  const std::string& node_name(int node) const override { return g_.node(node).name(); }
  int input_count(int node) const override { return g_.node(node).input_size(); }
  const std::string& input(int node, int i) const override { return g_.node(node).input(i); }
  int output_count(int node) const override { return g_.node(node).output_size(); }
  const std::string& output(int node, int k) const override { return g_.node(node).output(k); }
  int producer(const std::string& value) const override {
    const auto it = producer_.find(value);
    return it == producer_.end() ? -1 : it->second;
  }
  const std::vector<int>& consumers(const std::string& value) const override {
    static const std::vector<int> none;
    const auto it = consumers_.find(value);
    return it == consumers_.end() ? none : it->second;
  }
  const AttrValue* attr(int node, const std::string& name) const override {
    const auto key = std::make_pair(node, name);
    if (auto it = attrs_.find(key); it != attrs_.end()) return it->second ? &*it->second : nullptr;
    std::optional<AttrValue> v;
    for (const auto& a : g_.node(node).attribute())
      if (a.name() == name) v = attr_value(a);
    return attrs_.emplace(key, std::move(v)).first->second ? &*attrs_.at(key) : nullptr;
  }
  FileValue file_value(const std::string& value) const override {
    if (const auto it = initializers_.find(value); it != initializers_.end())
      return of(*it->second, im_.source_ + ": initializer");
    const int p = producer(value);
    if (p < 0 || g_.node(p).op_type() != "Constant" || !g_.node(p).domain().empty()) return {};
    for (const auto& a : g_.node(p).attribute())
      if (a.name() == "value" && a.has_t()) return of(a.t(), im_.source_);
    return {};
  }
  bool is_initializer(const std::string& value) const override {
    return initializers_.count(value) > 0;
  }
  int index_of(const onnx::NodeProto* n) const {
    if (index_.empty())
      for (int i = 0; i < g_.node_size(); ++i) index_.emplace(&g_.node(i), i);
    return index_.at(n);
  }
  const onnx::NodeProto& node(int i) const { return g_.node(i); }

 private:
  // A tensor's elements are read only when it has one. A tensor the file spells wrong is not
  // the matcher's to report: its node's translation names it.
  static FileValue of(const onnx::TensorProto& t, const std::string& where) {
    std::int64_t n = 1;
    for (auto d : t.dims()) n *= d;
    if (n != 1) return {FileValue::Kind::tensor, 0};
    if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) return {};
    try {
      return {FileValue::Kind::number, tensor_from_proto(t, where).item()};
    } catch (const std::exception&) {
      return {};
    }
  }

  const Importer& im_;
  const onnx::GraphProto& g_;
  std::vector<std::string> types_;
  std::unordered_map<std::string, int> producer_;
  std::unordered_map<std::string, std::vector<int>> consumers_;
  std::unordered_map<std::string, const onnx::TensorProto*> initializers_;
  mutable std::map<std::pair<int, std::string>, std::optional<AttrValue>> attrs_;
  mutable std::unordered_map<const onnx::NodeProto*, int> index_;
};

// The subgraph at its root's turn, as the pattern's emit sees it.
class FusionView final : public OnnxFusion {
 public:
  FusionView(Importer& im, const Importer::Claim& claim, const Importer::GraphView& g)
      : im_(im), claim_(claim), g_(g), root_(*claim.nodes.back()) {}

  std::int64_t opset() const override { return im_.opset_; }
  const OnnxValue* value(const std::string& name) const override {
    const auto b = claim_.match.bound.find(name);
    if (b == claim_.match.bound.end() || !claim_.match.leaves.count(b->second)) return nullptr;
    const auto v = im_.values_.find(b->second);
    return v == im_.values_.end() ? nullptr : &v->second;
  }
  std::string operand(const std::string& name) override {
    const OnnxValue* v = value(name);
    if (!v) return "";
    if (!v->constant) return v->graph;
    const std::string& value_name = claim_.match.bound.at(name);
    if (!im_.m_.constants.count(value_name)) {
      im_.m_.constants[value_name] = v->probe;
      im_.probes_[value_name] = v->probe;
    }
    return value_name;
  }
  const AttrValue* attr(const std::string& name, const std::string& attribute) const override {
    const auto b = claim_.match.bound.find(name);
    if (b == claim_.match.bound.end()) return nullptr;
    const int p = g_.producer(b->second);
    return p < 0 ? nullptr : g_.attr(p, attribute);
  }
  std::string op_type(const std::string& name) const override {
    const auto b = claim_.match.bound.find(name);
    const int p = b == claim_.match.bound.end() ? -1 : g_.producer(b->second);
    return p < 0 ? std::string() : g_.op_type(p);
  }
  const OnnxValue& emit_op(const std::string& type, const std::vector<std::string>& inputs,
                           Attributes attrs) override {
    const Fusing fusing(im_, claim_);
    const std::string& y = root_.output(0);
    return im_.emit_op(root_, type, inputs, std::move(attrs), y);
  }
  const OnnxValue& emit_inner_op(const std::string& type, const std::vector<std::string>& inputs,
                                 Attributes attrs) override {
    const Fusing fusing(im_, claim_);
    const OnnxValue& v = im_.emit_op(root_, type, inputs, std::move(attrs));
    // The replaced nodes are listed once, by the op that takes the subgraph's place.
    im_.m_.ops.back().fused.clear();
    return v;
  }
  void note_change(const std::string& why) override {
    auto& count = im_.changes_[why];
    if (count++ == 0) im_.change_order_.push_back(why);
  }
  std::string producer() const override {
    return im_.proto_.producer_name() + " " + im_.proto_.producer_version();
  }

 private:
  // The ops emitted in this scope take the claimed nodes' place.
  struct Fusing {
    Importer& im;
    Fusing(Importer& importer, const Importer::Claim& claim) : im(importer) { im.fusing_ = &claim; }
    ~Fusing() { im.fusing_ = nullptr; }
    Fusing(const Fusing&) = delete;
    Fusing& operator=(const Fusing&) = delete;
  };

  Importer& im_;
  const Importer::Claim& claim_;
  const Importer::GraphView& g_;
  const onnx::NodeProto& root_;
};

void Importer::find_claims(const std::vector<const onnx::NodeProto*>& order) {
  const auto view = std::make_shared<GraphView>(*this);
  std::set<int> taken;
  std::unordered_map<const onnx::NodeProto*, std::size_t> position;
  for (std::size_t i = 0; i < order.size(); ++i) position.emplace(order[i], i);
  // Latest roots first: a pattern that contains another's root (x · hardsigmoid(x), with its
  // hardsigmoid spelled out) claims before the smaller one can.
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const onnx::NodeProto* n = *it;
    const int index = view->index_of(n);
    if (taken.count(index) || (!n->domain().empty() && n->domain() != "ai.onnx")) continue;
    for (const auto& [row, pattern] : OpTable::instance().onnx_patterns(n->op_type(), opset_)) {
      std::optional<OnnxMatch> m = match_pattern(*pattern, *view, index, taken);
      if (!m) continue;
      Claim c{row, pattern, std::move(*m), {}};
      for (int part : c.match.nodes) {
        taken.insert(part);
        c.nodes.push_back(&view->node(part));
      }
      std::sort(c.nodes.begin(), c.nodes.end(),
                [&](const auto* a, const auto* b) { return position.at(a) < position.at(b); });
      for (const auto* part : c.nodes) claim_of_[part] = claims_.size();
      claims_.push_back(std::move(c));
      break;
    }
  }
  graph_view_ = view;
}

bool Importer::fuse(const Claim& c) {
  // The constants the file did not give (computed at load time) are known now.
  for (const auto& v : c.match.constants) {
    const auto it = values_.find(v);
    if (it == values_.end() || !it->second.constant) return false;
  }
  for (const auto& n : c.match.numbers)
    if (!is_number(values_.at(n.value).probe, n.expected, n.relative)) return false;
  FusionView view(*this, c, *graph_view_);
  try {
    return c.pattern->fuse(view);
  } catch (const std::exception& e) {
    const std::string what = e.what();
    if (what.rfind(source_ + ":", 0) == 0) throw;
    fail(*c.nodes.back(), std::string(c.pattern->name) + ": " + what);
  }
}

}  // namespace ckpt::onnx_import
