#include "snapshot_command.hpp"

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli_common.hpp"
#include "cli_reference.hpp"
#include "engine/report/snapshot_attribution.hpp"
#include "engine/snapshot/measured_timeline.hpp"
#include "engine/snapshot/memory_snapshot.hpp"
#include "engine/tensor/memory_semantics.hpp"
#include "engine/trace/snapshot_compare.hpp"

namespace ckpt::cli {

namespace {

std::string mib(std::int64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

std::string with_commas(std::int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (v < 0 ? "-" : "") + out;
}

std::string bytes_text(std::int64_t b) {
  return with_commas(b) + " B (" + mib(b) + ")";
}

std::string when(const MemorySnapshot& s, const MeasuredTimeline& t, std::int64_t event) {
  if (event < 0) return "before the first event";
  const auto& ev = s.device_traces[static_cast<std::size_t>(t.device)];
  const SnapshotEvent& e = ev[static_cast<std::size_t>(event)];
  std::string out = "after event " + std::to_string(event) + " of " + std::to_string(ev.size()) +
                    " (" + snapshot_action_name(e.action) + ")";
  if (e.time_us >= 0 && ev.front().time_us >= 0) {
    char buf[64];
    std::snprintf(buf, sizeof buf, ", %.3f ms into the recording",
                  static_cast<double>(e.time_us - ev.front().time_us) / 1000.0);
    out += buf;
  }
  return out;
}

struct Options {
  std::string file;
  bool json = false;
  std::size_t top = 10;
  std::int64_t device = -1;
  std::string compare_model;
  std::vector<std::string> run_args;
};

std::int64_t count(const std::string& flag, const std::string& v) {
  try {
    std::size_t used = 0;
    const long long n = std::stoll(v, &used);
    if (used != v.size() || n < 0) throw std::invalid_argument(v);
    return static_cast<std::int64_t>(n);
  } catch (const std::exception&) {
    throw UsageError(flag + " expects a number, got '" + v + "'");
  }
}

using S = const std::string&;

const std::vector<OptionRule<Options>>& snapshot_rules() {
  static const std::vector<OptionRule<Options>> rules = {
      {"--json", "", "the same as one JSON object on stdout",
       [](Options& o, S, S) { o.json = true; }},
      {"--top", "N", "how many allocations at the peak to list (default 10; 0: all)",
       [](Options& o, S a, S v) { o.top = static_cast<std::size_t>(count(a, v)); }},
      {"--gpu", "D", "which GPU's trace (default: the first with one)",
       [](Options& o, S a, S v) { o.device = count(a, v); }},
      {"--compare", "MODEL",
       "also the engine's prediction for MODEL with the run options that follow (--checkpoint "
       "..., --batch ...): its peak beside the measured one and the difference. The prediction "
       "is the engine's dry run with the CUDA semantics (PyTorch 2.x on a GPU), as a snapshot "
       "is a GPU's; --device cpu predicts PyTorch 1.13's CPU figures instead.",
       [](Options& o, S, S v) {
         if (!o.compare_model.empty()) throw UsageError("--compare takes one MODEL");
         o.compare_model = v;
       }},
  };
  return rules;
}

Options parse(const std::vector<std::string>& args) {
  Options o;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (apply_option(snapshot_rules(), args, i, o)) continue;
    if (!o.compare_model.empty()) {
      o.run_args.push_back(a);  // after --compare MODEL: run's options
    } else if (a.rfind("--", 0) == 0) {
      throw UsageError("unknown option '" + a + "'");
    } else if (o.file.empty()) {
      o.file = a;
    } else {
      throw UsageError("snapshot takes one FILE");
    }
  }
  if (o.file.empty()) throw UsageError("snapshot needs a FILE");
  return o;
}

struct Prediction {
  std::shared_ptr<const Model> model;
  std::shared_ptr<const RunResult> result;  // a dry run
  Device device = Device::cpu;              // whose memory semantics it ran with
  const Trace& trace() const { return result->trace; }
};

// The engine's prediction for the model and run options: a dry-run request through the engine's
// pipeline, on the device the run options name.
std::optional<Prediction> predict(const Options& o, int* code) {
  std::vector<std::string> positional;
  RunOptions run = parse_run_options(o.run_args, &positional, false);
  if (!positional.empty())
    throw UsageError("--compare takes one MODEL, then run options; got '" + positional[0] + "'");
  run.dry_run = true;
  // A snapshot is a GPU's memory: predict it with the GPU's semantics unless told otherwise.
  if (run.device == DeviceChoice::auto_select) run.device = DeviceChoice::cuda;
  auto model = load_or_exit(o.compare_model, code);
  if (!model) return std::nullopt;
  const RunRequest request = make_request(*model, run);
  RequestOptions options;
  options.report = ReportDetail::none;
  const RunOutcome outcome = execute_with_progress(RunTarget(model), request, options);
  if (!outcome.result->ok) {
    std::cerr << "ckptlab-cli: the prediction failed: " << outcome.result->error << "\n";
    *code = kExitRun;
    return std::nullopt;
  }
  return Prediction{model, outcome.result, request.settings.device};
}

struct Compared {
  SnapshotComparison comparison;
  SnapshotAttribution attribution;
  const char* whose = "";  // the prediction's memory semantics, "PyTorch 2.x on ..."
};

nlohmann::ordered_json frames_json(const MemorySnapshot& s, StackId stack) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const SnapshotFrame* f : s.user_frames(stack, 8))
    list.push_back({{"filename", f->filename}, {"line", f->line}, {"name", f->name}});
  return list;
}

void print_json(const MemorySnapshot& s, const MeasuredTimeline& t, std::size_t top,
                const std::optional<Compared>& cmp) {
  const SnapshotComparison* c = cmp ? &cmp->comparison : nullptr;
  nlohmann::ordered_json j;
  j["file"] = s.source;
  j["device"] = t.device;
  j["events"] = t.allocated.size();
  j["exact"] = t.exact;
  if (!t.exact) j["note"] = t.note;
  j["allocated"] = {{"peak", t.peak_allocated},
                    {"peak_event", t.peak_allocated_event},
                    {"peak_time_us", t.peak_time_us},
                    {"start", t.start_allocated}};
  j["reserved"] = {{"peak", t.peak_reserved},
                   {"peak_event", t.peak_reserved_event},
                   {"start", t.start_reserved}};
  j["duration_us"] = t.duration_us;
  nlohmann::ordered_json live = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < t.live_at_peak.size() && (top == 0 || i < top); ++i) {
    const MeasuredAllocation& a = t.live_at_peak[i];
    nlohmann::ordered_json one = {{"address", a.address},
                                  {"bytes", a.bytes},
                                  {"requested", a.requested},
                                  {"alloc_event", a.alloc_event},
                                  {"frames", frames_json(s, a.stack)}};
    if (const AllocationOwner* w = cmp ? cmp->attribution.owner(a) : nullptr)
      one["owner"] = {
          {"module", w->module}, {"node", w->node}, {"parameter", w->parameter}, {"step", w->step}};
    live.push_back(std::move(one));
  }
  j["live_at_peak"] = std::move(live);
  j["live_at_peak_count"] = t.live_at_peak.size();
  if (c)
    j["comparison"] = {
        {"measured_peak", c->measured_peak},
        {"measured_start", c->measured_start},
        {"measured_step_peak", c->measured_step_peak},
        {"predicted_peak", c->predicted_peak},
        {"predicted_start", c->predicted_start},
        {"predicted_workspace", c->predicted_workspace},
        {"predicted_step_peak", c->predicted_step_peak},
        {"difference", c->difference},
        {"ratio", c->ratio},
        {"prediction", std::string("engine dry run, memory as ") + cmp->whose + " holds it"},
        {"allocs", cmp->attribution.allocs},
        {"attributed", cmp->attribution.matched},
        {"attributed_parameters", cmp->attribution.parameters}};
  std::cout << j.dump(2) << "\n";
}

void print_text(const MemorySnapshot& s, const MeasuredTimeline& t, std::size_t top,
                const std::optional<Compared>& cmp) {
  const SnapshotComparison* c = cmp ? &cmp->comparison : nullptr;
  std::cout << "snapshot " << s.source << ", device " << t.device << ": " << t.allocated.size()
            << " events";
  if (t.duration_us >= 0) std::printf(" over %.3f ms", static_cast<double>(t.duration_us) / 1000.0);
  std::cout << "\n";
  std::cout << "  peak allocated  " << bytes_text(t.peak_allocated) << ", "
            << when(s, t, t.peak_allocated_event) << "\n";
  std::cout << "  peak reserved   " << bytes_text(t.peak_reserved) << ", "
            << when(s, t, t.peak_reserved_event) << "\n";
  std::cout << "  at the start    " << bytes_text(t.start_allocated) << " allocated, "
            << bytes_text(t.start_reserved) << " reserved\n";
  std::cout << "  the step added  " << bytes_text(t.peak_allocated - t.start_allocated)
            << " at its peak\n";
  if (!t.exact) std::cout << "  note: " << t.note << "\n";
  const std::size_t n = top == 0 ? t.live_at_peak.size() : std::min(top, t.live_at_peak.size());
  std::cout << "live at the peak: " << t.live_at_peak.size() << " allocations, the " << n
            << " largest:\n";
  for (std::size_t i = 0; i < n; ++i) {
    const MeasuredAllocation& a = t.live_at_peak[i];
    std::string what = a.alloc_event < 0 ? "allocated before recording began"
                                         : "allocated at event " + std::to_string(a.alloc_event);
    if (const AllocationOwner* w = cmp ? cmp->attribution.owner(a) : nullptr)
      what += (w->parameter ? ", parameter " + w->node
                            : ", the engine's " + w->node + " at step " + std::to_string(w->step)) +
              " (module " + (w->module.empty() ? std::string("<model>") : w->module) + ")";
    std::printf("  %14s  %s\n", with_commas(a.bytes).c_str(), what.c_str());
    for (const SnapshotFrame* f : s.user_frames(a.stack, 4))
      std::cout << "                  " << f->filename << ":" << f->line << "  " << f->name << "\n";
  }
  if (c) {
    std::cout << "compared with the engine's prediction (dry run, memory as " << cmp->whose
              << " holds it):\n"
              << "  measured step peak  " << bytes_text(c->measured_step_peak)
              << " (peak minus the start)\n"
              << "  predicted step peak " << bytes_text(c->predicted_step_peak);
    if (c->predicted_workspace > 0)
      std::cout << " (peak " << bytes_text(c->predicted_peak) << " minus the libraries' workspace "
                << bytes_text(c->predicted_workspace) << ", which the measured start holds)";
    std::cout << "\n"
              << "  difference          " << bytes_text(c->difference);
    if (c->predicted_peak > 0) std::printf(", measured/predicted = %.3f", c->ratio);
    std::cout << "\n  attributed          " << cmp->attribution.matched << " of "
              << cmp->attribution.allocs << " GPU allocs (" << cmp->attribution.parameters
              << " to parameters) to the model (same bytes, in order)\n";
  }
}

}  // namespace

CommandDoc snapshot_command_doc() {
  return {
      "snapshot",
      "FILE [--json] [--top N] [--gpu D] [--compare MODEL [run options]]",
      "a PyTorch CUDA memory snapshot's measured peak, and the engine's prediction beside it",
      "Reads a PyTorch CUDA memory snapshot (torch.cuda.memory._dump_snapshot(), the file "
      "PyTorch's memory_viz page opens) and prints what it measured: the peak of allocated "
      "bytes (what torch.cuda.max_memory_allocated() reports) and of reserved bytes (the "
      "caching allocator's segments), when each was reached (event index, and time when "
      "recorded), the bytes already allocated when recording began, and the allocations live at "
      "the peak, largest first, with their frames (Python's when the stack has them).",
      {option_group("snapshot options", snapshot_rules())},
      TakesRunOptions::none,
      "0 success, 2 usage, 3 the snapshot or the model could not be read, 4 the prediction "
      "failed",
  };
}

int cmd_snapshot(const std::vector<std::string>& args) {
  if (has_help(args)) {
    std::cout << command_help(snapshot_command_doc());
    return kExitOk;
  }
  const Options o = parse(args);
  MemorySnapshot s;
  MeasuredTimeline t;
  try {
    s = read_memory_snapshot(o.file);
    t = measure_timeline(s, o.device);
  } catch (const std::exception& e) {
    std::cerr << "ckptlab-cli: " << e.what() << "\n";
    return kExitModel;
  }
  std::optional<Compared> comparison;
  if (!o.compare_model.empty()) {
    int code = kExitOk;
    const std::optional<Prediction> predicted = predict(o, &code);
    if (!predicted) return code;
    comparison = Compared{compare_snapshot(t, predicted->trace()),
                          attribute_snapshot(s, t, predicted->trace(), *predicted->model),
                          memory_semantics(predicted->device).whose};
  }
  if (o.json)
    print_json(s, t, o.top, comparison);
  else
    print_text(s, t, o.top, comparison);
  return kExitOk;
}

}  // namespace ckpt::cli
