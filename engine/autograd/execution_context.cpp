#include "engine/autograd/execution_context.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

namespace ckpt {

namespace {
thread_local std::shared_ptr<ExecutionContext> t_current;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The ledger's base category follows the phase: what a phase allocates without saying so.
MemoryCategory base_category(Phase p) {
  switch (p) {
    case Phase::recompute:
      return MemoryCategory::recomputed;
    case Phase::setup:
      return MemoryCategory::input;
    case Phase::forward:
    case Phase::backward:
    case Phase::optimizer:
      return MemoryCategory::temporary;
  }
  return MemoryCategory::temporary;
}
}  // namespace

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
    case Phase::optimizer:
      return "optimizer";
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

LabelId LabelTable::intern(std::string_view s) {
  if (const LabelId id = find(s); id != kNoLabel) return id;
  labels_.emplace_back(s);
  const auto id = static_cast<LabelId>(labels_.size() - 1);
  ids_.emplace(labels_.back(), id);
  return id;
}

LabelId LabelTable::find(std::string_view s) const {
  const auto it = ids_.find(s);
  return it == ids_.end() ? kNoLabel : it->second;
}

ExecutionContext::ExecutionContext(std::shared_ptr<MemoryLedger> ledger,
                                   std::shared_ptr<const LabelTable> known)
    : ledger_(ledger ? std::move(ledger) : MemoryLedger::current()), known_(std::move(known)) {
  if (known_) {  // "" is known_'s label 0; labels made here follow its own
    base_ = known_->size();
    labels_.clear();
    label_ids_.clear();
  }
  ledger_->set_base_category(base_category(phase_));
  ledger_->add_listener(this);
  ledger_->set_locator([this] { return location(); });
}

ExecutionContext::~ExecutionContext() {
  for (RunListener* listener : std::exchange(listeners_, {})) listener->on_context_destroyed();
  ledger_->remove_listener(this);
  ledger_->set_locator({});
}

std::shared_ptr<ExecutionContext> ExecutionContext::current() {
  if (t_current) return t_current;
  // One default context per thread, over the process's default ledger.
  thread_local auto fallback = std::make_shared<ExecutionContext>(MemoryLedger::process_default());
  return fallback;
}

void ExecutionContext::set_phase(Phase p) {
  phase_ = p;
  ledger_->set_base_category(base_category(p));
}

RunEvent ExecutionContext::make(RunEvent::Kind kind) const {
  RunEvent e;
  e.kind = kind;
  e.phase = phase_;
  e.step = current_step();
  e.op = step_open_ ? step_op_ : 0;
  e.node = step_open_ ? step_node_ : current_node();
  return e;
}

void ExecutionContext::publish(const RunEvent& e) {
  for (auto* l : listeners_) l->on_event(e);
}

void ExecutionContext::on_allocation(const AllocationEvent& a) {
  if (listeners_.empty()) return;
  RunEvent e;
  switch (a.kind) {
    case AllocationEvent::Kind::alloc:
      e = make(RunEvent::Kind::alloc);
      break;
    case AllocationEvent::Kind::free:
      e = make(RunEvent::Kind::free);
      break;
    case AllocationEvent::Kind::recategorize:
      e = make(RunEvent::Kind::recategorize);
      e.previous = a.previous;
      break;
    case AllocationEvent::Kind::tag:
      e = make(RunEvent::Kind::tag);
      e.text = intern(a.name);
      break;
  }
  e.allocation = a.allocation;
  e.bytes = a.bytes;
  e.category = a.category;
  publish(e);
}

void ExecutionContext::tag(AllocationId allocation, LabelId name) {
  if (listeners_.empty()) return;
  RunEvent e = make(RunEvent::Kind::tag);
  e.text = name;
  e.allocation = allocation;
  publish(e);
}

LabelId ExecutionContext::intern(std::string_view s) {
  RecentLabel& recent =
      recent_labels_[((reinterpret_cast<std::uintptr_t>(s.data()) >> 4) ^ s.size()) %
                     recent_labels_.size()];
  if (recent.data == s.data() && recent.id != 0 && label(recent.id) == s) return recent.id;
  LabelId id = known_ ? known_->find(s) : kNoLabel;
  if (id == kNoLabel) {
    if (auto it = label_ids_.find(s); it != label_ids_.end()) {
      id = it->second;
    } else {
      labels_.emplace_back(s);
      id = base_ + static_cast<LabelId>(labels_.size() - 1);
      label_ids_.emplace(labels_.back(), id);
    }
  }
  recent = RecentLabel{s.data(), id};
  return id;
}

const std::string& ExecutionContext::label(LabelId id) const {
  return id < base_ ? known_->label(id) : labels_.at(id - base_);
}

std::string ExecutionContext::location() const {
  if (!step_open_) return {};
  return label(step_op_) + (step_node_ ? " (" + label(step_node_) + ")" : std::string());
}

void ExecutionContext::begin_step(LabelId op, LabelId node) {
  step_open_ = true;
  step_op_ = op;
  step_node_ = node;
  ++next_step_;
  if (listeners_.empty()) return;
  auto e = make(RunEvent::Kind::step_begin);
  e.time_ns = now_ns();
  publish(e);
}

void ExecutionContext::end_step() {
  if (!listeners_.empty()) {
    auto e = make(RunEvent::Kind::step_end);
    e.time_ns = now_ns();
    publish(e);
  }
  step_open_ = false;
}

void ExecutionContext::mark_recompute(bool begin, std::string_view segment) {
  auto e = make(begin ? RunEvent::Kind::recompute_begin : RunEvent::Kind::recompute_end);
  e.text = intern(segment);
  publish(e);
}

void ExecutionContext::mark_checkpoint(bool begin, std::string_view segment) {
  auto e = make(begin ? RunEvent::Kind::checkpoint_begin : RunEvent::Kind::checkpoint_end);
  e.text = intern(segment);
  publish(e);
}

void ExecutionContext::message(Severity severity, std::string_view text) {
  messages_.emplace_back(severity, std::string(text));
  auto e = make(RunEvent::Kind::message);
  e.severity = severity;
  e.text = intern(text);
  publish(e);
}

void ExecutionContext::note_replayed() {
  publish(make(RunEvent::Kind::replayed));
}

void ExecutionContext::note_host_bytes(std::int64_t bytes, std::string_view what) {
  auto e = make(RunEvent::Kind::host_bytes);
  e.bytes = bytes;
  e.text = intern(what);
  publish(e);
}

void ExecutionContext::add_listener(RunListener* listener) {
  listeners_.push_back(listener);
}

void ExecutionContext::remove_listener(RunListener* listener) {
  listeners_.erase(std::remove(listeners_.begin(), listeners_.end(), listener), listeners_.end());
}

ExecutionScope::ExecutionScope(std::shared_ptr<ExecutionContext> context)
    : context_(std::move(context)),
      previous_(std::exchange(t_current, context_)),
      ledger_scope_(context_->ledger_ptr()) {}

ExecutionScope::ExecutionScope(std::shared_ptr<MemoryLedger> ledger)
    : ExecutionScope(std::make_shared<ExecutionContext>(std::move(ledger))) {}

ExecutionScope::~ExecutionScope() {
  t_current = std::move(previous_);
}

OpScope::OpScope(std::string_view op) {
  auto context = ExecutionContext::current();
  if (context->in_step()) return;
  context_ = context.get();
  context_->begin_step(context_->intern(op), context_->current_node());
}

OpScope::OpScope(ExecutionContext& context, std::string_view op, LabelId node) {
  if (context.in_step()) return;
  context_ = &context;
  context_->begin_step(context_->intern(op), node);
}

OpScope::~OpScope() {
  if (context_) context_->end_step();
}

PhaseScope::PhaseScope(Phase p)
    : context_(ExecutionContext::current()), previous_(context_->phase()) {
  context_->set_phase(p);
}

PhaseScope::~PhaseScope() {
  context_->set_phase(previous_);
}

NodeScope::NodeScope(std::string_view node) : context_(ExecutionContext::current()) {
  context_->push_node(context_->intern(node));
}

NodeScope::NodeScope(LabelId node) : context_(ExecutionContext::current()) {
  context_->push_node(node);
}

NodeScope::~NodeScope() {
  context_->pop_node();
}

void warn(std::string_view text) {
  ExecutionContext::current()->message(Severity::warning, text);
}

}  // namespace ckpt
