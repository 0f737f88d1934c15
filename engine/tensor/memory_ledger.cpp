#include "engine/tensor/memory_ledger.hpp"

#include <algorithm>
#include <stdexcept>

namespace ckpt {

namespace {
thread_local std::shared_ptr<MemoryLedger> t_current;

std::shared_ptr<MemoryLedger> default_ledger() {
  static auto ledger = std::make_shared<MemoryLedger>();
  return ledger;
}

std::string human_bytes(std::int64_t b) {
  return std::to_string(b) + " bytes";
}
}  // namespace

const char* category_name(MemoryCategory c) {
  switch (c) {
    case MemoryCategory::parameter:
      return "parameter";
    case MemoryCategory::input:
      return "input";
    case MemoryCategory::activation:
      return "activation";
    case MemoryCategory::temporary:
      return "temporary";
    case MemoryCategory::gradient:
      return "gradient";
    case MemoryCategory::checkpoint_input:
      return "checkpoint input";
    case MemoryCategory::recomputed:
      return "recomputed";
    case MemoryCategory::rng_state:
      return "rng state";
    case MemoryCategory::workspace:
      return "workspace";
    case MemoryCategory::optimizer_state:
      return "optimizer state";
  }
  return "?";
}

MemoryCategory category_from_name(std::string_view name) {
  for (std::size_t i = 0; i < kMemoryCategoryCount; ++i) {
    auto c = static_cast<MemoryCategory>(i);
    if (name == category_name(c)) return c;
  }
  throw std::invalid_argument("unknown memory category '" + std::string(name) + "'");
}

std::shared_ptr<MemoryLedger> MemoryLedger::process_default() {
  return default_ledger();
}

std::shared_ptr<MemoryLedger> MemoryLedger::current() {
  return t_current ? t_current : default_ledger();
}

MemoryCategory MemoryLedger::default_category() const {
  return category_stack_.empty() ? base_category() : category_stack_.back();
}

void MemoryLedger::publish(const AllocationEvent& e) {
  for (auto* l : listeners_) l->on_allocation(e);
}

void MemoryLedger::set_locator(std::function<std::string()> locator) {
  std::lock_guard lock(mutex_);
  locator_ = std::move(locator);
}

void MemoryLedger::fail_allocation_at(std::int64_t k) {
  std::lock_guard lock(mutex_);
  fail_at_ = k;
}

std::int64_t MemoryLedger::allocation_count() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

void MemoryLedger::push_purpose(std::string purpose) {
  std::lock_guard lock(mutex_);
  purposes_.push_back(std::move(purpose));
}

void MemoryLedger::pop_purpose() {
  std::lock_guard lock(mutex_);
  purposes_.pop_back();
}

// " in conv2d (features.conv0)", " for the RNG state of checkpoint 'block'", or "" when
// nothing is known (a caller's own tensors, outside any run).
std::string MemoryLedger::where() const {
  const std::string op = locator_ ? locator_() : std::string();
  if (!op.empty()) return " in " + op;
  if (!purposes_.empty()) return " for " + purposes_.back();
  return {};
}

AllocationId MemoryLedger::record_alloc(std::int64_t bytes) {
  std::lock_guard lock(mutex_);
  const auto category = default_category();
  if (++requests_ == fail_at_) {
    const std::string at = where();
    throw std::runtime_error(
        "injected allocation failure: allocation #" + std::to_string(requests_) + " (" +
        human_bytes(bytes) + " of " + category_name(category) + " memory)" +
        (at.empty() ? " outside any op" : at) + " failed on purpose (fault injection)");
  }
  if (bytes >= kMaxAllocationBytes) {
    throw std::runtime_error("a tensor of " + human_bytes(bytes) + where() +
                             " is beyond the 256 TiB one allocation may have (a smaller batch or "
                             "sequence brings it back)");
  }
  if (cap_ > 0 && live_total_ + bytes > cap_) {
    throw std::runtime_error("memory cap exceeded: allocating " + human_bytes(bytes) + where() +
                             " would bring live memory to " + human_bytes(live_total_ + bytes) +
                             ", above the cap of " + human_bytes(cap_));
  }
  const AllocationId id = next_id_++;
  live_.emplace(id, Live{bytes, category});
  by_category_[static_cast<std::size_t>(category)] += bytes;
  live_total_ += bytes;
  peak_ = std::max(peak_, live_total_);
  AllocationEvent e;
  e.kind = AllocationEvent::Kind::alloc;
  e.allocation = id;
  e.bytes = bytes;
  e.category = category;
  publish(e);
  return id;
}

void MemoryLedger::record_free(AllocationId id) {
  std::lock_guard lock(mutex_);
  auto it = live_.find(id);
  if (it == live_.end()) return;
  const Live l = it->second;
  live_.erase(it);
  by_category_[static_cast<std::size_t>(l.category)] -= l.bytes;
  live_total_ -= l.bytes;
  AllocationEvent e;
  e.kind = AllocationEvent::Kind::free;
  e.allocation = id;
  e.bytes = l.bytes;
  e.category = l.category;
  publish(e);
}

void MemoryLedger::recategorize(AllocationId id, MemoryCategory to) {
  std::lock_guard lock(mutex_);
  auto it = live_.find(id);
  if (it == live_.end() || it->second.category == to) return;
  const MemoryCategory from = it->second.category;
  by_category_[static_cast<std::size_t>(from)] -= it->second.bytes;
  by_category_[static_cast<std::size_t>(to)] += it->second.bytes;
  it->second.category = to;
  AllocationEvent e;
  e.kind = AllocationEvent::Kind::recategorize;
  e.allocation = id;
  e.bytes = it->second.bytes;
  e.category = to;
  e.previous = from;
  publish(e);
}

MemoryCategory MemoryLedger::category_of(AllocationId id) const {
  std::lock_guard lock(mutex_);
  auto it = live_.find(id);
  if (it == live_.end()) throw std::logic_error("category_of: allocation is not live");
  return it->second.category;
}

void MemoryLedger::tag(AllocationId id, std::string_view tensor_name) {
  std::lock_guard lock(mutex_);
  if (listeners_.empty()) return;
  AllocationEvent e;
  e.kind = AllocationEvent::Kind::tag;
  e.allocation = id;
  e.name = tensor_name;
  publish(e);
}

std::int64_t MemoryLedger::live_bytes() const {
  std::lock_guard lock(mutex_);
  return live_total_;
}

std::int64_t MemoryLedger::live_bytes(MemoryCategory c) const {
  std::lock_guard lock(mutex_);
  return by_category_[static_cast<std::size_t>(c)];
}

CategoryBytes MemoryLedger::live_by_category() const {
  std::lock_guard lock(mutex_);
  return by_category_;
}

std::int64_t MemoryLedger::peak_bytes() const {
  std::lock_guard lock(mutex_);
  return peak_;
}

std::int64_t MemoryLedger::live_allocations() const {
  std::lock_guard lock(mutex_);
  return static_cast<std::int64_t>(live_.size());
}

void MemoryLedger::reset_peak() {
  std::lock_guard lock(mutex_);
  peak_ = live_total_;
}

void MemoryLedger::add_listener(AllocationListener* listener) {
  std::lock_guard lock(mutex_);
  listeners_.push_back(listener);
}

void MemoryLedger::remove_listener(AllocationListener* listener) {
  std::lock_guard lock(mutex_);
  listeners_.erase(std::remove(listeners_.begin(), listeners_.end(), listener), listeners_.end());
}

LedgerScope::LedgerScope(std::shared_ptr<MemoryLedger> ledger) : previous_(std::move(t_current)) {
  t_current = std::move(ledger);
}

LedgerScope::~LedgerScope() {
  t_current = std::move(previous_);
}

AllocationPurpose::AllocationPurpose(std::string purpose) : ledger_(MemoryLedger::current()) {
  ledger_->push_purpose(std::move(purpose));
}

AllocationPurpose::~AllocationPurpose() {
  ledger_->pop_purpose();
}

CategoryScope::CategoryScope(MemoryCategory c) : ledger_(MemoryLedger::current()) {
  ledger_->push_category(c);
}

CategoryScope::~CategoryScope() {
  ledger_->pop_category();
}

}  // namespace ckpt
