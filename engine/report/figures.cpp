#include "engine/report/figures.hpp"

#include "engine/report/run_summary.hpp"

namespace ckpt {

std::int64_t saved_for_backward(const CategoryBytes& live_at_forward_end) {
  return live_at_forward_end[static_cast<std::size_t>(MemoryCategory::activation)] +
         live_at_forward_end[static_cast<std::size_t>(MemoryCategory::checkpoint_input)];
}

PeakChange peak_change(std::int64_t peak, std::int64_t reference) {
  PeakChange c;
  c.bytes = peak - reference;
  if (reference != 0) {
    c.percent = 100.0 * static_cast<double>(c.bytes) / static_cast<double>(reference);
    c.ratio = static_cast<double>(peak) / static_cast<double>(reference);
  }
  return c;
}

double recompute_overhead_percent(const PhaseCounts& executions) {
  return executions.forward > 0 ? 100.0 * static_cast<double>(executions.recompute) /
                                      static_cast<double>(executions.forward)
                                : 0.0;
}

std::optional<AgainstPlain> against_plain(const RunSummary& s) {
  if (!s.baseline) return std::nullopt;
  const RunSummary::Baseline& b = *s.baseline;
  AgainstPlain a;
  a.peak = peak_change(s.peak.bytes, b.peak_bytes);
  a.extra_executions = s.total_executions() - b.executions;
  a.execution_ratio =
      b.executions ? static_cast<double>(s.total_executions()) / static_cast<double>(b.executions)
                   : 0.0;
  a.time_ratio = b.total_ms > 0 ? s.times.total_ms / b.total_ms : 0.0;
  return a;
}

}  // namespace ckpt
