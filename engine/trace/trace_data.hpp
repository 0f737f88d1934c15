#pragma once

// The compact representation behind Trace (internal to engine/trace). A HeavyModel run has
// about 300,000 steps and a million memory events, so nothing here holds a std::string per
// step or per event: labels are interned once, events are 16 bytes, and memory by category is
// rebuilt from a snapshot every kSnapshotEvery steps plus the few events after it.

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/trace/trace.hpp"

namespace ckpt {

inline constexpr std::int64_t kSnapshotEvery = 64;
inline constexpr std::uint32_t kNoTensor = 0xffffffffu;

struct StepRecord {
  std::uint32_t op = 0;  // label ids into Trace::Data::labels
  std::uint32_t node = 0;
  std::uint32_t segment = 0;
  std::uint32_t first_event = 0;  // events of this step: [first_event, next step's first_event)
  std::int64_t start_ns = 0;      // since the trace's first step began
  float duration_ns = 0;          // float: 24 bits of precision are plenty for a duration
  Phase phase = Phase::forward;
  bool replayed = false;  // a recompute step that handed back an output a policy kept
};

// bytes (48 bits) | kind (4) | category (4) | previous category (4), packed into one word.
struct PackedEvent {
  std::uint64_t word = 0;
  std::uint32_t allocation = 0;  // the ledger's allocation id, truncated to 32 bits
  std::uint32_t tensor = kNoTensor;

  static PackedEvent make(TraceEventKind kind, MemoryCategory category, MemoryCategory previous,
                          std::int64_t bytes, std::uint64_t allocation) {
    PackedEvent e;
    e.word = (static_cast<std::uint64_t>(bytes) & 0xffffffffffffull) |
             (static_cast<std::uint64_t>(kind) << 48) |
             (static_cast<std::uint64_t>(category) << 52) |
             (static_cast<std::uint64_t>(previous) << 56);
    e.allocation = static_cast<std::uint32_t>(allocation);
    return e;
  }
  std::int64_t bytes() const { return static_cast<std::int64_t>(word & 0xffffffffffffull); }
  TraceEventKind kind() const { return static_cast<TraceEventKind>((word >> 48) & 0xf); }
  MemoryCategory category() const { return static_cast<MemoryCategory>((word >> 52) & 0xf); }
  MemoryCategory previous() const { return static_cast<MemoryCategory>((word >> 56) & 0xf); }
};

struct Trace::Data {
  std::vector<std::string> labels{""};
  bool times_estimated = false;
  std::vector<StepRecord> steps;
  std::vector<std::int64_t> total_after;  // live bytes after each step's events
  std::vector<PackedEvent> events;
  std::uint32_t base_events = 0;         // events before the first step: [0, base_events)
  CategoryBytes initial{};               // live before the recorder attached
  std::vector<CategoryBytes> snapshots;  // after step (i + 1) * kSnapshotEvery - 1
  PeakInfo peak;
  std::int64_t forward_end = -1;
  PhaseCounts counts;
  std::vector<TensorLife> tensors;
  // Indices into tensors, sorted by name: made on the first lookup by name, not by every
  // run (sorting HeavyModel's 200,000 names was 5% of its step). Traces are read from several
  // threads at once, hence the once_flag.
  mutable std::once_flag by_name_made;
  mutable std::vector<std::uint32_t> tensors_by_name;
  const std::vector<std::uint32_t>& by_name() const;
  std::vector<TraceMessage> messages;
  std::vector<RecomputeSpan> recomputes;
  std::vector<CheckpointSpan> checkpoints;

  const std::string& label(std::uint32_t id) const { return labels[id]; }
  // Sum of the category changes of events [begin, end) into `bytes`.
  void apply(std::uint32_t begin, std::uint32_t end, CategoryBytes& bytes) const;
  std::uint32_t events_end(std::int64_t k) const;
};

}  // namespace ckpt
