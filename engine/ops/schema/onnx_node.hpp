#pragma once

// An ONNX node as an op's import rule sees it. The ONNX loader (model floor) implements it; the
// rules live beside the ops they translate to (ops floor), so that one place says everything
// about an op. Values are either computed at run time (`graph` names them, `probe` is a tensor
// of their shape from a load-time run) or known when the model is loaded (`probe` is the value).

#include <cstdint>
#include <string>
#include <vector>

#include "engine/ops/schema/attributes.hpp"
#include "engine/tensor/tensor.hpp"

namespace ckpt {

struct OnnxValue {
  bool constant = false;
  std::string graph;
  Tensor probe;
};

class OnnxNode {
 public:
  virtual ~OnnxNode() = default;

  virtual const std::string& op_type() const = 0;
  virtual std::int64_t opset() const = 0;
  virtual std::size_t input_count() const = 0;
  // Null for an absent optional input.
  virtual const OnnxValue* input_or_null(std::size_t i) const = 0;
  virtual const std::string& input_name(std::size_t i) const = 0;
  virtual int output_count() const = 0;
  virtual const std::string& output(int k) const = 0;

  // Attributes of the node (ONNX ints, floats, strings and their lists).
  virtual const AttrValue* attr(const std::string& name) const = 0;
  // A TENSOR attribute (Constant's value), or an undefined tensor.
  virtual Tensor attr_tensor(const std::string& name) const = 0;

  // Emits an engine op in the node's module, runs it on the probes and returns its value
  // (named `output` when given, else a fresh name).
  virtual const OnnxValue& emit_op(const std::string& type, const std::vector<std::string>& inputs,
                                   Attributes attrs, const std::string& output = "") = 0;
  // An engine op of several outputs, named `outputs` (a fresh name for an empty one), with
  // their values in that order.
  virtual std::vector<OnnxValue> emit_multi(const std::string& type,
                                            const std::vector<std::string>& inputs,
                                            Attributes attrs,
                                            const std::vector<std::string>& outputs) = 0;
  // A graph value for input i: itself, or (a constant used as a tensor operand) a model constant.
  virtual std::string operand(std::size_t i) = 0;
  virtual void define(const std::string& onnx_name, OnnxValue v) = 0;
  virtual void alias(const std::string& onnx_name, const OnnxValue& v) = 0;
  // Output k is not made; a later use of it fails with `why`.
  virtual void unavailable(int k, const std::string& why) = 0;
  // The rule runs the node otherwise than the file says, for `why` (a BatchNorm in inference
  // form runs in training mode): the load summary's warnings count the nodes per reason.
  virtual void note_change(const std::string& why) = 0;
  // A load error naming the file, the node and the problem: throws std::invalid_argument.
  [[noreturn]] void fail(const std::string& what) const;

  // "model.onnx: node 'conv1' (Conv): " + what.
  virtual std::string failure_message(const std::string& what) const = 0;

  // What the loader knows about the values a rule reads, for rules that recognise how an
  // exporter built an operand (PyTorch's LSTM weights, reordered by Slice and Concat).
  // The engine op that made graph value `graph` at this load, or null: a model input, a
  // parameter, a constant.
  struct Producer {
    std::string type;
    std::vector<std::string> inputs;
    Attributes attrs;
  };
  virtual const Producer* producer(const std::string& graph) const = 0;
  // The load-time tensor of graph value `graph` (its shape; a constant's value), or null.
  virtual const Tensor* probe(const std::string& graph) const = 0;
  virtual bool is_parameter(const std::string& graph) const = 0;
  virtual bool is_model_input(const std::string& graph) const = 0;
  // The op that made `graph` (and those before it that only it used) is left out of the model
  // if nothing else reads `graph` when the load ends: the rule that read it from its sources
  // made it dead.
  virtual void drop_if_unused(const std::string& graph) = 0;
  // The int64 model input `graph` holds indices in [0, classes) (token ids an embedding looks
  // up): a run without explicit inputs draws them there.
  virtual void note_index_range(const std::string& graph, std::int64_t classes) = 0;

  // State one node leaves for a later one (a zero Pad for the AveragePool that consumes it).
  virtual void set_pending(const std::string& value, Attributes info) = 0;
  virtual const Attributes* pending(const std::string& value) const = 0;

  // Helpers over the above.
  const OnnxValue& input(std::size_t i, const char* what) const;
  bool has_input(std::size_t i) const { return input_or_null(i) != nullptr; }
  Tensor constant_input(std::size_t i, const char* what) const;
  std::vector<std::int64_t> constant_ints(std::size_t i, const char* what) const;
  std::int64_t rank() const { return input(0, "first").probe.dim(); }
  std::int64_t attr_i(const std::string& name, std::int64_t fallback) const;
  double attr_f(const std::string& name, double fallback) const;
  std::vector<std::int64_t> attr_ints(const std::string& name) const;  // empty when absent
  std::string attr_s(const std::string& name, const std::string& fallback) const;
  const std::string& y() const { return output(0); }
  // Defines output 0 as a constant.
  bool fold_to(Tensor value);
};

}  // namespace ckpt
