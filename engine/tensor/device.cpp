#include "engine/tensor/device.hpp"

#include <stdexcept>
#include <string>

#include "engine/tensor/storage_pool.hpp"

namespace ckpt {

namespace {

thread_local Device t_device = Device::cpu;

void* no_memory(std::size_t, std::size_t& capacity) {
  capacity = 0;
  return nullptr;
}
void release_nothing(void*, std::size_t) noexcept {}

const Backend kCpu{Device::cpu, "cpu", true, &storage_pool::acquire, &storage_pool::release};
const Backend kMeta{Device::meta, "meta", false, &no_memory, &release_nothing};

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
  throw std::runtime_error(std::string("no tensor memory on the ") + device_name(device) +
                           " device in this engine: runs use the cpu (or meta, for a dry run)");
}

Device current_device() {
  return t_device;
}

DeviceScope::DeviceScope(Device device) : previous_(t_device) {
  backend(device);  // a device without a backend is refused here, not at the first tensor
  t_device = device;
}

DeviceScope::~DeviceScope() {
  t_device = previous_;
}

}  // namespace ckpt
