#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/autograd/execution_context.hpp"
#include "engine/autograd/saved_variable.hpp"
#include "engine/tensor/tensor.hpp"

namespace ckpt {

class Node;

// Where a gradient goes: input `input_nr` of `function`.
struct Edge {
  std::shared_ptr<Node> function;
  std::uint32_t input_nr = 0;
  bool valid() const { return function != nullptr; }
};

// Shape and dtype of a forward output, to make a zero gradient when none arrives.
struct OutputMeta {
  Shape shape;
  DType dtype = DType::f32;
};

// A backward function in the graph (PyTorch's torch::autograd::Node). Input i of a node is the
// gradient of forward output i; next edge j receives the gradient of forward input j.
class Node : public std::enable_shared_from_this<Node> {
 public:
  explicit Node(std::string name);
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  const std::string& name() const { return name_; }
  std::uint64_t sequence_nr() const { return sequence_nr_; }
  std::vector<Edge>& next_edges() { return next_edges_; }
  const std::vector<Edge>& next_edges() const { return next_edges_; }
  std::vector<OutputMeta>& output_meta() { return output_meta_; }
  // The model node and execution context that were current when this node was made; backward
  // steps are
  // attributed to them.
  LabelId node_label() const { return node_label_; }
  const std::shared_ptr<ExecutionContext>& context() const { return context_; }

  virtual TensorList apply(TensorList&& grad_outputs) = 0;
  virtual void release_saved_tensors() {}
  virtual const std::vector<SavedVariable>* saved_variables() const { return nullptr; }
  // A node that runs other steps itself (a reentrant checkpoint) is not one step.
  virtual bool opens_step() const { return true; }
  // Called by the engine just before the node's step opens. FunctionNode unpacks its saved
  // tensors here, so that a non-reentrant checkpoint's recomputation (which runs inside an
  // unpack hook) is steps of its own in phase recompute, not part of this node's step.
  virtual void prepare() {}

 protected:
  void set_sequence_nr(std::uint64_t nr) { sequence_nr_ = nr; }

 private:
  std::string name_;
  std::uint64_t sequence_nr_;
  std::vector<Edge> next_edges_;
  std::vector<OutputMeta> output_meta_;
  LabelId node_label_ = 0;
  std::shared_ptr<ExecutionContext> context_;
};

// What a backward function sees: the incoming gradients (zeros where none arrived), the
// unpacked saved tensors, and which forward inputs need a gradient.
struct BackwardContext {
  TensorList grads;
  TensorList saved;
  std::vector<bool> needs_input_grad;
};
using BackwardFunction = std::function<TensorList(BackwardContext&)>;

// The node of an ordinary op: its saved tensors plus a short backward function.
class FunctionNode final : public Node {
 public:
  FunctionNode(std::string name, BackwardFunction fn);
  TensorList apply(TensorList&& grad_outputs) override;
  void prepare() override;
  void release_saved_tensors() override;
  const std::vector<SavedVariable>* saved_variables() const override { return &saved_; }
  void save(const Tensor& t);

 private:
  BackwardFunction fn_;
  std::vector<SavedVariable> saved_;
  std::optional<TensorList> prepared_;  // unpacked by prepare(), consumed by apply()
};

// Accumulates into a leaf's .grad (runs as soon as its gradient is ready).
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(std::shared_ptr<TensorImpl> variable);
  TensorList apply(TensorList&& grad_outputs) override;
  const std::shared_ptr<TensorImpl>& variable() const { return variable_; }

 private:
  std::shared_ptr<TensorImpl> variable_;
};

// The edge a gradient for `t` must flow into (invalid when t does not require grad).
Edge gradient_edge(const Tensor& t);
bool any_requires_grad(const TensorList& ts);

// Wires an op into autograd, as PyTorch does, when grad mode is on and an input requires grad:
// a FunctionNode named `name` becomes the grad_fn of `outputs`, and `saved` — exactly what
// PyTorch keeps for this op — is saved through the saved-tensor hooks. Returns the node, or
// null when nothing was recorded.
std::shared_ptr<FunctionNode> record(const char* name, const TensorList& inputs,
                                     const TensorList& outputs, const TensorList& saved,
                                     BackwardFunction backward);

// Makes `node` the grad_fn of `outputs` and links its edges to `inputs`.
void connect(const std::shared_ptr<Node>& node, const TensorList& inputs,
             const TensorList& outputs);

}  // namespace ckpt
