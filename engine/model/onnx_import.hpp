#pragma once

// Internal to the ONNX loader (onnx_loader.cpp, onnx_importer.cpp, onnx_ops.cpp): turns an ONNX
// graph into a Model. Runtime values become engine ops; int64 shape arithmetic (and anything else
// whose inputs are all constants) is evaluated at load time, on the shapes a dry run of the ops
// emitted so far gives.

#include <onnx/onnx_pb.h>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/model/model.hpp"
#include "engine/ops/schema/onnx_pattern.hpp"
#include "engine/ops/schema/op_schema.hpp"

namespace ckpt::onnx_import {

// An ONNX value at load time: either a graph value the Runner computes (`graph` names it, and
// `probe` is its load-time tensor, for shapes) or a constant known now (`probe` is its value).
using Value = OnnxValue;

class Importer {
 public:
  Importer(Model& model, const onnx::ModelProto& proto, std::string source,
           std::map<std::string, Tensor> bind = {}, std::int64_t batch = 0);
  // Whether the first input's batch dimension is symbolic (exported with a dynamic axis).
  bool dynamic_batch() const { return dynamic_batch_; }
  // Parameters of `model` (the same file loaded at another batch) are taken as they are
  // instead of read again: weights do not depend on the batch, and a rebatched model then
  // holds no second copy of them (runs copy parameters anyway).
  void share_weights_of(const Model& model) { weights_of_ = &model; }
  void run();

  // The op types translate() understands (the op table's ONNX rules), sorted.
  static std::vector<std::string> supported();

 private:
  using Inputs = std::vector<const Value*>;  // null for an absent optional input

  void read_opset();
  void read_initializers();
  // How torch.nn initialises each initializer, from the rule of the first node that uses it
  // (OnnxRule::parameter_init): for the weights the file does not hold.
  std::map<std::string, ParameterInit> parameter_inits() const;
  // The initializers the file's metadata names as buffers (load_notes.hpp's kOnnxBuffersKey).
  std::set<std::string> buffers_named_by_file() const;
  void read_inputs();
  std::vector<const onnx::NodeProto*> topological_order() const;

  // Pattern rules (onnx_fusion.cpp): a subgraph a row claims, and becomes one op at its root.
  struct Claim {
    const OpSchema* row = nullptr;
    const OnnxPattern* pattern = nullptr;
    OnnxMatch match;
    std::vector<const onnx::NodeProto*> nodes;  // in translation order; the root last
  };
  // Offers every node, in `order`, to the patterns rooted at its op type; a node is claimed
  // once.
  void find_claims(const std::vector<const onnx::NodeProto*>& order);
  // At the root's turn: emits the row's op in the subgraph's place, or returns false (a value
  // known only now is not the pattern's) having emitted nothing.
  bool fuse(const Claim& claim);
  class GraphView;
  friend class FusionView;
  // Looks the node's rule up in the op table and runs it (folding, or emitting engine ops).
  void translate(const onnx::NodeProto& n);
  void translate_with(const OnnxRule& rule, const onnx::NodeProto& n, const Inputs& in);
  friend class NodeView;  // the node as a rule sees it (onnx_ops.cpp)

  // Emits an engine op in the node's module, runs it on the probes, and returns the new value
  // (its name is `output` when given, else a fresh one).
  const Value& emit_op(const onnx::NodeProto& n, const std::string& type,
                       const std::vector<std::string>& inputs, Attributes attrs,
                       const std::string& output = "");
  // The same with one named output per op output ("" for a fresh name); returns the names.
  std::vector<std::string> emit_node(const onnx::NodeProto& n, const std::string& type,
                                     const std::vector<std::string>& inputs, Attributes attrs,
                                     std::vector<std::string> outputs);
  // Leaves out the ops a rule marked with drop_if_unused that nothing reads any more (and
  // what only they read), once every node is translated.
  void drop_unused_ops();
  void note_index_range(const std::string& graph, std::int64_t classes);
  // A graph value for `v`: itself, or (for a constant used as a tensor operand) a constant of
  // the model.
  std::string operand(const onnx::NodeProto& n, std::size_t i, const Inputs& in);
  void define(const std::string& onnx_name, Value v);
  void alias(const std::string& onnx_name, const Value& v);
  const Value& input(const onnx::NodeProto& n, const Inputs& in, std::size_t i,
                     const char* what) const;
  Tensor constant_input(const onnx::NodeProto& n, const Inputs& in, std::size_t i,
                        const char* what) const;

  [[noreturn]] void fail(const onnx::NodeProto& n, const std::string& what) const;
  [[noreturn]] void fail(const std::string& what) const;
  std::string module_of(const onnx::NodeProto& n);
  std::string op_name(const onnx::NodeProto& n);

  // Attributes of the node.
  const onnx::AttributeProto* attr(const onnx::NodeProto& n, const std::string& name) const;

  Model& m_;
  const onnx::ModelProto& proto_;
  std::string source_;
  std::map<std::string, Tensor> bind_;
  std::int64_t batch_ = 0;
  bool dynamic_batch_ = false;
  std::int64_t opset_ = 0;
  std::unordered_map<std::string, Value> values_;
  const Model* weights_of_ = nullptr;
  std::unordered_map<std::string, Tensor> probes_;            // dry-run tensor of every graph value
  std::unordered_map<std::string, std::string> unavailable_;  // ONNX outputs we do not make
  // What a node leaves for a later one (a zero Pad for its AveragePool), by value name.
  std::unordered_map<std::string, Attributes> pending_;
  const onnx::NodeProto* counted_ = nullptr;  // last node counted in module_node_count_
  std::unordered_map<std::string, std::int64_t> name_counts_;
  std::map<std::string, Module*> modules_;
  std::vector<std::string> buffers_;  // initializers used as BatchNorm running statistics
  // Nodes the rules ran otherwise than the file says, counted per reason (note_change), in the
  // order first seen: the load summary's warnings.
  std::map<std::string, std::int64_t> changes_;
  std::vector<std::string> change_order_;
  // module -> the torch.nn class its single op shows as ("" for none)
  std::map<std::string, std::string> module_class_;
  std::map<std::string, std::int64_t> module_node_count_;
  // The emitted op that made each graph value, as rules see it, and its index in m_.ops.
  std::unordered_map<std::string, OnnxNode::Producer> producers_;
  std::unordered_map<std::string, std::size_t> producer_index_;
  std::vector<std::string> droppable_;
  std::vector<Claim> claims_;
  std::unordered_map<const onnx::NodeProto*, std::size_t> claim_of_;  // node -> claims_ index
  const Claim* fusing_ = nullptr;  // the claim whose op emit_op is making
  std::shared_ptr<const GraphView> graph_view_;
};

// A TensorProto as an engine tensor (FLOAT -> f32, DOUBLE -> f64, INT64/INT32/BOOL -> i64).
Tensor tensor_from_proto(const onnx::TensorProto& t, const std::string& where);

// An ONNX attribute as the op table's attribute value (a TENSOR attribute is read separately).
std::optional<AttrValue> attr_value(const onnx::AttributeProto& a);

}  // namespace ckpt::onnx_import
