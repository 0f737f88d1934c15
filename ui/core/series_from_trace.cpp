#include <algorithm>

#include "ui/core/memory_series.hpp"

// Apart from memory_series.cpp so that code drawing plain series does not link the Trace.
namespace ckpt::ui {

// Each step is drawn at its high-water mark (an op's output is allocated before its inputs
// are released): that is where the trace's peak lies, so the curve reaches the same peak the
// engine reports instead of the lower after-the-step value.
MemorySeries memorySeriesFromTrace(const Trace& trace) {
  MemorySeries s;
  s.dryRun = trace.times_estimated();
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
    std::int64_t bestTotal = total;
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
      if (total > bestTotal) {
        bestTotal = total;
        best = running;
      }
    }
    s.bytes[i] = best;
    s.totals[i] = bestTotal;
    for (std::size_t c = 0; c < kMemoryCategoryCount; ++c)
      s.maxByCategory[c] = std::max(s.maxByCategory[c], best[c]);
    s.phases[i] = trace.step_phase(k);
  }
  for (const auto& r : trace.recomputes())
    s.recomputes.push_back({r.begin_step, r.end_step, r.segment});
  s.forwardEnd = trace.forward_end();
  const PeakInfo peak = trace.peak();
  s.peakBytes = peak.bytes;
  s.peakStep = peak.step;
  s.peakByCategory = peak.by_category;
  return s;
}

}  // namespace ckpt::ui
