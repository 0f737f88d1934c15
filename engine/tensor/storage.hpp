#pragma once

#include <cstdint>
#include <memory>

#include "engine/tensor/dtype.hpp"
#include "engine/tensor/memory_ledger.hpp"

namespace ckpt {

// A block of tensor memory. Its bytes are in the ledger from construction to destruction, so
// "freed" means exactly: the last Tensor (or saved reference) that shared it went away.
class Storage {
 public:
  Storage(std::shared_ptr<MemoryLedger> ledger, std::int64_t bytes, Device device = Device::cpu);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() { return data_.get(); }
  const void* data() const { return data_.get(); }
  std::int64_t bytes() const { return bytes_; }
  AllocationId id() const { return id_; }
  Device device() const { return device_; }
  MemoryLedger& ledger() const { return *ledger_; }
  const std::shared_ptr<MemoryLedger>& ledger_ptr() const { return ledger_; }

 private:
  struct AlignedFree {
    void operator()(void* p) const;
  };
  std::shared_ptr<MemoryLedger> ledger_;
  std::int64_t bytes_;
  Device device_;
  AllocationId id_ = 0;
  std::unique_ptr<void, AlignedFree> data_;
};

}  // namespace ckpt
