#pragma once

// A captured ATen op as its row's translation rule sees it (ckptlab_capture's files,
// docs/capture_format.md). The capture loader (model floor) implements it; the rules live beside
// the ops they translate to (engine/ops/*_aten.cpp), as ONNX rules do. Arguments are read by
// the names of the op's schema ("self", "mat2", "keepdim"); tensors are graph values, each with a
// load-time probe on the meta device (its shape and dtype).

#include <cstdint>
#include <string>
#include <vector>

#include "engine/ops/schema/attributes.hpp"
#include "engine/tensor/tensor.hpp"

namespace ckpt {

class AtenNode {
 public:
  virtual ~AtenNode() = default;

  virtual const std::string& name() const = 0;      // "aten::addmm"
  virtual const std::string& overload() const = 0;  // "default", "Tensor", "Scalar", ...
  virtual const std::string& module() const = 0;    // the module instance it ran in

  // Whether argument `arg` is given and not None; whether it is a tensor.
  virtual bool has(const std::string& arg) const = 0;
  virtual bool is_tensor(const std::string& arg) const = 0;
  // A tensor argument's graph value, a list of them; fails when the argument is not so.
  virtual std::string tensor(const std::string& arg) const = 0;
  virtual std::vector<std::string> tensors(const std::string& arg) const = 0;
  // A number (int, float, bool; "inf" and "nan" too), an integer, a list of integers (one
  // integer is a list of one), a string (a str, a dtype's or an enum's name).
  virtual double number(const std::string& arg) const = 0;
  virtual std::int64_t integer(const std::string& arg) const = 0;
  virtual std::vector<std::int64_t> ints(const std::string& arg) const = 0;
  virtual std::string text(const std::string& arg) const = 0;

  // The load-time tensor of graph value `graph` (meta: shape and dtype only).
  virtual const Tensor& probe(const std::string& graph) const = 0;
  virtual std::size_t output_count() const = 0;
  // The shape and dtype PyTorch recorded for output k.
  virtual const Shape& output_shape(std::size_t k) const = 0;
  virtual DType output_dtype(std::size_t k) const = 0;

  // Emits an engine op in the node's module, runs it on the probes and returns its outputs'
  // graph values. `outputs[i]` is the node output the op's output i defines (-1: none, an
  // intermediate value); its shape and dtype must be the ones PyTorch recorded.
  virtual std::vector<std::string> emit_op(const std::string& type,
                                           const std::vector<std::string>& inputs, Attributes attrs,
                                           const std::vector<int>& outputs) = 0;
  // Output k is the existing graph value `graph` (an alias: an in-place op's operand).
  virtual void define(std::size_t k, const std::string& graph) = 0;
  // Output k is made by no engine op: a later rule may read `info` through pending() (the
  // steps of dropout's CPU decomposition), and any other use of it is a load error.
  virtual void define_pending(std::size_t k, Attributes info) = 0;
  virtual const Attributes* pending(const std::string& graph) const = 0;

  // What a rule may ask about graph values.
  struct Producer {
    std::string type;
    std::vector<std::string> inputs;
    Attributes attrs;
  };
  virtual const Producer* producer(const std::string& graph) const = 0;  // null: not an op's
  virtual bool is_parameter(const std::string& graph) const = 0;         // a parameter or a buffer
  // The int64 model input `graph` holds indices in [0, classes) (token ids).
  virtual void note_index_range(const std::string& graph, std::int64_t classes) = 0;

  // "model.capture.json: op 12 'aten::addmm' in module 'fc' (PyTorch 1.13.0): " + what.
  virtual std::string failure_message(const std::string& what) const = 0;
  [[noreturn]] void fail(const std::string& what) const;

  // Helpers over the above.
  // One engine op whose output is the node's output 0.
  std::string emit1(const std::string& type, const std::vector<std::string>& inputs,
                    Attributes attrs = {});
  double number_or(const std::string& arg, double fallback) const;
  std::int64_t integer_or(const std::string& arg, std::int64_t fallback) const;
  bool flag(const std::string& arg, bool fallback) const;
  // A 2-D value made by transposing `graph` with dims 0 and 1 (aten::t of a weight), or "".
  std::string transposed_source(const std::string& graph) const;
};

// Rule templates: the ATen op is the engine op `Type` on its `self` argument, no attributes.
template <const char* Type>
void aten_unary(AtenNode& n) {
  n.emit1(Type, {n.tensor("self")});
}

}  // namespace ckpt
