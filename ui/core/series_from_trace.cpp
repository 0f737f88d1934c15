#include <algorithm>

#include "ui/core/memory_series.hpp"

// Apart from memory_series.cpp so that code drawing plain series does not link the Trace.
namespace ckpt::ui {

MemorySeries memorySeriesFromTrace(const Trace& trace) {
  MemorySeries s;
  const std::int64_t n = trace.step_count();
  s.bytes.resize(static_cast<std::size_t>(n));
  s.totals.resize(static_cast<std::size_t>(n));
  s.phases.resize(static_cast<std::size_t>(n));
  for (std::int64_t k = 0; k < n; ++k) {
    const auto i = static_cast<std::size_t>(k);
    s.bytes[i] = trace.memory_at(k);
    std::int64_t total = 0;
    for (std::size_t c = 0; c < kMemoryCategoryCount; ++c) {
      total += s.bytes[i][c];
      s.maxByCategory[c] = std::max(s.maxByCategory[c], s.bytes[i][c]);
    }
    s.totals[i] = total;
    s.phases[i] = trace.step(k).phase;
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
