#include "engine/tensor/storage.hpp"

#include <new>
#include <stdexcept>
#include <string>

#include "engine/tensor/memory_semantics.hpp"

namespace ckpt {

Storage::Storage(std::shared_ptr<MemoryLedger> ledger, std::int64_t bytes, Device device)
    : ledger_(std::move(ledger)), bytes_(bytes), device_(device) {
  if (bytes < 0) throw std::invalid_argument("storage: negative size");
  const Backend& device_backend = backend(device);
  // The ledger checks the cap before any memory is touched. It counts what the device's
  // allocator hands out: on CUDA every block is rounded up to 512 B (memory_semantics.hpp,
  // CUDACachingAllocator's round_size), so torch.cuda.memory_allocated()'s figure; a meta
  // storage follows the rules of the device it stands in for.
  id_ = ledger_->record_alloc(memory_semantics(device).allocated_bytes(bytes));
  try {
    data_ = device_backend.acquire(static_cast<std::size_t>(bytes), capacity_);
  } catch (const std::bad_alloc&) {
    ledger_->record_free(id_);
    throw std::runtime_error("out of memory allocating " + std::to_string(bytes) + " bytes");
  }
}

Storage::~Storage() {
  // The ledger counts the bytes as freed now, whether the block goes back to the system or
  // waits in the pool for the next tensor of its size.
  ledger_->record_free(id_);
  backend(device_).release(data_, capacity_);
}

}  // namespace ckpt
