#pragma once

// What a snapshot measured, as torch.cuda.memory_allocated() and memory_reserved() saw it after
// each recorded event: the bytes the caching allocator counted (every request rounded up to
// 512 bytes, and a block it did not split counted whole) and the bytes of its segments.
//
// The trace starts with memory already allocated (cuBLAS/cuDNN workspaces, parameters made
// before _record_memory_history()): those blocks are in `segments` and never in the trace, or
// their first event is a free. They are the timeline's start, so its peak is
// torch.cuda.max_memory_allocated() over the recorded window when the peak statistics were
// reset as recording began (as gpu_oracle.py does).

#include <cstdint>
#include <string>
#include <vector>

#include "engine/snapshot/memory_snapshot.hpp"

namespace ckpt {

struct MeasuredAllocation {
  std::int64_t address = 0;
  std::int64_t bytes = 0;         // as the allocator counts it
  std::int64_t requested = 0;     // as asked for
  std::int64_t alloc_event = -1;  // its alloc in the device's trace; -1: made before the trace
  StackId stack = kNoStack;       // the alloc's frames (or, made before the trace, its block's)
};

struct MeasuredTimeline {
  std::int64_t device = 0;
  // Bytes after each event of the device's trace (one entry per event, every action).
  std::vector<std::int64_t> allocated;
  std::vector<std::int64_t> reserved;
  std::int64_t start_allocated = 0;  // before the first event
  std::int64_t start_reserved = 0;
  std::int64_t peak_allocated = 0;
  std::int64_t peak_allocated_event = -1;  // the event after which it was reached; -1: the start
  std::int64_t peak_reserved = 0;
  std::int64_t peak_reserved_event = -1;
  std::int64_t peak_time_us = -1;  // of the allocated peak, since the first event; -1 unknown
  std::int64_t duration_us = -1;   // first to last event; -1 unknown
  // The allocations live at the allocated peak, largest first.
  std::vector<MeasuredAllocation> live_at_peak;
  // Whether every block's counted size is known: the replay followed the allocator's segments
  // and splits (or expandable segments, which always split). When not, `note` says why and
  // which sizes were taken as the requested size rounded to 512 bytes.
  bool exact = true;
  std::string note;
};

// The requested size as the caching allocator rounds it (PyTorch's round_size, without
// roundup_power2_divisions).
std::int64_t allocator_round(std::int64_t requested);

// The measured timeline of `device` (-1: the first device with a trace or segments). Throws
// std::invalid_argument naming the snapshot when it has no such device.
MeasuredTimeline measure_timeline(const MemorySnapshot& snapshot, std::int64_t device = -1);

}  // namespace ckpt
