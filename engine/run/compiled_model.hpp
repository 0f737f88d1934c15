#pragma once

// A Model prepared for execution: every value gets an integer id, every op its kernel and the
// ids it reads and writes, and every value the op after which nothing needs it (so that a
// run frees intermediate tensors when PyTorch's Python variables would go out of scope).
// Immutable once built; runs on several threads share it.

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/autograd/execution_context.hpp"
#include "engine/model/model.hpp"
#include "engine/model/op_registry.hpp"

namespace ckpt {

struct CompiledOp {
  const OpNode* node = nullptr;
  const OpKind* kind = nullptr;
  std::vector<int> inputs;  // -1 for an absent optional input
  std::vector<int> outputs;
};

class CompiledModel {
 public:
  explicit CompiledModel(const Model& model);

  // Ids: parameters [0, P), constants [P, P + C), inputs, then op outputs in op order, so that
  // the values a range of ops makes are one range of ids.
  int parameter_count() const { return parameters_; }
  int static_count() const { return statics_; }  // parameters + constants
  int input_id(std::size_t k) const { return statics_ + static_cast<int>(k); }
  int value_count() const { return static_cast<int>(names_.size()); }
  int first_output_id(std::int64_t op) const { return first_out_[static_cast<std::size_t>(op)]; }
  const std::string& name(int id) const { return names_[static_cast<std::size_t>(id)]; }
  int id(const std::string& name) const;  // throws when unknown
  std::vector<int> ids(const std::vector<std::string>& names) const;

  const std::vector<CompiledOp>& ops() const { return ops_; }
  // Values whose last use is op k (never model outputs, the loss, or parameters).
  const std::vector<int>& release_after(std::int64_t k) const {
    return release_[static_cast<std::size_t>(k)];
  }
  const std::vector<int>& outputs() const { return outputs_; }
  int loss_id() const { return loss_; }  // -1 unless the model computes its own loss

  // Every op's node name and every value's name, interned once: a run's context starts from
  // this table (ExecutionContext's `known`), and the ids below are its labels.
  const std::shared_ptr<const LabelTable>& labels() const { return labels_; }
  LabelId op_label(std::int64_t k) const { return op_labels_[static_cast<std::size_t>(k)]; }
  LabelId value_label(int id) const { return value_labels_[static_cast<std::size_t>(id)]; }

 private:
  int parameters_ = 0;
  int statics_ = 0;
  std::vector<std::string> names_;
  std::unordered_map<std::string, int> ids_;
  std::vector<int> first_out_;
  std::vector<CompiledOp> ops_;
  std::vector<std::vector<int>> release_;
  std::vector<int> outputs_;
  int loss_ = -1;
  std::shared_ptr<const LabelTable> labels_;
  std::vector<LabelId> op_labels_;
  std::vector<LabelId> value_labels_;
};

}  // namespace ckpt
