#include "engine/tensor/device.hpp"

#include <cstring>
#include <stdexcept>
#include <string>

#include "engine/tensor/storage_pool.hpp"

#ifdef CKPTLAB_HAVE_CUDA
#include "engine/cuda/cuda_api.hpp"
#endif

namespace ckpt {

namespace {

thread_local Device t_device = Device::cpu;
thread_local Device t_stand_in = Device::cpu;

void* no_memory(std::size_t, std::size_t& capacity) {
  capacity = 0;
  return nullptr;
}
void release_nothing(void*, std::size_t) noexcept {}
void zero_nothing(void*, std::size_t) {}
void move_nothing(void*, const void*, std::size_t) {}

void host_zero(void* block, std::size_t bytes) {
  if (bytes) std::memset(block, 0, bytes);
}
void host_copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
}

const Backend kCpu{
    Device::cpu, "cpu",      true,      &storage_pool::acquire, &storage_pool::release, &host_zero,
    &host_copy,  &host_copy, &host_copy};
const Backend kMeta{Device::meta,  "meta",        false,         &no_memory,   &release_nothing,
                    &zero_nothing, &move_nothing, &move_nothing, &move_nothing};

#ifdef CKPTLAB_HAVE_CUDA
// Device memory straight from cudaMalloc, one block per storage: the ledger's bytes are what
// tensors hold (torch.cuda.memory_allocated); a caching device pool is not built yet.
void* cuda_acquire(std::size_t bytes, std::size_t& capacity) {
  capacity = bytes;
  return bytes ? cuda::device_alloc(bytes) : nullptr;
}
void cuda_release(void* block, std::size_t) noexcept {
  if (block) cuda::device_free(block);
}
void cuda_zero(void* block, std::size_t bytes) {
  if (bytes) cuda::zero(block, bytes);
}
void cuda_write(void* dst, const void* src, std::size_t bytes) {
  if (bytes) cuda::copy_to_device(dst, src, bytes);
}
void cuda_read(void* dst, const void* src, std::size_t bytes) {
  if (bytes) cuda::copy_to_host(dst, src, bytes);
}
void cuda_copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes) cuda::copy_on_device(dst, src, bytes);
}
const Backend kCuda{Device::cuda, "cuda",      true,       &cuda_acquire, &cuda_release,
                    &cuda_zero,   &cuda_write, &cuda_read, &cuda_copy};
#endif

}  // namespace

const Backend& backend(Device device) {
  switch (device) {
    case Device::cpu:
      return kCpu;
    case Device::meta:
      return kMeta;
    case Device::cuda:
      break;
  }
  std::string why;
  if (!device_available(device, &why))
    throw std::runtime_error(std::string("no tensor memory on the ") + device_name(device) +
                             " device: " + why);
#ifdef CKPTLAB_HAVE_CUDA
  return kCuda;
#else
  throw std::logic_error("unreachable: no cuda backend in this build");
#endif
}

bool device_available(Device device, std::string* why) {
  if (device != Device::cuda) return true;
#ifdef CKPTLAB_HAVE_CUDA
  // Asked once: the driver's answer does not change while the process runs.
  static const int count = cuda::device_count();
  static const std::string summary = cuda::device_summary();
  if (count > 0) return true;
  if (why) *why = summary;
#else
  if (why) *why = "this build has no CUDA backend (nvcc was not found when it was configured)";
#endif
  return false;
}

Device current_device() {
  return t_device;
}

Device meta_stands_in_for() {
  return t_stand_in;
}

DeviceScope::DeviceScope(Device device) : DeviceScope(device, t_stand_in) {}

DeviceScope::DeviceScope(Device device, Device stands_in_for)
    : previous_(t_device), previous_stand_in_(t_stand_in) {
  if (stands_in_for == Device::meta)
    throw std::invalid_argument("the meta device stands in for cpu or cuda, not for itself");
  backend(device);  // a device without a backend is refused here, not at the first tensor
  t_device = device;
  t_stand_in = stands_in_for;
}

DeviceScope::~DeviceScope() {
  t_device = previous_;
  t_stand_in = previous_stand_in_;
}

}  // namespace ckpt
