#include "engine/report/run_summary.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/report/figures.hpp"
#include "engine/tensor/memory_semantics.hpp"

namespace ckpt {

namespace {

// What of the peak is a convolution's workspace on CUDA: the workspace category beyond
// cuBLAS's persistent ones (conv_cudnn.cpp takes each call's in that category).
std::int64_t cudnn_workspace_at_peak(const RunSummary& s) {
  if (!s.reserved) return 0;
  const std::int64_t at_peak =
      s.peak.by_category[static_cast<std::size_t>(MemoryCategory::workspace)];
  return std::max<std::int64_t>(0, at_peak - memory_semantics(Device::cuda).workspace_bytes());
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

nlohmann::json categories_json(const CategoryBytes& b) {
  nlohmann::json j = nlohmann::json::object();
  for (std::size_t i = 0; i < kMemoryCategoryCount; ++i)
    j[category_name(static_cast<MemoryCategory>(i))] = b[i];
  return j;
}

// The comparison with the baseline run; a failed run's is not comparable (no saving).
nlohmann::json baseline_json(const RunSummary& s) {
  if (!s.baseline) return nullptr;
  const auto& b = *s.baseline;
  if (!s.ok)
    return {
        {"peak_bytes", b.peak_bytes},  {"executions", b.executions},    {"total_ms", b.total_ms},
        {"comparable", false},         {"memory_saved_bytes", nullptr}, {"peak_ratio", nullptr},
        {"extra_executions", nullptr}, {"execution_ratio", nullptr},    {"time_ratio", nullptr}};
  const AgainstPlain a = *against_plain(s);
  return {{"comparable", true},
          {"peak_bytes", b.peak_bytes},
          {"executions", b.executions},
          {"total_ms", b.total_ms},
          {"memory_saved_bytes", a.peak.saving()},
          {"peak_ratio", a.peak.ratio},
          {"extra_executions", a.extra_executions},
          {"execution_ratio", a.execution_ratio},
          {"time_ratio", a.time_ratio}};
}

nlohmann::json to_json(const RunSummary& s) {
  nlohmann::json j;
  j["model"] = s.model;
  j["label"] = s.label;
  j["ok"] = s.ok;
  j["error"] = s.error;
  // A failed run's figures cover the steps up to the failure: never a saving.
  j["failure"] = s.ok ? nlohmann::json(nullptr)
                      : nlohmann::json{{"why", s.failure.why},
                                       {"fix", s.failure.fix},
                                       {"figures", "of a failed run, up to the failure"}};
  j["dry_run"] = s.dry_run;
  j["times_estimated"] = s.dry_run;
  if (s.dry_run)
    j["loss"] = nullptr;  // not computed: a dry run has shapes and bytes, no values
  else
    j["loss"] = s.loss;
  j["peak"] = {{"bytes", s.peak.bytes},
               {"step", s.peak.step},
               {"op", s.peak_op},
               {"node", s.peak_node},
               {"phase", phase_name(s.peak_phase)},
               {"by_category", categories_json(s.peak.by_category)}};
  j["end_of_forward"] = {{"bytes", s.end_of_forward_total},
                         {"by_category", categories_json(s.end_of_forward)}};
  j["executions"] = {{"forward", s.executions.forward},
                     {"recompute", s.executions.recompute},
                     {"backward", s.executions.backward},
                     {"total", s.total_executions()}};
  j["times_ms"] = {{"forward", s.times.forward_ms},
                   {"backward", s.times.backward_ms},
                   {"recompute", s.times.recompute_ms},
                   {"total", s.times.total_ms}};
  if (s.step_phases.has_optimizer_step) {
    j["executions"]["optimizer"] = s.executions.optimizer;
    j["times_ms"]["optimizer"] = s.times.optimizer_ms;
    j["step_phases"] = {{"start", s.step_phases.start},
                        {"peak_forward_backward", s.step_phases.peak_forward_backward},
                        {"after_backward", s.step_phases.after_backward},
                        {"peak_optimizer_step", s.step_phases.peak_optimizer_step}};
  }
  j["checkpoints"] = s.checkpoints;
  j["memory_of"] = s.memory_of;
  j["reserved_peak"] = s.reserved ? nlohmann::json(s.reserved->peak_bytes) : nullptr;
  j["reserved"] =
      s.reserved
          ? nlohmann::json{{"peak_bytes", s.reserved->peak_bytes},
                           {"peak_step", s.reserved->peak_step},
                           {"fragmentation_at_peak_bytes", s.reserved->fragmentation_at_peak},
                           {"segments", s.reserved->segments},
                           {"cudnn_workspace_at_peak_bytes", cudnn_workspace_at_peak(s)}}
          : nlohmann::json(nullptr);
  if (s.per_rank) {
    const FsdpSummary& f = *s.per_rank;
    nlohmann::json by;
    for (std::size_t c = 0; c < kFsdpCategoryCount; ++c)
      by[fsdp_category_name(static_cast<FsdpCategory>(c))] = f.at_peak[c];
    j["per_rank"] = {{"ranks", f.ranks},
                     {"param_dtype", dtype_name(f.param_dtype)},
                     {"reduce_dtype", dtype_name(f.settings.reduce_dtype)},
                     {"reshard_after_forward", f.settings.reshard_after_forward},
                     {"peak_bytes", f.peak_bytes},
                     {"peak_step", f.peak_step},
                     {"by_category", by},
                     {"measured", false},
                     {"note", kFsdpNotMeasured}};
    // Whether one rank fits the card (allocated bytes and the context: reserved is not modelled).
    j["per_rank"]["fits"] = s.gpu ? nlohmann::json(f.peak_bytes + s.gpu->context <= s.gpu->capacity)
                                  : nlohmann::json(nullptr);
  }
  j["gpu"] = s.gpu ? nlohmann::json{{"capacity_bytes", s.gpu->capacity},
                                    {"reserved_peak_bytes", s.gpu->reserved_peak},
                                    {"cuda_context_bytes_estimate", s.gpu->context},
                                    {"total_bytes", s.gpu->total()},
                                    {"fits", s.gpu->fits()}}
                   : nlohmann::json(nullptr);
  j["offload"] = s.offload ? nlohmann::json{{"host_peak_bytes", s.offload->host_peak_bytes},
                                            {"to_host_bytes", s.offload->to_host_bytes},
                                            {"to_device_bytes", s.offload->to_device_bytes},
                                            {"copy_ms_estimate", s.offload->copy_ms},
                                            {"pcie_gb_per_s", s.offload->pcie_gb_per_s}}
                           : nlohmann::json(nullptr);
  nlohmann::json msgs = nlohmann::json::array();
  for (const auto& m : s.messages)
    msgs.push_back({{"step", m.step}, {"severity", severity_name(m.severity)}, {"text", m.text}});
  j["messages"] = msgs;
  j["baseline"] = baseline_json(s);
  return j;
}

}  // namespace

std::string format_bytes(std::int64_t bytes) {
  const double b = static_cast<double>(bytes);
  const double a = std::abs(b);
  if (a >= 1024.0 * 1024 * 1024) return fixed(b / (1024.0 * 1024 * 1024), 2) + " GiB";
  if (a >= 1024.0 * 1024) return fixed(b / (1024.0 * 1024), 2) + " MiB";
  if (a >= 1024.0) return fixed(b / 1024.0, 1) + " KiB";
  return std::to_string(bytes) + " B";
}

RunSummary summarize(const Model& model, const RunResult& run, const std::string& label,
                     const RunResult* baseline) {
  RunSummary s;
  s.model = model.name;
  s.label = label;
  s.ok = run.ok;
  s.dry_run = run.dry_run;
  s.error = run.error;
  s.failure = failure_advice(run);
  if (run.loss.defined() && run.loss.numel() == 1 && !run.loss.is_meta()) s.loss = run.loss.item();
  const Trace& t = run.trace;
  s.peak = t.peak();
  if (s.peak.step >= 0 && s.peak.step < t.step_count()) {
    const auto& st = t.step(s.peak.step);
    s.peak_op = st.op;
    s.peak_node = st.node;
    s.peak_phase = st.phase;
  }
  const auto fe = t.forward_end();
  s.end_of_forward = t.memory_at(fe);
  s.end_of_forward_total = t.total_at(fe);
  s.executions = t.counts();
  // On a device with a caching allocator, as torch.cuda.memory_allocated counts: by blocks.
  s.step_phases = step_phases(t, run.reserved ? &run.reserved->block_bytes : nullptr);
  s.times = run.times;
  s.messages = t.messages();
  s.checkpoints = static_cast<std::int64_t>(t.checkpoints().size());
  if (run.reserved) {
    const ReservedMemory& r = *run.reserved;
    s.reserved =
        RunSummary::Reserved{r.peak_bytes, r.peak_step, r.fragmentation_at_peak, r.segments};
  }
  s.offload = run.offload;
  if (baseline) {
    RunSummary::Baseline b;
    b.peak_bytes = baseline->trace.peak().bytes;
    const auto c = baseline->trace.counts();
    b.executions = c.forward + c.recompute + c.backward + c.optimizer;
    b.total_ms = baseline->times.total_ms;
    s.baseline = b;
  }
  return s;
}

std::string grouped_messages_text(const std::vector<TraceMessage>& messages,
                                  const std::string& prefix) {
  // Messages that differ only in a quoted name (one per checkpoint) are shown once, counted.
  auto shape_of = [](const std::string& text) {
    std::string out;
    bool quoted = false;
    for (char ch : text) {
      if (ch == '\'') {
        quoted = !quoted;
        out += quoted ? "'…" : "'";
      } else if (!quoted) {
        out += ch;
      }
    }
    return out;
  };
  std::vector<std::pair<std::string, std::size_t>> groups;  // shape, first message index
  std::map<std::string, int> counts;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const auto key = shape_of(messages[i].text);
    if (counts[key]++ == 0) groups.emplace_back(key, i);
  }
  std::ostringstream os;
  for (const auto& [key, first] : groups) {
    const auto& m = messages[first];
    os << prefix << "[" << severity_name(m.severity) << (m.step >= 0 ? " @ " : ", ")
       << message_step_text(m.step) << "] " << m.text << "\n";
    if (counts[key] > 1)
      os << prefix << "  (and " << counts[key] - 1 << " more like it; all of them in --json)\n";
  }
  return os.str();
}

namespace {

// The bytes of each category that has any, a line each.
void category_table(std::ostream& os, const CategoryBytes& b) {
  for (std::size_t i = 0; i < kMemoryCategoryCount; ++i) {
    if (b[i] == 0) continue;
    char line[96];
    std::snprintf(line, sizeof line, "    %-17s %12s  %14lld bytes\n",
                  category_name(static_cast<MemoryCategory>(i)), format_bytes(b[i]).c_str(),
                  static_cast<long long>(b[i]));
    os << line;
  }
}

// A caching allocator's reserved memory, and whether the run fits the GPU.
void reserved_text(std::ostream& os, const RunSummary& s) {
  if (!s.reserved) return;
  const auto& r = *s.reserved;
  os << "reserved   " << format_bytes(r.peak_bytes) << " (" << r.peak_bytes << " bytes) at step "
     << r.peak_step << ", " << r.segments
     << " segments; reserved - allocated at the allocated peak " +
            format_bytes(r.fragmentation_at_peak)
     << "\n";
  // Its size is a rule, not cuDNN's choice: say so.
  const std::int64_t conv = cudnn_workspace_at_peak(s);
  if (conv > 0)
    os << "cudnn      " << format_bytes(conv)
       << " of the peak is a convolution's workspace, modelled as the NHWC copies of its input, "
          "output and filter; cuDNN's heuristics pick the plan on the card, whose workspace can "
          "be smaller or larger, and the peak moves with it\n";
  if (s.gpu && s.per_rank) {
    // Sharded, a rank's peak decides whether the run fits each GPU, not the unsharded trace's.
    const std::int64_t rank_total = s.per_rank->peak_bytes + s.gpu->context;
    os << "gpu        one rank's peak " << format_bytes(s.per_rank->peak_bytes)
       << " + CUDA context ~" << format_bytes(s.gpu->context)
       << " (estimate) = " << format_bytes(rank_total) << " of " << format_bytes(s.gpu->capacity)
       << (rank_total <= s.gpu->capacity ? ": fits"
                                         : ": DOES NOT FIT (--gpu-memory sets the card's size)")
       << " (allocated bytes: a rank's reserved memory is not modelled)\n";
  } else if (s.gpu)
    os << "gpu        reserved " << format_bytes(s.gpu->reserved_peak) << " + CUDA context ~"
       << format_bytes(s.gpu->context) << " (estimate) = " << format_bytes(s.gpu->total()) << " of "
       << format_bytes(s.gpu->capacity)
       << (s.gpu->fits() ? ": fits" : ": DOES NOT FIT (--gpu-memory sets the card's size)") << "\n";
}

// The training step's phases, each with its bytes (figures.hpp: step_phases).
void step_phases_text(std::ostream& os, const StepPhases& p) {
  auto line = [&](const char* what, std::int64_t b) {
    char text[128];
    std::snprintf(text, sizeof text, "    %-24s %12s  %14lld bytes\n", what,
                  format_bytes(b).c_str(), static_cast<long long>(b));
    os << text;
  };
  os << "step phases\n";
  line("start", p.start);
  line("peak forward+backward", p.peak_forward_backward);
  line("after backward", p.after_backward);
  line("peak optimizer step", p.peak_optimizer_step);
}

// The run against its baseline: the same model without checkpointing, in the same process.
void baseline_text(std::ostream& os, const RunSummary& s) {
  if (s.baseline && !s.ok) {
    os << "vs no checkpointing (same process)\n    not compared: this run failed, so it saved "
          "nothing (without checkpointing: peak "
       << format_bytes(s.baseline->peak_bytes) << ", " << s.baseline->executions
       << " op executions)\n";
  } else if (s.baseline) {
    const auto& b = *s.baseline;
    const AgainstPlain a = *against_plain(s);
    os << "vs no checkpointing (same process)\n";
    os << "    peak           " << format_bytes(b.peak_bytes) << " -> "
       << format_bytes(s.peak.bytes)
       << (a.peak.saving() >= 0 ? " (saves " + format_bytes(a.peak.saving())
                                : " (COSTS " + format_bytes(a.peak.bytes) + " more")
       << ", ratio " << fixed(a.peak.ratio, 3) << ")\n";
    os << "    op executions  " << b.executions << " -> " << s.total_executions() << " ("
       << (a.extra_executions >= 0 ? "+" : "") << a.extra_executions << ", ratio "
       << fixed(a.execution_ratio, 3) << ")\n";
    os << (s.dry_run ? "    est. time      " : "    wall time      ") << fixed(b.total_ms, 2)
       << " ms -> " << fixed(s.times.total_ms, 2) << " ms (ratio " << fixed(a.time_ratio, 2)
       << ")\n";
  }
}

}  // namespace

std::string summary_text(const RunSummary& s) {
  std::ostringstream os;
  os << "model      " << s.model << "  [" << s.label << "]\n";
  if (s.device != Device::cpu) os << "memory     as " << s.memory_of << " holds it\n";
  if (!s.ok) {
    os << "RUN FAILED " << s.error << "\n";
    if (!s.failure.why.empty()) os << "  why      " << s.failure.why << "\n";
    if (!s.failure.fix.empty()) os << "  fix      " << s.failure.fix << "\n";
    os << "  (every figure below is the failed run's, up to the failure: not a measurement of "
          "this configuration, and no saving)\n";
    os << "loss       none (the run failed)\n";
  } else if (s.dry_run) {
    os << "dry run    exact bytes, estimated times: nothing was computed, so the loss, outputs, "
          "gradients and the recompute check's values are not available\n";
    os << "loss       not available in a dry run\n";
  } else {
    os << "loss       " << s.loss << "\n";
  }
  if (s.per_rank)
    os << "unsharded  peak and reserved below are the whole model on one GPU without FSDP2; one "
          "rank's are under 'per rank'\n";
  os << "peak       " << format_bytes(s.peak.bytes) << " (" << s.peak.bytes << " bytes) at step "
     << s.peak.step << ", " << phase_name(s.peak_phase) << " " << s.peak_op;
  if (!s.peak_node.empty()) os << " (" << s.peak_node << ")";
  os << "\n";
  category_table(os, s.peak.by_category);
  reserved_text(os, s);
  // One FSDP2 rank, on any device's semantics (the cpu's included).
  if (s.per_rank) os << fsdp_summary_text(*s.per_rank);
  if (s.offload)
    os << "offload    host memory " << format_bytes(s.offload->host_peak_bytes)
       << " at most (save_on_cpu's copies); copied " << format_bytes(s.offload->to_host_bytes)
       << " to the host, " << format_bytes(s.offload->to_device_bytes) << " back: ~"
       << fixed(s.offload->copy_ms, 1) << " ms at " << fixed(s.offload->pcie_gb_per_s, 0)
       << " GB/s (estimate, --pcie)\n";
  os << "end of forward  " << format_bytes(s.end_of_forward_total) << " live\n";
  category_table(os, s.end_of_forward);
  const bool stepped = s.step_phases.has_optimizer_step;
  if (stepped) step_phases_text(os, s.step_phases);
  os << "op executions   forward " << s.executions.forward << ", recompute "
     << s.executions.recompute << ", backward " << s.executions.backward;
  if (stepped) os << ", optimizer " << s.executions.optimizer;
  os << " (total " << s.total_executions() << ")\n";
  os << "checkpoints     " << s.checkpoints << " segments\n";
  os << (s.dry_run ? "est. time       forward " : "wall time       forward ")
     << fixed(s.times.forward_ms, 2) << " ms, backward " << fixed(s.times.backward_ms, 2)
     << " ms (recompute " << fixed(s.times.recompute_ms, 2) << " ms), ";
  if (stepped) os << "optimizer " << fixed(s.times.optimizer_ms, 2) << " ms, ";
  os << "total " << fixed(s.times.total_ms, 2) << " ms\n";
  baseline_text(os, s);
  if (!s.messages.empty()) os << "messages\n" << grouped_messages_text(s.messages, "    ");
  return os.str();
}

std::string summary_json(const RunSummary& s, int indent) {
  return to_json(s).dump(indent);
}

std::string summaries_json(const std::vector<RunSummary>& all, int indent) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& s : all) a.push_back(to_json(s));
  return a.dump(indent);
}

}  // namespace ckpt
