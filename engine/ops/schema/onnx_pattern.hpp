#pragma once

// Pattern rules (issue 27): a row may claim a subgraph of the imported ONNX graph — GELU's Erf
// form, LayerNorm's decomposition, the attention core — and become one engine op in its place.
// A pattern is an expression over ONNX op types whose leaves are the subgraph's inputs and
// constants; it matches by structure and constant values, never by node names. The importer
// (model floor) offers every node to the patterns whose root op type it has, claims what
// matches, and at the root's turn lets the pattern emit its op (or decline, when a constant
// known only then is not the pattern's: the nodes are then translated one by one).

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/ops/schema/attributes.hpp"
#include "engine/ops/schema/onnx_node.hpp"

namespace ckpt {

// The file's graph as the matcher sees it, before any node is translated (the importer
// implements it). Nodes are numbered in the file's order.
class OnnxGraphView {
 public:
  virtual ~OnnxGraphView() = default;
  virtual const std::string& op_type(int node) const = 0;
  virtual const std::string& node_name(int node) const = 0;
  virtual int input_count(int node) const = 0;
  virtual const std::string& input(int node, int i) const = 0;  // "" for an absent input
  virtual int output_count(int node) const = 0;
  virtual const std::string& output(int node, int k) const = 0;
  // The node making `value`, or -1 (a graph input, an initializer).
  virtual int producer(const std::string& value) const = 0;
  // The nodes reading `value` (one entry per input that reads it); graph outputs count as -1.
  virtual const std::vector<int>& consumers(const std::string& value) const = 0;
  virtual const AttrValue* attr(int node, const std::string& name) const = 0;
  // What the file alone says of a value: nothing (computed by nodes, or a graph input), a
  // number (a one-element initializer or Constant node), or that it is a tensor of several
  // elements (not read: a weight is no pattern's number).
  struct FileValue {
    enum class Kind : std::uint8_t { unknown, number, tensor };
    Kind kind = Kind::unknown;
    double number = 0;
  };
  virtual FileValue file_value(const std::string& value) const = 0;
  // Whether `value` is one of the graph's initializers (a weight, whether or not the file holds
  // its data).
  virtual bool is_initializer(const std::string& value) const = 0;
};

namespace pattern {

struct Expr;
using P = std::shared_ptr<const Expr>;

// The node of type `type` whose inputs match `args` in order (absent trailing inputs match
// `optional` leaves); `commutative` (Add, Mul): its two inputs in either order.
P op(const char* type, std::vector<P> args);
P commutative(const char* type, P a, P b);
// Output `index` of a node of `type` with exactly `outputs` outputs (a Split's second half),
// the node named `node`: where the name is met again, the same node's other output matches
// without its inputs being matched twice (GLU: Mul(Split:0, Sigmoid(Split:1))).
P output(const char* type, int index, int outputs, const char* node, std::vector<P> args);
// A value from outside the subgraph: any, or one known at load time (a constant), or a scalar
// constant equal to `value` within `relative` (the exporter's float32 rounding of 1/sqrt(2)).
P any(const char* name);
P constant(const char* name);
P number(double value, double relative = 1e-6);
// An input that may also be absent (Dropout's ratio and training_mode).
P optional_constant(const char* name);
// One of the graph's initializers: a module's weight, not a value computed in the forward.
P initializer(const char* name);
// Names what `inner` matched (an op's output, or a leaf): a second use of the name must be the
// same value (LayerNorm's x - mean, used twice).
P as(const char* name, P inner);
P one_of(std::vector<P> alternatives);

}  // namespace pattern

// A match: the claimed nodes, the root (the node whose output the op replaces) and what the
// names bound; constant leaves whose value the file does not give are checked at emission.
struct OnnxMatch {
  struct Number {
    std::string value;
    double expected = 0, relative = 0;
  };
  int root = -1;
  std::set<int> nodes;
  std::map<std::string, std::string> bound;  // name -> value
  std::set<std::string> leaves;              // the values from outside the subgraph
  std::set<std::string> constants;           // leaves that must be known at load time
  std::vector<Number> numbers;               // leaves whose value the file did not give
};

// Whether `v` is a one-element constant equal to `expected` within `relative`.
bool is_number(const Tensor& v, double expected, double relative);
bool is_number(double v, double expected, double relative);

// What a pattern's fuse() sees at the root's turn: the bound values (only the subgraph's inputs
// are defined: its inner values are never made) and the bound nodes' attributes.
class OnnxFusion {
 public:
  virtual ~OnnxFusion() = default;
  virtual std::int64_t opset() const = 0;
  // The value bound to `name` (a leaf of the match), or null when the name is unbound.
  virtual const OnnxValue* value(const std::string& name) const = 0;
  // A graph value for a leaf: itself, or a constant used as a tensor operand made a model one.
  virtual std::string operand(const std::string& name) = 0;
  // An attribute of the node whose output is bound to `name`.
  virtual const AttrValue* attr(const std::string& name, const std::string& attribute) const = 0;
  // The op type of the node whose output is bound to `name` ("" when none).
  virtual std::string op_type(const std::string& name) const = 0;
  // Emits the op in the root node's module; its output is the root's output.
  virtual const OnnxValue& emit_op(const std::string& type, const std::vector<std::string>& inputs,
                                   Attributes attrs) = 0;
  // Emits an op whose output feeds the root's op (a weight's layout), under a fresh name.
  virtual const OnnxValue& emit_inner_op(const std::string& type,
                                         const std::vector<std::string>& inputs,
                                         Attributes attrs) = 0;
  // The subgraph runs otherwise than the file says, for `why` (the load warnings count the
  // subgraphs per reason, as OnnxNode::note_change's nodes).
  virtual void note_change(const std::string& why) = 0;
  // The file's producer_name and producer_version, "pytorch 1.13.1" (an exporter's bug is
  // known by its version).
  virtual std::string producer() const = 0;

  // Helpers over the above.
  std::int64_t attr_i(const std::string& name, const std::string& attribute,
                      std::int64_t fallback) const;
  std::vector<std::int64_t> attr_ints(const std::string& name, const std::string& attribute) const;
  // A bound leaf's scalar value, when it is a constant of one element.
  std::optional<double> scalar(const std::string& name) const;
};

struct OnnxPattern {
  const char* name = nullptr;  // what it recognises, for messages: "GELU (Erf form)"
  // An op(), or a one_of() of ops of one type: the root node's.
  pattern::P root;
  int since = 1;  // opsets it applies to
  int until = 1 << 30;
  // The torch.nn class a module that is exactly this subgraph shows as ("GELU").
  const char* module_class = nullptr;
  // What the structure alone cannot say (attention: scaled somewhere), over the bound names;
  // null: nothing more.
  bool (*accept)(const OnnxMatch& m) = nullptr;
  // Emits the op, or returns false (before emitting anything) when a value is not the
  // pattern's after all: the nodes are then translated as they are.
  bool (*fuse)(OnnxFusion& f) = nullptr;
};

// The root's op type of a pattern.
const std::string& pattern_root_type(const OnnxPattern& p);

// Matches `p` with `node` as its root: the claimed subgraph, or nothing. A match claims only
// nodes none of whose outputs is used outside it (the root's first output aside), and checks
// the constants the file gives; `taken` are nodes an earlier match claimed.
std::optional<OnnxMatch> match_pattern(const OnnxPattern& p, const OnnxGraphView& g, int node,
                                       const std::set<int>& taken);

}  // namespace ckpt
