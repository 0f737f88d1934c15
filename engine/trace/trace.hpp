#pragma once

// The single record of a run (see docs/ARCHITECTURE.md "trace"): an ordered list of steps and
// events with fast queries at any step. Views in ui/ are pure functions of (Trace, cursor,
// selection).
//
// CONTRACT shared by engine/checkpoint, engine/run, ui/ and app/cli. Additions are fine;
// changing or removing a member needs every user updated in the same change.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/autograd/execution_context.hpp"

namespace ckpt {

// The state of one activation (a tagged tensor) at a step, for the graph view.
enum class ActivationState : std::uint8_t {
  pending,           // not produced yet
  kept,              // alive, produced by the forward
  dropped,           // made inside a checkpointed segment in the forward, released before it ended
  checkpoint_input,  // kept at a segment boundary (category checkpoint input)
  recomputed,        // alive again, produced by a recompute
  freed,             // released (after its last use, or never needed for backward)
};
const char* activation_state_name(ActivationState s);

// One op execution: forward, recompute, backward or the optimizer's step.
struct TraceStep {
  Phase phase = Phase::forward;
  std::string op;       // engine op or backward node: "conv2d", "ConvolutionBackward0"
  std::string node;     // model node it belongs to ("features.conv0"), may be empty
  std::string segment;  // checkpoint segment being run or recomputed, empty outside one
  std::int64_t duration_ns = 0;
  std::int64_t start_ns = 0;  // since the first step of the trace began
  // A recompute step whose op handed back the output a per-op policy kept in the forward: the
  // op was called (as PyTorch dispatches it to the policy's cache), its kernel did not run.
  bool replayed = false;
};

// A memory event of the run. Events outside any step (a tensor released by the caller between
// two ops) belong to the step before them; those before the first step have step -1.
enum class TraceEventKind : std::uint8_t { alloc, free, recategorize };
const char* trace_event_kind_name(TraceEventKind k);

struct TraceEvent {
  std::int64_t step = -1;
  TraceEventKind kind = TraceEventKind::alloc;
  MemoryCategory category = MemoryCategory::temporary;  // the new one for recategorize
  MemoryCategory previous = MemoryCategory::temporary;  // recategorize only
  std::int64_t bytes = 0;
  std::uint32_t allocation = 0;  // the ledger's allocation id (low 32 bits)
  std::int64_t tensor = -1;      // index into Trace::tensors() of the first name it got, or -1
};

// A named tensor of the model (a tagged allocation) and its life.
struct TensorLife {
  std::string name;  // the graph value name given by the tag
  std::string node;  // model node that produced it
  std::int64_t bytes = 0;
  // State changes in step order; before the first one the state is pending.
  std::vector<std::pair<std::int64_t, ActivationState>> transitions;
  // The step whose op saved it for backward (-1 if never saved).
  std::int64_t saved_at_step = -1;
  std::string saved_by_op;
};

struct TraceMessage {
  std::int64_t step = -1;
  Severity severity = Severity::info;
  std::string text;
};

struct RecomputeSpan {
  std::string segment;
  std::int64_t begin_step = 0;  // first step of the recompute
  std::int64_t end_step = 0;    // one past the last
};

// The forward of a checkpointed segment (between its checkpoint_begin and checkpoint_end).
struct CheckpointSpan {
  std::string segment;
  std::int64_t begin_step = 0;  // first step inside the segment
  std::int64_t end_step = 0;    // one past the last
  std::int64_t rng_bytes = 0;   // RNG state it stashed itself (preserve_rng_state), not nested ones
  // RNG state it stashed itself in host memory, outside the device's figures (a run with
  // CUDA's memory semantics: the CPU generator's 5,056 bytes and the CUDA generator's 16).
  std::int64_t host_rng_bytes = 0;
};

struct PeakInfo {
  std::int64_t bytes = 0;
  std::int64_t step = -1;
  CategoryBytes by_category{};
};

struct PhaseCounts {
  std::int64_t forward = 0;
  std::int64_t recompute = 0;
  std::int64_t backward = 0;
  std::int64_t optimizer = 0;  // the optimizer step's op executions (none without an optimizer)
};

class Trace {
 public:
  Trace();
  ~Trace();
  Trace(Trace&&) noexcept;
  Trace& operator=(Trace&&) noexcept;

  std::int64_t step_count() const;
  // By value: steps are stored compactly (interned labels), not as TraceStep objects.
  TraceStep step(std::int64_t k) const;
  // step(k).phase without copying the step's labels (drawing 300,000 steps asks for each).
  Phase step_phase(std::int64_t k) const;
  // Step k's model node without copying its strings (equal names are the same object).
  const std::string& step_node(std::int64_t k) const;
  // Live bytes by category after step k's events; k = -1 is the state before the first step.
  CategoryBytes memory_at(std::int64_t k) const;
  std::int64_t total_at(std::int64_t k) const;
  // The highest live total of the run, within a step included (an op's output allocated before
  // its inputs are released counts), as the ledger's peak_bytes() does.
  PeakInfo peak() const;
  // The last forward step (the end of the forward pass), -1 if none.
  std::int64_t forward_end() const;
  PhaseCounts counts() const;

  const std::vector<TensorLife>& tensors() const;
  // Index into tensors() by name, -1 if unknown.
  std::int64_t tensor_index(const std::string& name) const;
  ActivationState state_at(std::int64_t tensor, std::int64_t k) const;

  const std::vector<TraceMessage>& messages() const;
  const std::vector<RecomputeSpan>& recomputes() const;
  const std::vector<CheckpointSpan>& checkpoints() const;

  // Memory events in order; the events of step k are [first_event(k), first_event(k + 1)),
  // with first_event(-1) = 0 for the events before the first step.
  std::int64_t event_count() const;
  TraceEvent event(std::int64_t i) const;
  std::int64_t first_event(std::int64_t k) const;
  // Live bytes by category before the recorder attached (already-made parameters, inputs).
  CategoryBytes initial_memory() const;
  // Bytes this Trace object itself holds in memory (the trace must stay compact).
  std::int64_t memory_footprint() const;

  // A dry run's steps take estimated times (one per step, in ns); start times follow from them.
  void set_estimated_durations(const std::vector<std::int64_t>& duration_ns);
  // Whether step times are estimates (a dry run) rather than measured.
  bool times_estimated() const;

  struct Data;  // built by Recorder

 private:
  friend class Recorder;
  std::unique_ptr<Data> d_;
};

// Bytes each model node saved for backward in the forward: every allocation one of its steps
// made as, or turned into, an activation, including copies an op saves itself (a 4-D matmul's
// contiguous operands), which carry no tensor name.
std::unordered_map<std::string, std::int64_t> forward_saved_bytes_by_node(const Trace& trace);

// Listens to a run's execution context and builds a Trace. Attach before the run; finish()
// after.
class Recorder final : public RunListener {
 public:
  explicit Recorder(ExecutionContext& context);
  ~Recorder() override;
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;
  void on_event(const RunEvent& e) override;
  void on_context_destroyed() override { attached_ = false; }
  // Detaches from the context and returns the trace (usable also after a failed run).
  Trace finish();

  struct State;  // what only recording needs (live allocations, name lookup)

 private:
  void detach();
  ExecutionContext& context_;
  std::unique_ptr<Trace::Data> d_;
  std::unique_ptr<State> s_;
  bool attached_ = true;
};

}  // namespace ckpt
