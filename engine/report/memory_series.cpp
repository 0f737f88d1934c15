#include "engine/report/memory_series.hpp"

#include <algorithm>
#include <stdexcept>

namespace ckpt {

// Each step is drawn at its high-water mark (an op's output is allocated before its inputs
// are released): that is where the trace's peak lies, so the curve reaches the same peak the
// engine reports instead of the lower after-the-step value.
MemorySeries memory_series_from_trace(const Trace& trace) {
  MemorySeries s;
  s.dry_run = trace.times_estimated();
  const std::int64_t n = trace.step_count();
  s.bytes.resize(static_cast<std::size_t>(n));
  s.totals.resize(static_cast<std::size_t>(n));
  s.phases.resize(static_cast<std::size_t>(n));
  CategoryBytes running = trace.memory_at(-1);
  for (std::int64_t k = 0; k < n; ++k) {
    const auto i = static_cast<std::size_t>(k);
    std::int64_t total = 0;
    for (auto v : running) total += v;
    CategoryBytes best = running;
    std::int64_t best_total = total;
    const std::int64_t end = trace.first_event(k + 1);
    for (std::int64_t e = trace.first_event(k); e < end; ++e) {
      const TraceEvent ev = trace.event(e);
      const auto c = static_cast<std::size_t>(ev.category);
      switch (ev.kind) {
        case TraceEventKind::alloc:
          running[c] += ev.bytes;
          total += ev.bytes;
          break;
        case TraceEventKind::free:
          running[c] -= ev.bytes;
          total -= ev.bytes;
          break;
        case TraceEventKind::recategorize:
          running[static_cast<std::size_t>(ev.previous)] -= ev.bytes;
          running[c] += ev.bytes;
          break;
      }
      if (total > best_total) {
        best_total = total;
        best = running;
      }
    }
    s.bytes[i] = best;
    s.totals[i] = best_total;
    for (std::size_t c = 0; c < kMemoryCategoryCount; ++c)
      s.max_by_category[c] = std::max(s.max_by_category[c], best[c]);
    s.phases[i] = trace.step_phase(k);
  }
  for (const auto& r : trace.recomputes())
    s.recomputes.push_back({r.begin_step, r.end_step, r.segment});
  s.forward_end = trace.forward_end();
  const PeakInfo peak = trace.peak();
  s.peak_bytes = peak.bytes;
  s.peak_step = peak.step;
  s.peak_by_category = peak.by_category;
  return s;
}

void show_per_rank(MemorySeries& series, std::shared_ptr<const RankTimeline> rank) {
  if (!rank || rank->steps() != series.steps())
    throw std::logic_error("show_per_rank: the rank's timeline has " +
                           std::to_string(rank ? rank->steps() : 0) + " steps, the run " +
                           std::to_string(series.steps()));
  series.totals = rank->totals;
  series.peak_bytes = rank->peak_bytes;
  series.peak_step = rank->peak_step;
  series.reserved.clear();
  series.reserved_peak = 0;
  series.reserved_peak_step = -1;
  series.per_rank = std::move(rank);
}

}  // namespace ckpt
