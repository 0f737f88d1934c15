#pragma once

// The device seam (docs/ARCHITECTURE.md "Devices behind one seam"), storage half: where a tensor's
// bytes live and how they are moved. One Backend per device, in the spirit of ggml's backend and
// buffer structs: `cpu` holds real memory from the storage pool; `meta` holds none (a dry run:
// every allocation is in the ledger with its bytes and category, kernels skip their
// arithmetic); `cuda` holds device memory from cudaMalloc when the CUDA backend is built and a
// GPU is present. The arithmetic half, one kernel table per device, is
// engine/kernels/kernel_table.hpp. Every allocation on every device is a ledger event. How a
// device's framework holds those bytes (rounding, workspaces, masks: its memory semantics) is
// engine/tensor/memory_semantics.hpp; meta borrows the semantics of the device it stands in for.

#include <cstddef>
#include <cstdint>
#include <string>

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
  // Byte moves within this device's memory and across the host boundary (host pointers are
  // plain memory); none is called on a device that does not compute.
  void (*zero)(void* block, std::size_t bytes);
  void (*write)(void* device_dst, const void* host_src, std::size_t bytes);
  void (*read)(void* host_dst, const void* device_src, std::size_t bytes);
  void (*copy)(void* dst, const void* src, std::size_t bytes);
};

// Whether a backend for `device` exists in this build and on this machine; `why` says what is
// missing when not (no CUDA backend built, or no GPU found).
bool device_available(Device device, std::string* why = nullptr);

// The backend of a device; throws std::runtime_error for a device this build cannot use.
const Backend& backend(Device device);

// The device new tensors are made on by this thread: cpu, unless a DeviceScope says otherwise.
Device current_device();

// The device whose memory semantics this thread's meta tensors follow: cpu unless a DeviceScope
// says otherwise (a dry run of a CUDA run stands in for cuda).
Device meta_stands_in_for();

// New tensors made on this thread during the scope's lifetime live on `device` (a dry run puts
// the whole run on `meta`). The one-argument form keeps the device meta stands in for; the
// two-argument one sets it: DeviceScope(Device::meta, Device::cuda) is a dry run with CUDA's
// memory semantics, which needs no GPU.
class DeviceScope {
 public:
  explicit DeviceScope(Device device);
  DeviceScope(Device device, Device stands_in_for);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  Device previous_;
  Device previous_stand_in_;
};

}  // namespace ckpt
