#include "engine/tensor/memory_ledger.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace ckpt {

namespace {
thread_local std::shared_ptr<MemoryLedger> t_current;

std::shared_ptr<MemoryLedger> default_ledger() {
  static auto ledger = std::make_shared<MemoryLedger>();
  return ledger;
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
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

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::setup:
      return "setup";
    case Phase::forward:
      return "forward";
    case Phase::backward:
      return "backward";
    case Phase::recompute:
      return "recompute";
  }
  return "?";
}

const char* severity_name(Severity s) {
  switch (s) {
    case Severity::info:
      return "info";
    case Severity::warning:
      return "warning";
    case Severity::error:
      return "error";
  }
  return "?";
}

std::shared_ptr<MemoryLedger> MemoryLedger::current() {
  return t_current ? t_current : default_ledger();
}

MemoryCategory MemoryLedger::default_category() const {
  if (!category_stack_.empty()) return category_stack_.back();
  switch (phase_) {
    case Phase::recompute:
      return MemoryCategory::recomputed;
    case Phase::setup:
      return MemoryCategory::input;
    case Phase::forward:
    case Phase::backward:
      return MemoryCategory::temporary;
  }
  return MemoryCategory::temporary;
}

LedgerEvent MemoryLedger::make(LedgerEvent::Kind kind) const {
  LedgerEvent e;
  e.kind = kind;
  e.phase = phase_;
  e.step = current_step();
  e.op = step_open_ ? step_op_ : 0;
  e.node = step_open_ ? step_node_ : current_node();
  return e;
}

void MemoryLedger::publish(LedgerEvent e) {
  for (auto* l : listeners_) l->on_event(e);
}

AllocationId MemoryLedger::record_alloc(std::int64_t bytes) {
  std::lock_guard lock(mutex_);
  const auto category = default_category();
  if (cap_ > 0 && live_total_ + bytes > cap_) {
    const std::string where =
        step_open_ ? " in " + label(step_op_) +
                         (step_node_ ? " (" + label(step_node_) + ")" : std::string())
                   : std::string();
    throw std::runtime_error("memory cap exceeded: allocating " + human_bytes(bytes) + where +
                             " would bring live memory to " + human_bytes(live_total_ + bytes) +
                             ", above the cap of " + human_bytes(cap_));
  }
  const AllocationId id = next_id_++;
  live_.emplace(id, Live{bytes, category});
  by_category_[static_cast<std::size_t>(category)] += bytes;
  live_total_ += bytes;
  peak_ = std::max(peak_, live_total_);
  auto e = make(LedgerEvent::Kind::alloc);
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
  auto e = make(LedgerEvent::Kind::free);
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
  auto e = make(LedgerEvent::Kind::recategorize);
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
  auto e = make(LedgerEvent::Kind::tag);
  e.allocation = id;
  e.text = intern(tensor_name);
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

LabelId MemoryLedger::intern(std::string_view s) {
  std::lock_guard lock(mutex_);
  auto it = label_ids_.find(s);
  if (it != label_ids_.end()) return it->second;
  labels_.emplace_back(s);
  const auto id = static_cast<LabelId>(labels_.size() - 1);
  label_ids_.emplace(labels_.back(), id);
  return id;
}

const std::string& MemoryLedger::label(LabelId id) const {
  std::lock_guard lock(mutex_);
  return labels_.at(id);
}

void MemoryLedger::begin_step(LabelId op, LabelId node) {
  std::lock_guard lock(mutex_);
  step_open_ = true;
  step_op_ = op;
  step_node_ = node;
  ++next_step_;
  auto e = make(LedgerEvent::Kind::step_begin);
  e.time_ns = now_ns();
  publish(e);
}

void MemoryLedger::end_step() {
  std::lock_guard lock(mutex_);
  auto e = make(LedgerEvent::Kind::step_end);
  e.time_ns = now_ns();
  publish(e);
  step_open_ = false;
}

void MemoryLedger::mark_recompute(bool begin, std::string_view segment) {
  std::lock_guard lock(mutex_);
  auto e = make(begin ? LedgerEvent::Kind::recompute_begin : LedgerEvent::Kind::recompute_end);
  e.text = intern(segment);
  publish(e);
}

void MemoryLedger::mark_checkpoint(bool begin, std::string_view segment) {
  std::lock_guard lock(mutex_);
  auto e = make(begin ? LedgerEvent::Kind::checkpoint_begin : LedgerEvent::Kind::checkpoint_end);
  e.text = intern(segment);
  publish(e);
}

void MemoryLedger::message(Severity severity, std::string_view text) {
  std::lock_guard lock(mutex_);
  messages_.emplace_back(severity, std::string(text));
  auto e = make(LedgerEvent::Kind::message);
  e.severity = severity;
  e.text = intern(text);
  publish(e);
}

void MemoryLedger::add_listener(LedgerListener* listener) {
  std::lock_guard lock(mutex_);
  listeners_.push_back(listener);
}

void MemoryLedger::remove_listener(LedgerListener* listener) {
  std::lock_guard lock(mutex_);
  listeners_.erase(std::remove(listeners_.begin(), listeners_.end(), listener), listeners_.end());
}

LedgerScope::LedgerScope(std::shared_ptr<MemoryLedger> ledger) : previous_(std::move(t_current)) {
  t_current = std::move(ledger);
}

LedgerScope::~LedgerScope() {
  t_current = std::move(previous_);
}

OpScope::OpScope(std::string_view op) {
  auto ledger = MemoryLedger::current();
  if (ledger->in_step()) return;
  ledger_ = ledger.get();
  ledger_->begin_step(ledger_->intern(op), ledger_->current_node());
}

OpScope::OpScope(MemoryLedger& ledger, std::string_view op, LabelId node) {
  if (ledger.in_step()) return;
  ledger_ = &ledger;
  ledger_->begin_step(ledger_->intern(op), node);
}

OpScope::~OpScope() {
  if (ledger_) ledger_->end_step();
}

PhaseScope::PhaseScope(Phase p) : ledger_(MemoryLedger::current()), previous_(ledger_->phase()) {
  ledger_->set_phase(p);
}

PhaseScope::~PhaseScope() {
  ledger_->set_phase(previous_);
}

NodeScope::NodeScope(std::string_view node) : ledger_(MemoryLedger::current()) {
  ledger_->push_node(ledger_->intern(node));
}

NodeScope::~NodeScope() {
  ledger_->pop_node();
}

CategoryScope::CategoryScope(MemoryCategory c) : ledger_(MemoryLedger::current()) {
  ledger_->push_category(c);
}

CategoryScope::~CategoryScope() {
  ledger_->pop_category();
}

void warn(std::string_view text) {
  MemoryLedger::current()->message(Severity::warning, text);
}

}  // namespace ckpt
