#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "engine/tensor/device.hpp"
#include "engine/tensor/dtype.hpp"
#include "engine/tensor/memory_ledger.hpp"

namespace ckpt {

// A block of tensor memory. Its bytes are in the ledger from construction to destruction, so
// "freed" means exactly: the last Tensor (or saved reference) that shared it went away. The
// memory itself comes from its device's backend (device.hpp): the process-wide storage pool on
// the cpu (which the ledger does not count), nothing on `meta`, whose storages have bytes in
// the ledger and no data. The ledger's bytes are the device's (rounded on CUDA); bytes() are the
// tensor's.
class Storage {
 public:
  Storage(std::shared_ptr<MemoryLedger> ledger, std::int64_t bytes,
          Device device = current_device());
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() { return data_; }
  const void* data() const { return data_; }
  std::int64_t bytes() const { return bytes_; }
  AllocationId id() const { return id_; }
  Device device() const { return device_; }
  MemoryLedger& ledger() const { return *ledger_; }
  const std::shared_ptr<MemoryLedger>& ledger_ptr() const { return ledger_; }

 private:
  std::shared_ptr<MemoryLedger> ledger_;
  std::int64_t bytes_;
  Device device_;
  AllocationId id_ = 0;
  void* data_ = nullptr;      // owned: handed back to the pool by the destructor
  std::size_t capacity_ = 0;  // the pool's class size of the block
};

}  // namespace ckpt
