#include "engine/autograd/saved_variable.hpp"

#include <stdexcept>
#include <vector>

#include "engine/autograd/node.hpp"
#include "engine/tensor/memory_semantics.hpp"

namespace ckpt {

namespace {
thread_local std::vector<std::shared_ptr<SavedTensorHooks>> t_hooks;

std::string torch_type(DType d) {
  switch (d) {
    case DType::f32:
      return "torch.FloatTensor";
    case DType::f64:
      return "torch.DoubleTensor";
    case DType::i64:
      return "torch.LongTensor";
    case DType::b8:
      return "torch.BoolTensor";
    case DType::bf16:
      return "torch.BFloat16Tensor";
    case DType::f16:
      return "torch.HalfTensor";
    case DType::i32:
      return "torch.IntTensor";
  }
  return "?";
}
}  // namespace

SavedTensorHooksScope::SavedTensorHooksScope(std::shared_ptr<SavedTensorHooks> hooks) {
  t_hooks.push_back(std::move(hooks));
}
SavedTensorHooksScope::~SavedTensorHooksScope() {
  t_hooks.pop_back();
}

std::shared_ptr<SavedTensorHooks> SavedTensorHooksScope::innermost() {
  return t_hooks.empty() ? nullptr : t_hooks.back();
}

DisableSavedTensorHooksScope::DisableSavedTensorHooksScope() {
  t_hooks.push_back(nullptr);
}
DisableSavedTensorHooksScope::~DisableSavedTensorHooksScope() {
  t_hooks.pop_back();
}

SavedVariable::SavedVariable(const Tensor& t, const std::shared_ptr<Node>& producer)
    : version_(t.impl()->version),
      saved_version_(t.version()),
      producer_(producer),
      output_nr_(t.output_nr()),
      shape_(t.shape()),
      dtype_(t.dtype()),
      had_producer_(producer != nullptr) {
  hooks_ = SavedTensorHooksScope::innermost();
  Tensor plain = t.detach();
  if (hooks_) {
    packed_ = hooks_->pack(plain);
    return;
  }
  // Being saved for backward is what makes a temporary an activation.
  auto& ledger = t.storage()->ledger();
  const auto id = t.storage()->id();
  if (ledger.category_of(id) == MemoryCategory::temporary)
    ledger.recategorize(id, MemoryCategory::activation);
  data_ = std::move(plain);
}

Tensor SavedVariable::unpack(const Node& owner) const {
  if (!version_) return Tensor();  // nothing was saved in this slot
  if (released_)
    throw std::runtime_error(
        "Trying to backward through the graph a second time (or directly access saved tensors "
        "after they have already been freed). Saved intermediate values of the graph are freed "
        "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
        "backward through the graph a second time or if you need to access saved tensors after "
        "calling backward.");
  // As PyTorch: the version is checked only without hooks (what a pack hook returned cannot be
  // tracked; a non-reentrant checkpoint's recompute moves BatchNorm's running stats on).
  if (!hooks_ && version_->value != saved_version_) {
    std::string msg =
        "one of the variables needed for gradient computation has been modified by an inplace "
        "operation: [" +
        torch_type(dtype_) + " " + shape_str(shape_) + "]";
    if (had_producer_) {
      auto p = producer_.lock();
      msg += ", which is output " + std::to_string(output_nr_) + " of " +
             (p ? p->name() : owner.name()) + ",";
    }
    msg += " is at version " + std::to_string(version_->value) + "; expected version " +
           std::to_string(saved_version_) +
           " instead. Hint: enable anomaly detection to find the operation that failed to "
           "compute its gradient, with torch.autograd.set_detect_anomaly(True).";
    throw std::runtime_error(msg);
  }
  if (hooks_) return hooks_->unpack(packed_);
  return data_;
}

void SavedVariable::release() {
  // The hooks go too, as PyTorch's SavedVariable::reset_data() does: a non-reentrant
  // checkpoint's hooks hold its segment (inputs, RNG stash), which must die with the segment's
  // last saved variable, not with the whole graph at the end of the backward.
  data_ = Tensor();
  packed_.reset();
  // PyTorch drops the hooks with the data (SavedVariable::reset_data), and with them what a
  // non-reentrant checkpoint's hooks hold (its inputs and RNG stash), on every device.
  hooks_.reset();
  released_ = true;
}

}  // namespace ckpt
