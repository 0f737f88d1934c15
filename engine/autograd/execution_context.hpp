#pragma once

// What a run is doing while its ledger allocates: the phase (setup, forward, backward,
// recompute), the step (one op execution), the model node it belongs to, checkpoint regions and
// the run's messages. It listens to its ledger and publishes one ordered stream of RunEvents in
// which every allocation is stamped with its step, op, node and phase — the stream the trace
// recorder (engine/trace) builds a Trace from.
//
// CONTRACT shared by engine/autograd, ops, checkpoint, trace and run. Additions are fine.

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/tensor/memory_ledger.hpp"

namespace ckpt {

// optimizer: the optimizer's step after backward (engine/run/optimizer.hpp).
enum class Phase : std::uint8_t { setup, forward, backward, recompute, optimizer };
const char* phase_name(Phase p);

enum class Severity : std::uint8_t { info, warning, error };
const char* severity_name(Severity s);

using LabelId = std::uint32_t;  // an interned string; 0 is the empty string
inline constexpr LabelId kNoLabel = 0xffffffffu;

// Labels a model's runs all use (its node and value names), interned once when the model is
// compiled: each run's context starts from them and interns only what is new. HeavyModel's
// runs interned their 200,000 names afresh, a quarter of each run.
class LabelTable {
 public:
  LabelId intern(std::string_view s);
  LabelId find(std::string_view s) const;  // kNoLabel when absent
  const std::string& label(LabelId id) const { return labels_[id]; }
  LabelId size() const { return static_cast<LabelId>(labels_.size()); }

 private:
  std::deque<std::string> labels_{""};
  std::unordered_map<std::string_view, LabelId> ids_{{"", 0}};
};

// One entry of a run's event stream. Listeners (the trace recorder) receive them in order.
struct RunEvent {
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
    host_bytes,        // bytes, text: host memory the run holds beside the device's (what for)
    replayed,          // the open step handed back an output a per-op policy kept: no kernel ran
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

class RunListener {
 public:
  virtual ~RunListener() = default;
  virtual void on_event(const RunEvent& event) = 0;
  // The context is being destroyed while this listener is still attached (an exception unwound
  // the scope that owned it first): the listener must not touch the context again.
  virtual void on_context_destroyed() {}
};

class ExecutionContext final : public AllocationListener {
 public:
  // `known`: labels interned before the run (a compiled model's), shared and never changed.
  explicit ExecutionContext(std::shared_ptr<MemoryLedger> ledger = nullptr,
                            std::shared_ptr<const LabelTable> known = nullptr);
  ~ExecutionContext() override;
  ExecutionContext(const ExecutionContext&) = delete;
  ExecutionContext& operator=(const ExecutionContext&) = delete;

  // The context of this thread (a process-wide default over the default ledger unless an
  // ExecutionScope is active).
  static std::shared_ptr<ExecutionContext> current();

  MemoryLedger& ledger() const { return *ledger_; }
  const std::shared_ptr<MemoryLedger>& ledger_ptr() const { return ledger_; }

  Phase phase() const { return phase_; }
  void set_phase(Phase p);
  LabelId intern(std::string_view s);
  const std::string& label(LabelId id) const;
  // The table this context's labels start from (their ids are the table's), or null.
  const LabelTable* known_labels() const { return known_.get(); }
  void begin_step(LabelId op, LabelId node);
  void end_step();
  bool in_step() const { return step_open_; }
  std::int64_t steps() const { return next_step_; }
  std::int64_t current_step() const { return step_open_ ? next_step_ - 1 : -1; }
  LabelId current_op() const { return step_open_ ? step_op_ : 0; }
  LabelId current_node() const { return node_stack_.empty() ? 0 : node_stack_.back(); }
  void push_node(LabelId node) { node_stack_.push_back(node); }
  void pop_node() { node_stack_.pop_back(); }
  void mark_recompute(bool begin, std::string_view segment);
  void mark_checkpoint(bool begin, std::string_view segment);
  void message(Severity severity, std::string_view text);
  // Host memory a run on a device holds outside the device's ledger (the RNG stash of a
  // checkpoint on CUDA): reported, never in the device's figures.
  void note_host_bytes(std::int64_t bytes, std::string_view what);
  // The open step replays an output its checkpoint's policy kept instead of computing it.
  void note_replayed();
  const std::vector<std::pair<Severity, std::string>>& messages() const { return messages_; }
  // "conv2d (features.conv0)": the op and node of the open step, for error messages.
  std::string location() const;
  // PyTorch's anomaly mode (engine/autograd/anomaly.hpp): every forward op's and backward
  // node's outputs are checked for NaN and Inf.
  bool detect_anomaly() const { return detect_anomaly_; }
  void set_detect_anomaly(bool on) { detect_anomaly_ = on; }

  void add_listener(RunListener* listener);
  void remove_listener(RunListener* listener);

  void on_allocation(const AllocationEvent& event) override;
  // Names an allocation by an interned label: the ledger's tag() without interning the name
  // again (for this context's listeners only; the Runner tags every op output).
  void tag(AllocationId allocation, LabelId name);

 private:
  RunEvent make(RunEvent::Kind kind) const;
  void publish(const RunEvent& e);

  std::shared_ptr<MemoryLedger> ledger_;
  Phase phase_ = Phase::setup;
  bool step_open_ = false;
  bool detect_anomaly_ = false;
  std::int64_t next_step_ = 0;
  LabelId step_op_ = 0;
  LabelId step_node_ = 0;
  std::vector<LabelId> node_stack_;
  std::shared_ptr<const LabelTable> known_;
  LabelId base_ = 0;                    // the first id of a label interned here (known_'s size)
  std::deque<std::string> labels_{""};  // ids base_, base_ + 1, ...
  std::unordered_map<std::string_view, LabelId> label_ids_{{"", 0}};
  // The labels interned last, by the address of the text asked for: every step interns its op
  // name ("add", "AddBackward0": mostly string literals), and looking it up in a table of
  // 200,000 labels costs a hash and a cache miss. A hit is checked by content, so a reused
  // address never returns another label.
  struct RecentLabel {
    const char* data = nullptr;
    LabelId id = 0;
  };
  std::array<RecentLabel, 64> recent_labels_{};
  std::vector<std::pair<Severity, std::string>> messages_;
  std::vector<RunListener*> listeners_;
};

// Makes `context` (and its ledger) current on this thread for the scope's lifetime.
class ExecutionScope {
 public:
  explicit ExecutionScope(std::shared_ptr<ExecutionContext> context);
  // A new context over `ledger`.
  explicit ExecutionScope(std::shared_ptr<MemoryLedger> ledger);
  ~ExecutionScope();
  ExecutionScope(const ExecutionScope&) = delete;
  ExecutionScope& operator=(const ExecutionScope&) = delete;
  ExecutionContext& context() const { return *context_; }
  const std::shared_ptr<ExecutionContext>& context_ptr() const { return context_; }

 private:
  std::shared_ptr<ExecutionContext> context_;
  std::shared_ptr<ExecutionContext> previous_;
  LedgerScope ledger_scope_;
};

// One op execution = one step. Nested op calls (linear calling matmul) stay inside the
// outermost step, so that a step is what a user sees as one op.
class OpScope {
 public:
  explicit OpScope(std::string_view op);
  OpScope(ExecutionContext& context, std::string_view op, LabelId node);
  ~OpScope();
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

 private:
  ExecutionContext* context_ = nullptr;
};

class PhaseScope {
 public:
  explicit PhaseScope(Phase p);
  ~PhaseScope();
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;

 private:
  std::shared_ptr<ExecutionContext> context_;
  Phase previous_;
};

// Names the model node (a dotted module path plus op name) that the following steps belong to.
class NodeScope {
 public:
  explicit NodeScope(std::string_view node);
  // A node label the caller interned in the current context already (the Runner keeps one per
  // op, so a 100,000-op model does not hash its node names again on every step).
  explicit NodeScope(LabelId node);
  ~NodeScope();
  NodeScope(const NodeScope&) = delete;
  NodeScope& operator=(const NodeScope&) = delete;

 private:
  std::shared_ptr<ExecutionContext> context_;
};

// Warnings and errors of a run go to the current context (and from there into the trace).
void warn(std::string_view text);

}  // namespace ckpt
