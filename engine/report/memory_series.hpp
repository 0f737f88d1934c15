#pragma once

// A run's memory over steps as plain arrays, derived once per run from its Trace, so that the
// app's plot, the CLI's --plot and the tests draw from the same numbers.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/trace/rank_timeline.hpp"
#include "engine/trace/trace.hpp"

namespace ckpt {

struct SeriesSpan {
  std::int64_t begin = 0;  // first step
  std::int64_t end = 0;    // one past the last
  std::string label;
};

struct MemorySeries {
  std::vector<CategoryBytes> bytes;  // live bytes by category at step k's high-water mark
  std::vector<std::int64_t> totals;  // sum of bytes[k] (per_rank: the rank's total)
  std::vector<Phase> phases;         // phase of step k
  std::vector<SeriesSpan> recomputes;
  std::int64_t forward_end = -1;  // last forward step
  bool failed = false;            // the run stopped with an error (the curve ends there)
  bool warned = false;            // the run warned (a saving may come from missing gradients)
  // A dry run's curve (exact bytes, estimated times); with not_computed set, the real run was
  // not started and that says why (the memory guard).
  bool dry_run = false;
  std::string not_computed;
  std::int64_t peak_bytes = 0;
  std::int64_t peak_step = -1;
  CategoryBytes peak_by_category{};
  CategoryBytes max_by_category{};  // over all steps, to know which categories ever appear
  // On a device with a caching allocator (cuda): the bytes it reserved after each step
  // (RunResult::reserved, the allocator's segments) and their peak; empty on the cpu.
  std::vector<std::int64_t> reserved;
  std::int64_t reserved_peak = 0;
  std::int64_t reserved_peak_step = -1;
  // Whose memory the curve is ("PyTorch 2.x on an NVIDIA GPU (CUDA)": MemorySemantics::whose).
  std::string memory_of;
  // Sharded with FSDP2 (--fsdp, --param-dtype): one rank's memory by its categories. The
  // curve is then the rank's: totals, peak_bytes and peak_step are the timeline's, `bytes`
  // stays the run's own (one GPU's), and there is no reserved line (a single GPU's allocator).
  std::shared_ptr<const RankTimeline> per_rank;

  std::int64_t steps() const { return static_cast<std::int64_t>(totals.size()); }
  bool empty() const { return totals.empty(); }
  // The highest figure drawn: the allocated peak, or the reserved one above it.
  std::int64_t max_total() const { return std::max(peak_bytes, reserved_peak); }
};
using MemorySeriesPtr = std::shared_ptr<const MemorySeries>;

// Peak and its breakdown are the trace's own (Trace::peak()), not recomputed here.
MemorySeries memory_series_from_trace(const Trace& trace);
// `series` made one rank's: its curve and peak become `rank`'s (same steps as the trace).
void show_per_rank(MemorySeries& series, std::shared_ptr<const RankTimeline> rank);

}  // namespace ckpt
