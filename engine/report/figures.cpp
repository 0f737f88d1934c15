#include "engine/report/figures.hpp"

#include "engine/report/run_summary.hpp"

#include <algorithm>

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

std::optional<GpuFit> gpu_fit(const RunResult& run, const RunSettings& settings) {
  if (!run.reserved) return std::nullopt;
  GpuFit f;
  f.reserved_peak = run.reserved->peak_bytes;
  f.capacity = settings.gpu_memory;
  return f;
}

StepPhases step_phases(const Trace& trace, const std::vector<std::int64_t>* block_bytes) {
  const bool blocks =
      block_bytes && static_cast<std::int64_t>(block_bytes->size()) == trace.event_count();
  const auto bytes_of = [&](std::int64_t i, const TraceEvent& e) {
    return blocks ? (*block_bytes)[static_cast<std::size_t>(i)] : e.bytes;
  };
  StepPhases p;
  p.start = trace.total_at(-1);
  std::int64_t first_step_event = trace.first_event(0);
  if (trace.step_count() == 0) first_step_event = trace.event_count();
  if (blocks) {
    // The blocks of what was made before the first step, in place of the requests.
    for (std::int64_t i = 0; i < first_step_event; ++i) {
      const TraceEvent e = trace.event(i);
      const std::int64_t extra = bytes_of(i, e) - e.bytes;
      if (e.kind == TraceEventKind::alloc) p.start += extra;
      if (e.kind == TraceEventKind::free) p.start -= extra;
    }
  }
  std::int64_t total = p.start;
  p.peak_forward_backward = total;
  std::int64_t optimizer_from = trace.step_count();
  for (std::int64_t k = 0; k < trace.step_count(); ++k)
    if (trace.step_phase(k) == Phase::optimizer) {
      optimizer_from = k;
      break;
    }
  p.has_optimizer_step = optimizer_from < trace.step_count();
  const std::int64_t optimizer_events =
      p.has_optimizer_step ? trace.first_event(optimizer_from) : trace.event_count();
  for (std::int64_t i = first_step_event; i < trace.event_count(); ++i) {
    if (i == optimizer_events) p.after_backward = p.peak_optimizer_step = total;
    const TraceEvent e = trace.event(i);
    if (e.kind == TraceEventKind::alloc) total += bytes_of(i, e);
    if (e.kind == TraceEventKind::free) total -= bytes_of(i, e);
    if (i < optimizer_events) {
      p.peak_forward_backward = std::max(p.peak_forward_backward, total);
    } else {
      p.peak_optimizer_step = std::max(p.peak_optimizer_step, total);
    }
  }
  // No optimizer step, or one that allocated and freed nothing (SGD's): it ends where the run did.
  if (optimizer_events >= trace.event_count()) p.after_backward = p.peak_optimizer_step = total;
  return p;
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
