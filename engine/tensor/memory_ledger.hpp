#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ckpt {

// Where a byte belongs. Follows PyTorch's memory profiler where it fits, plus the three
// categories checkpointing adds (checkpoint input, recomputed, RNG state).
enum class MemoryCategory : std::uint8_t {
  parameter,
  input,
  activation,  // saved for backward
  temporary,
  gradient,
  checkpoint_input,
  recomputed,
  rng_state,
};
inline constexpr std::size_t kMemoryCategoryCount = 8;
const char* category_name(MemoryCategory c);
MemoryCategory category_from_name(std::string_view name);  // throws std::invalid_argument

enum class Phase : std::uint8_t { setup, forward, backward, recompute };
const char* phase_name(Phase p);

enum class Severity : std::uint8_t { info, warning, error };
const char* severity_name(Severity s);

using LabelId = std::uint32_t;  // an interned string; 0 is the empty string
using AllocationId = std::uint64_t;
using CategoryBytes = std::array<std::int64_t, kMemoryCategoryCount>;

// One entry of the ledger's stream. Listeners (the trace recorder) receive them in order.
struct LedgerEvent {
  enum class Kind : std::uint8_t {
    step_begin,        // op, node, phase
    step_end,          //
    alloc,             // allocation, bytes, category
    free,              // allocation, bytes, category
    recategorize,      // allocation, bytes, category (new), previous
    tag,               // allocation, text: names the tensor an allocation holds
    checkpoint_begin,  // text: the segment (its forward, which keeps only its inputs)
    checkpoint_end,    // text: the segment
    recompute_begin,   // text: the segment
    recompute_end,     // text: the segment
    message,           // severity, text
  };
  Kind kind{};
  Phase phase{};
  MemoryCategory category{};
  MemoryCategory previous{};
  Severity severity{};
  AllocationId allocation = 0;
  std::int64_t bytes = 0;
  std::int64_t step = -1;  // the step the event belongs to (-1 outside any step)
  LabelId op = 0;
  LabelId node = 0;
  LabelId text = 0;
  std::int64_t time_ns = 0;  // steady clock, on step_begin and step_end
};

class LedgerListener {
 public:
  virtual ~LedgerListener() = default;
  virtual void on_event(const LedgerEvent& event) = 0;
};

// The allocator behind every tensor's storage, and the hub of a run's events: each allocation
// and free is recorded with its bytes, its category and the step (op execution) that caused it.
// Live bytes per category and the peak are exact at every moment. It counts what is live, never
// what a cache holds.
class MemoryLedger {
 public:
  MemoryLedger() = default;
  MemoryLedger(const MemoryLedger&) = delete;
  MemoryLedger& operator=(const MemoryLedger&) = delete;

  // The ledger new tensors draw from on this thread (a process-wide default unless a
  // LedgerScope is active).
  static std::shared_ptr<MemoryLedger> current();

  // Registers bytes; throws std::runtime_error when a cap is set and would be exceeded.
  AllocationId record_alloc(std::int64_t bytes);
  void record_free(AllocationId id);
  void recategorize(AllocationId id, MemoryCategory to);
  MemoryCategory category_of(AllocationId id) const;
  void tag(AllocationId id, std::string_view tensor_name);

  std::int64_t live_bytes() const;
  std::int64_t live_bytes(MemoryCategory c) const;
  CategoryBytes live_by_category() const;
  std::int64_t peak_bytes() const;
  std::int64_t live_allocations() const;
  void reset_peak();
  // 0 means no cap.
  void set_cap(std::int64_t bytes) { cap_ = bytes; }
  std::int64_t cap() const { return cap_; }

  // Context the next events are attributed to.
  Phase phase() const { return phase_; }
  void set_phase(Phase p) { phase_ = p; }
  LabelId intern(std::string_view s);
  const std::string& label(LabelId id) const;
  void begin_step(LabelId op, LabelId node);
  void end_step();
  bool in_step() const { return step_open_; }
  std::int64_t steps() const { return next_step_; }
  std::int64_t current_step() const { return step_open_ ? next_step_ - 1 : -1; }
  LabelId current_op() const { return step_open_ ? step_op_ : 0; }
  LabelId current_node() const { return node_stack_.empty() ? 0 : node_stack_.back(); }
  void push_node(LabelId node) { node_stack_.push_back(node); }
  void pop_node() { node_stack_.pop_back(); }
  void push_category(MemoryCategory c) { category_stack_.push_back(c); }
  void pop_category() { category_stack_.pop_back(); }
  MemoryCategory default_category() const;
  void mark_recompute(bool begin, std::string_view segment);
  void mark_checkpoint(bool begin, std::string_view segment);
  void message(Severity severity, std::string_view text);
  std::vector<std::pair<Severity, std::string>> messages() const { return messages_; }

  void add_listener(LedgerListener* listener);
  void remove_listener(LedgerListener* listener);

 private:
  struct Live {
    std::int64_t bytes;
    MemoryCategory category;
  };
  void publish(LedgerEvent e);
  LedgerEvent make(LedgerEvent::Kind kind) const;

  mutable std::recursive_mutex mutex_;
  std::unordered_map<AllocationId, Live> live_;
  CategoryBytes by_category_{};
  std::int64_t live_total_ = 0;
  std::int64_t peak_ = 0;
  std::int64_t cap_ = 0;
  AllocationId next_id_ = 1;

  Phase phase_ = Phase::setup;
  bool step_open_ = false;
  std::int64_t next_step_ = 0;
  LabelId step_op_ = 0;
  LabelId step_node_ = 0;
  std::vector<LabelId> node_stack_;
  std::vector<MemoryCategory> category_stack_;
  std::deque<std::string> labels_{""};
  std::unordered_map<std::string_view, LabelId> label_ids_{{"", 0}};
  std::vector<std::pair<Severity, std::string>> messages_;
  std::vector<LedgerListener*> listeners_;
};

// Makes `ledger` the current one on this thread for the scope's lifetime.
class LedgerScope {
 public:
  explicit LedgerScope(std::shared_ptr<MemoryLedger> ledger);
  ~LedgerScope();
  LedgerScope(const LedgerScope&) = delete;
  LedgerScope& operator=(const LedgerScope&) = delete;

 private:
  std::shared_ptr<MemoryLedger> previous_;
};

// One op execution = one step. Nested op calls (linear calling matmul) stay inside the
// outermost step, so that a step is what a user sees as one op.
class OpScope {
 public:
  explicit OpScope(std::string_view op);
  OpScope(MemoryLedger& ledger, std::string_view op, LabelId node);
  ~OpScope();
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

 private:
  MemoryLedger* ledger_ = nullptr;
};

class PhaseScope {
 public:
  explicit PhaseScope(Phase p);
  ~PhaseScope();
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;

 private:
  std::shared_ptr<MemoryLedger> ledger_;
  Phase previous_;
};

// Names the model node (a dotted module path plus op name) that the following steps belong to.
class NodeScope {
 public:
  explicit NodeScope(std::string_view node);
  ~NodeScope();
  NodeScope(const NodeScope&) = delete;
  NodeScope& operator=(const NodeScope&) = delete;

 private:
  std::shared_ptr<MemoryLedger> ledger_;
};

// New allocations in this scope get category `c` (parameters, inputs, gradients, RNG state).
class CategoryScope {
 public:
  explicit CategoryScope(MemoryCategory c);
  ~CategoryScope();
  CategoryScope(const CategoryScope&) = delete;
  CategoryScope& operator=(const CategoryScope&) = delete;

 private:
  std::shared_ptr<MemoryLedger> ledger_;
};

// Warnings and errors of a run go to the current ledger (and from there into the trace).
void warn(std::string_view text);

}  // namespace ckpt
