#pragma once

#include <any>
#include <functional>
#include <memory>
#include <string>

#include "engine/tensor/tensor.hpp"

namespace ckpt {

class Node;

// torch.autograd.graph.saved_tensors_hooks: pack runs when an op saves a tensor for backward,
// unpack when backward needs it. Hooks form a stack and only the innermost applies.
struct SavedTensorHooks {
  std::function<std::any(const Tensor&)> pack;
  std::function<Tensor(std::any&)> unpack;
};

class SavedTensorHooksScope {
 public:
  explicit SavedTensorHooksScope(std::shared_ptr<SavedTensorHooks> hooks);
  ~SavedTensorHooksScope();
  SavedTensorHooksScope(const SavedTensorHooksScope&) = delete;
  SavedTensorHooksScope& operator=(const SavedTensorHooksScope&) = delete;

  static std::shared_ptr<SavedTensorHooks> innermost();
};

// Suspends saved-tensor hooks (the innermost set is hidden until the scope ends).
class DisableSavedTensorHooksScope {
 public:
  DisableSavedTensorHooksScope();
  ~DisableSavedTensorHooksScope();
  DisableSavedTensorHooksScope(const DisableSavedTensorHooksScope&) = delete;
  DisableSavedTensorHooksScope& operator=(const DisableSavedTensorHooksScope&) = delete;
};

// A tensor kept by a node for its backward. It holds the data without history (so a node that
// saves its own output makes no reference cycle) and the version at save time (so an in-place
// change before backward is an error, as in PyTorch).
class SavedVariable {
 public:
  SavedVariable() = default;
  // `producer` is the node whose output this is (the saving node for its own outputs), or null.
  SavedVariable(const Tensor& t, const std::shared_ptr<Node>& producer);

  Tensor unpack(const Node& owner) const;
  void release();
  bool released() const { return released_; }
  bool hooked() const { return hooks_ != nullptr; }
  // The data held directly (undefined when a pack hook took it, or after release).
  const Tensor& data() const { return data_; }

 private:
  Tensor data_;
  mutable std::any packed_;
  std::shared_ptr<SavedTensorHooks> hooks_;
  std::shared_ptr<VersionCounter> version_;
  std::uint32_t saved_version_ = 0;
  std::weak_ptr<Node> producer_;
  std::uint32_t output_nr_ = 0;
  Shape shape_;
  DType dtype_ = DType::f32;
  bool had_producer_ = false;
  bool released_ = false;
};

}  // namespace ckpt
