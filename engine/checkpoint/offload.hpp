#pragma once

// torch.autograd.graph.save_on_cpu(pin_memory=True): every tensor an op saves for backward inside
// an offloaded module is copied to host memory when it is saved (the device's copy then lives
// only as long as the forward needs it) and copied back to the device when backward unpacks it
// (that copy lives as long as the backward function using it). Host memory is a ledger of its
// own, apart from the device's: its peak and the bytes each way are the offload's figures, and
// the copy time is estimated from the link's bandwidth.

#include <cstdint>
#include <memory>

#include "engine/autograd/saved_variable.hpp"

namespace ckpt {

class MemoryLedger;

struct OffloadFigures {
  std::int64_t host_peak_bytes = 0;  // the most host memory the saved copies held at once
  std::int64_t to_host_bytes = 0;    // copied device -> host when saved
  std::int64_t to_device_bytes = 0;  // copied host -> device when unpacked
};

class HostOffload {
 public:
  HostOffload();
  // The hooks to push around an offloaded module's forward (SavedTensorHooksScope).
  const std::shared_ptr<SavedTensorHooks>& hooks() const { return hooks_; }
  OffloadFigures figures() const;

 private:
  struct State;
  std::shared_ptr<State> state_;  // shared with the hooks, which saved variables may outlive us by
  std::shared_ptr<SavedTensorHooks> hooks_;
};

}  // namespace ckpt
