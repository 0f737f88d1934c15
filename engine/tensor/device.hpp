#pragma once

// The device seam (DESIGN.md "Devices behind one seam"): where a tensor's bytes live and
// whether kernels compute on them. One Backend per device, in the spirit of ggml's backend
// struct: `cpu` holds real memory from the storage pool; `meta` holds none (a dry run: every
// allocation is in the ledger with its bytes and category, kernels skip their arithmetic);
// `cuda` is reached through the same table when the CUDA backend is built.

#include <cstddef>
#include <cstdint>

#include "engine/tensor/dtype.hpp"

namespace ckpt {

struct Backend {
  Device device;
  const char* name;
  // Whether kernels run on tensors of this device (false: shapes and bytes only).
  bool computes;
  // Memory for `bytes` bytes (nullptr for a device without data); `capacity` receives what
  // release() needs. Throws std::bad_alloc when the device has no memory left.
  void* (*acquire)(std::size_t bytes, std::size_t& capacity);
  void (*release)(void* block, std::size_t capacity) noexcept;
};

// The backend of a device; throws std::runtime_error for a device this build cannot use.
const Backend& backend(Device device);

// The device new tensors are made on by this thread: cpu, unless a DeviceScope says otherwise.
Device current_device();

// New tensors made on this thread during the scope's lifetime live on `device` (a dry run puts
// the whole run on `meta`).
class DeviceScope {
 public:
  explicit DeviceScope(Device device);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  Device previous_;
};

}  // namespace ckpt
