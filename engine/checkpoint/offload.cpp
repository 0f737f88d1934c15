#include "engine/checkpoint/offload.hpp"

#include "engine/kernels/kernels.hpp"
#include "engine/tensor/memory_ledger.hpp"

namespace ckpt {

struct HostOffload::State {
  std::shared_ptr<MemoryLedger> host = std::make_shared<MemoryLedger>();
  std::int64_t to_host = 0;
  std::int64_t to_device = 0;
};

HostOffload::HostOffload()
    : state_(std::make_shared<State>()), hooks_(std::make_shared<SavedTensorHooks>()) {
  hooks_->pack = [state = state_](const Tensor& t) -> std::any {
    // pack_to_cpu: torch.empty(..., pin_memory=True) then copy_: host memory, not the device's
    // (a dry run's copy is a meta tensor with the same bytes, in the same host ledger).
    LedgerScope host(state->host);
    Tensor copy = contiguous_copy(t);
    state->to_host += copy.nbytes();
    return copy;
  };
  hooks_->unpack = [state = state_](std::any& packed) -> Tensor {
    // unpack_from_cpu: tensor.to(device, non_blocking=True), a new device tensor on every unpack.
    const Tensor& host = std::any_cast<const Tensor&>(packed);
    CategoryScope saved(MemoryCategory::activation);
    AllocationPurpose purpose("a saved tensor copied back from host memory (save_on_cpu)");
    Tensor back = contiguous_copy(host);
    state->to_device += back.nbytes();
    return back;
  };
}

OffloadFigures HostOffload::figures() const {
  return {state_->host->peak_bytes(), state_->to_host, state_->to_device};
}

}  // namespace ckpt
