#include "ui/core/run_summary.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "ui/core/memory_series.hpp"

namespace ckpt::ui {

RunSummary summarize(const RunResult& result) {
  RunSummary s;
  const Trace& trace = result.trace;
  s.ok = result.ok;
  s.error = result.error;
  const PeakInfo peak = trace.peak();
  s.peakBytes = peak.bytes;
  s.peakStep = peak.step;
  s.peakByCategory = peak.by_category;
  if (peak.step >= 0 && peak.step < trace.step_count()) {
    const TraceStep st = trace.step(peak.step);
    s.peakOp = st.node.empty() ? st.op : st.op + " (" + st.node + ")";
    s.peakPhase = st.phase;
  }
  s.counts = trace.counts();
  s.recomputeOverhead = s.counts.forward > 0 ? static_cast<double>(s.counts.recompute) /
                                                   static_cast<double>(s.counts.forward)
                                             : 0.0;
  s.checkpointSegments = static_cast<std::int64_t>(trace.checkpoints().size());
  s.recomputeSegments = static_cast<std::int64_t>(trace.recomputes().size());
  const auto rng = static_cast<std::size_t>(MemoryCategory::rng_state);
  s.rngStateBytesMax = trace.memory_at(-1)[rng];
  for (std::int64_t k = 0; k < trace.step_count(); ++k)
    s.rngStateBytesMax = std::max(s.rngStateBytesMax, trace.memory_at(k)[rng]);
  if (trace.forward_end() >= 0) s.forwardEndBytes = trace.total_at(trace.forward_end());
  for (const auto& m : trace.messages()) {
    if (m.severity == Severity::warning) ++s.warnings;
    if (m.severity == Severity::error) ++s.errors;
  }
  s.times = result.times;
  s.traceFootprint = trace.memory_footprint();
  return s;
}

std::string formatSummary(const RunSummary& s) {
  std::ostringstream out;
  char buf[160];
  out << (s.ok ? "run ok" : "run FAILED: " + s.error) << "\n";
  out << "peak memory        " << formatBytes(s.peakBytes) << " (" << s.peakBytes
      << " bytes) at step " << s.peakStep << " [" << phase_name(s.peakPhase) << "] " << s.peakOp
      << "\n";
  for (std::size_t c = 0; c < kMemoryCategoryCount; ++c) {
    if (s.peakByCategory[c] == 0) continue;
    std::snprintf(buf, sizeof buf, "  %-17s %s\n", category_name(static_cast<MemoryCategory>(c)),
                  formatBytes(s.peakByCategory[c]).c_str());
    out << buf;
  }
  out << "live after forward " << formatBytes(s.forwardEndBytes) << "\n";
  std::snprintf(buf, sizeof buf,
                "op executions      forward %lld, recompute %lld, backward %lld "
                "(recompute overhead %.1f%%)\n",
                static_cast<long long>(s.counts.forward),
                static_cast<long long>(s.counts.recompute),
                static_cast<long long>(s.counts.backward), 100.0 * s.recomputeOverhead);
  out << buf;
  out << "checkpoints        " << s.checkpointSegments << " segment forwards, "
      << s.recomputeSegments << " recomputes, RNG state held at most "
      << formatBytes(s.rngStateBytesMax) << "\n";
  std::snprintf(buf, sizeof buf,
                "time               forward %.1f ms, backward %.1f ms (recompute %.1f ms), "
                "total %.1f ms\n",
                s.times.forward_ms, s.times.backward_ms, s.times.recompute_ms, s.times.total_ms);
  out << buf;
  if (s.warnings || s.errors)
    out << "messages           " << s.warnings << " warnings, " << s.errors << " errors\n";
  return out.str();
}

std::string describeConfig(const CheckpointConfig& c) {
  std::string what;
  if (c.segments > 0) {
    what = "checkpoint_sequential, " + std::to_string(c.segments) + " segments";
  } else if (c.modules.empty()) {
    return "no checkpoints";
  } else {
    what = *c.modules.begin();
    if (c.modules.size() > 1) what += " + " + std::to_string(c.modules.size() - 1) + " more";
  }
  what += c.use_reentrant ? ", reentrant" : ", non-reentrant";
  if (!c.preserve_rng_state) what += ", RNG not preserved";
  if (c.policy == SelectivePolicy::save_matmul) what += ", save matmuls";
  return what;
}

}  // namespace ckpt::ui
