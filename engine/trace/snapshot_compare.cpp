#include "engine/trace/snapshot_compare.hpp"

namespace ckpt {

SnapshotComparison compare_snapshot(const MeasuredTimeline& measured, const Trace& predicted) {
  SnapshotComparison c;
  c.measured_peak = measured.peak_allocated;
  c.measured_start = measured.start_allocated;
  c.measured_step_peak = measured.peak_allocated - measured.start_allocated;
  c.predicted_peak = predicted.peak().bytes;
  const CategoryBytes initial = predicted.initial_memory();
  for (const auto b : initial) c.predicted_start += b;
  // What is live before the first step (the workspaces are made there, after the parameters).
  c.predicted_workspace =
      predicted.memory_at(-1)[static_cast<std::size_t>(MemoryCategory::workspace)];
  c.predicted_step_peak = c.predicted_peak - c.predicted_workspace;
  c.difference = c.measured_step_peak - c.predicted_step_peak;
  c.ratio = c.predicted_step_peak > 0 ? static_cast<double>(c.measured_step_peak) /
                                            static_cast<double>(c.predicted_step_peak)
                                      : 0;
  return c;
}

namespace {

OverlayCurve event_curve(const std::vector<std::int64_t>& after, std::int64_t start,
                         std::int64_t base, std::int64_t peak, std::int64_t peak_event) {
  OverlayCurve c;
  const std::size_t n = after.size();
  c.x.reserve(n + 1);
  c.bytes.reserve(n + 1);
  c.x.push_back(0);
  c.bytes.push_back(start - base);
  for (std::size_t i = 0; i < n; ++i) {
    c.x.push_back(static_cast<double>(i + 1) / static_cast<double>(n));
    c.bytes.push_back(after[i] - base);
  }
  c.peak_bytes = peak - base;
  c.peak_x = peak_event < 0 ? 0 : static_cast<double>(peak_event + 1) / static_cast<double>(n);
  return c;
}

}  // namespace

OverlayCurve allocated_curve(const MeasuredTimeline& m, CurveBase base) {
  return event_curve(m.allocated, m.start_allocated,
                     base == CurveBase::above_start ? m.start_allocated : 0, m.peak_allocated,
                     m.peak_allocated_event);
}

OverlayCurve reserved_curve(const MeasuredTimeline& m) {
  return event_curve(m.reserved, m.start_reserved, 0, m.peak_reserved, m.peak_reserved_event);
}

OverlayCurve predicted_curve(const Trace& t) {
  OverlayCurve c;
  const std::int64_t n = t.step_count();
  c.x.reserve(static_cast<std::size_t>(n) + 1);
  c.bytes.reserve(static_cast<std::size_t>(n) + 1);
  for (std::int64_t k = -1; k < n; ++k) {
    c.x.push_back(n > 0 ? static_cast<double>(k + 1) / static_cast<double>(n) : 0);
    c.bytes.push_back(t.total_at(k));
  }
  const PeakInfo p = t.peak();
  c.peak_bytes = p.bytes;
  c.peak_x = n > 0 && p.step >= 0 ? static_cast<double>(p.step + 1) / static_cast<double>(n) : 0;
  return c;
}

}  // namespace ckpt
