#include "engine/tensor/storage.hpp"

#include <cstdlib>
#include <new>
#include <stdexcept>
#include <string>

namespace ckpt {

namespace {
constexpr std::size_t kAlignment = 64;
}

void Storage::AlignedFree::operator()(void* p) const {
  std::free(p);
}

Storage::Storage(std::shared_ptr<MemoryLedger> ledger, std::int64_t bytes, Device device)
    : ledger_(std::move(ledger)), bytes_(bytes), device_(device) {
  if (bytes < 0) throw std::invalid_argument("storage: negative size");
  if (device != Device::cpu)
    throw std::runtime_error("storage: only CPU memory is managed by this ledger");
  // The ledger checks the cap before any memory is touched.
  id_ = ledger_->record_alloc(bytes);
  const auto rounded = (static_cast<std::size_t>(bytes) + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  if (!p) {
    ledger_->record_free(id_);
    throw std::runtime_error("out of memory allocating " + std::to_string(bytes) + " bytes");
  }
  data_.reset(p);
}

Storage::~Storage() {
  ledger_->record_free(id_);
}

}  // namespace ckpt
