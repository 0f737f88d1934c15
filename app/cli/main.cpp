// ckptlab-cli: the engine without a window (DESIGN.md "app/"). Argument parsing and wiring
// only; every figure comes from engine/run/run_summary so that it matches the GUI's.

#include <unistd.h>

#include <QGuiApplication>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli_options.hpp"
#include "engine/autograd/anomaly.hpp"
#include "engine/model/loader.hpp"
#include "engine/plan/pytorch_code.hpp"
#include "engine/report/lessons.hpp"
#include "engine/run/memory_guard.hpp"
#include "engine/run/run_summary.hpp"
#include "engine/tensor/npy.hpp"
#include "engine/trace/export.hpp"
#include "plan_command.hpp"
#include "sample_path.hpp"
#include "ui/plot/memory_plot_renderer.hpp"

#ifndef CKPTLAB_VERSION
#define CKPTLAB_VERSION "0.0.0"
#endif

namespace cli = ckpt::cli;
using namespace ckpt;

namespace {

constexpr int kExitOk = 0;
constexpr int kExitUsage = 2;
constexpr int kExitModel = 3;
constexpr int kExitRun = 4;

const char* kMainHelp = R"(ckptlab-cli — activation checkpointing, measured (Checkpoint Lab)

usage: ckptlab-cli <command> [arguments]

commands:
  run MODEL [options]        one forward + loss + backward; prints peak memory, memory by
                             category, op executions by phase, recompute overhead, warnings
  modules MODEL              the module tree: op count, parameter bytes, saved activation bytes
  compare MODEL --config "label: options" --config ...
                             several configurations side by side (and --plot overlaid)
  code MODEL [options]       the PyTorch code of a configuration (where checkpoint() goes)
  plan MODEL --budget B [--strategy S] [--json] [--plot F.svg] [--code F.py]
                             what to checkpoint to fit a memory budget with the least recompute,
                             and the memory/recompute frontier of every strategy

MODEL is a native .json model (see samples/), an ONNX file exported from PyTorch, or the
name of an installed sample (`ckptlab-cli run densenet_block`).
`ckptlab-cli <command> --help` gives each command's options. --version prints the version.
exit codes: 0 success, 2 usage, 3 the model could not be loaded, 4 the run failed.
)";

const char* kRunOptionsHelp = R"(checkpoint options:
  --checkpoint MODULE        checkpoint this module instance (repeatable; a path from `modules`,
                             or a pattern such as 'features.*.*.bottleneck'; * is one segment)
  --checkpoint-instances DEF checkpoint every instance of a module definition (cell, cell_1, ...)
  --checkpoint-range A..B    checkpoint sibling modules A to B as one segment (repeatable; as a
                             checkpoint_sequential segment; an end may be an op of the parent)
  --checkpoint-all           checkpoint every checkpointable module (nested ones too)
  --checkpoint-depth N       checkpoint every checkpointable module at depth N (1 = top level)
  --segments N               checkpoint_sequential over the top-level modules, N segments
  --variant V                reentrant (PyTorch 1.13's default) | non-reentrant
  --no-preserve-rng          do not stash the RNG state per checkpoint
  --early-stop               non-reentrant: stop recomputing once every needed tensor is back
  --no-check-recompute       do not compare recomputed values with the forward's
  --policy P                 none | save-matmul (keep matmul/linear/conv2d outputs in segments)
run options:
  --batch N  --seed S  --threads N
  --dry-run                  run on the meta device: exact bytes and peak, estimated times, no
                             values (any batch, any model size; nothing is computed)
  --max-memory SIZE          the memory a real run may use (bytes or e.g. 16GiB); a run whose
                             dry run predicts more is not started (exit 4); default: 75 % of
                             the memory available; the allocator's cap as well
  --device auto|cpu|cuda     cuda without a GPU or CUDA build: exit 4; auto falls back to cpu
  --input-requires-grad      make every model input require grad
  --input FILE.npy           an input (repeatable, in the model's input order)
  --loss sum|mean|model      default: the model's own loss where it declares one, else sum
  --detect-anomaly           fail the run at the first forward, recomputed or backward op whose
                             output holds NaN or Inf, naming it (PyTorch's anomaly mode)
  --fail-allocation K        fault injection: the run's K-th allocation fails (tests)
)";

const char* kRunHelp = R"(usage: ckptlab-cli run MODEL [options]

Runs one forward, loss and backward with the engine and prints what it measured. Unless
--no-baseline, the same model also runs without checkpointing, so the memory saved and the
recompute overhead are ratios measured in the same process.

output options:
  --json                     the summary as one JSON object on stdout (keys in the README)
  --no-baseline              skip the run without checkpointing
  --dump DIR                 outputs, loss and every parameter's gradient as .npy files
  --trace FILE               the trace: .json (ckptlab schema), .csv (memory per step),
                             .perfetto.json (Chrome trace event format; opens in Perfetto)
  --plot FILE                the memory plot (.png or .svg), baseline as a ghost
)";

const char* kCompareHelp =
    R"(usage: ckptlab-cli compare MODEL --config "[label:] options" [--config ...] [--json] [--plot FILE]

Each --config is a quoted list of `run` options, optionally prefixed by a label:
  ckptlab-cli compare samples/densenet_block.json --config "plain:" --config "all: --checkpoint-all"
)";

bool stderr_is_tty() {
  return isatty(fileno(stderr)) != 0;
}

// Runs `job` on a worker thread; on a terminal, shows a spinner with the elapsed time for
// runs longer than a second (the engine knows no total in advance, so no fake percentage).
template <typename Job>
auto with_progress(const std::string& what, Job job) {
  auto fut = std::async(std::launch::async, job);
  if (!stderr_is_tty()) return fut.get();
  const auto start = std::chrono::steady_clock::now();
  const char* frames = "|/-\\";
  int frame = 0;
  bool shown = false;
  while (fut.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (s < 1.0) continue;
    std::fprintf(stderr, "\r%c %s  %.1f s", frames[frame++ % 4], what.c_str(), s);
    std::fflush(stderr);
    shown = true;
  }
  if (shown) std::fprintf(stderr, "\r\033[K");
  return fut.get();
}

std::shared_ptr<Model> load_or_exit(const std::string& path, int* code) {
  try {
    return load_model(cli::resolve_model_path(path));
  } catch (const std::exception& e) {
    std::cerr << "ckptlab-cli: cannot load model: " << e.what() << "\n";
    *code = kExitModel;
    return nullptr;
  }
}

// --device: the CPU is the only backend this build can run on (no GPU on these machines).
bool check_device(cli::DeviceChoice d) {
  if (d == cli::DeviceChoice::cuda) {
#ifdef CKPTLAB_HAVE_CUDA
    std::cerr << "ckptlab-cli: --device cuda: no CUDA device is available (the CUDA backend is "
                 "built, but no GPU was found)\n";
#else
    std::cerr << "ckptlab-cli: --device cuda: this build has no CUDA backend (nvcc was not "
                 "found when it was configured)\n";
#endif
    return false;
  }
  if (d == cli::DeviceChoice::auto_select)
    std::cerr << "ckptlab-cli: device auto: no CUDA device, running on the CPU\n";
  return true;
}

std::string sanitize_file_name(std::string s) {
  for (auto& c : s)
    if (c == '/' || c == '\\' || c == ':') c = '_';
  return s;
}

void dump_results(const std::string& dir, const Model& model, const RunResult& r) {
  std::filesystem::create_directories(dir);
  for (std::size_t i = 0; i < r.outputs.size(); ++i) {
    const std::string name =
        i < model.outputs.size() ? model.outputs[i] : "output_" + std::to_string(i);
    save_npy(dir + "/output." + sanitize_file_name(name) + ".npy", r.outputs[i]);
  }
  if (r.loss.defined()) save_npy(dir + "/loss.npy", r.loss);
  for (const auto& [name, g] : r.gradients)
    save_npy(dir + "/" + sanitize_file_name(name) + ".npy", g);
  for (const auto& [name, g] : r.input_gradients)
    save_npy(dir + "/input." + sanitize_file_name(name) + ".npy", g);
}

bool plot(int argc, char** argv, const std::string& path, const Trace& trace, const Trace* ghost) {
  qputenv("QT_QPA_PLATFORM", "offscreen");
  if (qEnvironmentVariableIsEmpty("XDG_RUNTIME_DIR")) {
    // Qt warns on stderr without one; a private directory keeps the output clean.
    const std::string dir = "/tmp/ckptlab-runtime-" + std::to_string(getuid());
    std::filesystem::create_directories(dir);
    std::filesystem::permissions(dir, std::filesystem::perms::owner_all);
    qputenv("XDG_RUNTIME_DIR", QByteArray::fromStdString(dir));
  }
  QGuiApplication app(argc, argv);
  QString error;
  if (!ui::exportMemoryPlot(QString::fromStdString(path), trace, ghost, {1200, 480}, &error)) {
    std::cerr << "ckptlab-cli: --plot: " << error.toStdString() << "\n";
    return false;
  }
  return true;
}

// A loss of NaN or Inf is a wrong answer, never a figure to print quietly.
void warn_non_finite_loss(const RunResult& r) {
  if (!r.ok || r.dry_run || !r.loss.defined()) return;
  if (const std::string kind = non_finite_kind(r.loss); !kind.empty())
    std::cerr << "ckptlab-cli: warning: the loss is " << kind
              << ": the gradients are not meaningful; rerun with --detect-anomaly to name the "
                 "op that first made a non-finite value\n";
}

bool has_help(const std::vector<std::string>& args) {
  for (const auto& a : args)
    if (a == "--help" || a == "-h") return true;
  return false;
}

// The summary's JSON with the lessons the app shows beside the run (every one, messages too).
std::string with_lessons_json(const std::string& summary, const std::vector<Lesson>& lessons) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(summary);
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const Lesson& l : lessons)
    list.push_back(
        {{"step", l.step >= 0 ? nlohmann::ordered_json(l.step) : nullptr},
         {"end_step", l.end_step > l.step ? nlohmann::ordered_json(l.end_step) : nullptr},
         {"severity", severity_name(l.severity)},
         {"title", l.title},
         {"text", l.text},
         {"module", l.module},
         {"from_message", l.from_message}});
  j["lessons"] = std::move(list);
  return j.dump(2);
}

int cmd_run(int argc, char** argv, const std::vector<std::string>& args) {
  if (has_help(args)) {
    std::cout << kRunHelp << "\n" << kRunOptionsHelp;
    return kExitOk;
  }
  std::vector<std::string> pos;
  cli::RunOptions o = cli::parse_run_options(args, &pos, true);
  if (pos.size() != 1) throw cli::UsageError("run takes exactly one MODEL");
  int code = kExitOk;
  auto model = load_or_exit(pos[0], &code);
  if (!model) return code;
  const CheckpointConfig config = cli::make_config(*model, o);
  if (!check_device(o.device)) return kExitRun;
  Runner runner(model);
  if (!config.dry_run) {
    // The memory guard: the dry run first, and no real run that would not fit.
    const GuardVerdict g =
        with_progress("dry run", [&] { return check_memory_guard(runner, config, o.max_memory); });
    if (!g.fits) {
      std::cerr << "ckptlab-cli: " << g.message
                << "\nckptlab-cli: add --dry-run for its exact figures, or --max-memory to "
                   "allow more\n";
      return kExitRun;
    }
  }
  RunResult base;
  bool with_baseline = !o.no_baseline;
  if (with_baseline) {
    CheckpointConfig plain = config;
    plain.fail_allocation_at = 0;  // the fault is the checkpointed run's
    plain.modules.clear();
    plain.ranges.clear();
    plain.segments = 0;
    if (!plain.dry_run) {
      const GuardVerdict g = check_memory_guard(runner, plain, o.max_memory);
      if (!g.fits) {
        std::cerr << "ckptlab-cli: the comparison without checkpointing is " << g.message << "\n";
        with_baseline = false;
      }
    }
    if (with_baseline)
      base = with_progress("running without checkpointing", [&] { return runner.run(plain); });
  }
  RunResult r = with_progress("running", [&] { return runner.run(config); });
  const RunSummary s = summarize(
      *model, r,
      config.modules.empty() && config.ranges.empty() && config.segments == 0 ? "plain"
                                                                              : "checkpointed",
      with_baseline && base.ok ? &base : nullptr);
  if (!o.trace_file.empty()) {
    try {
      const std::string& f = o.trace_file;
      auto ends = [&](const std::string& suf) {
        return f.size() >= suf.size() && f.compare(f.size() - suf.size(), suf.size(), suf) == 0;
      };
      const TraceFormat fmt =
          ends(".perfetto.json") ? TraceFormat::chrome
          : ends(".csv")         ? TraceFormat::csv
          : ends(".json")
              ? TraceFormat::json
              : throw cli::UsageError("--trace: use a .json, .csv or .perfetto.json file name");
      export_trace(r.trace, fmt, f);
    } catch (const cli::UsageError&) {
      throw;
    } catch (const std::exception& e) {
      std::cerr << "ckptlab-cli: --trace: " << e.what() << "\n";
      return kExitRun;
    }
  }
  const std::vector<Lesson> lessons = lessons_of(*model, config, r);
  if (o.json) {
    std::cout << with_lessons_json(summary_json(s), lessons) << "\n";
  } else {
    std::cout << summary_text(s);
    if (const std::string t = lessons_text(lessons, "  "); !t.empty())
      std::cout << "lessons\n" << t;
  }
  if (!o.dump_dir.empty() && r.ok && r.dry_run)
    std::cerr << "ckptlab-cli: --dump: a dry run has no values to write\n";
  else if (!o.dump_dir.empty() && r.ok)
    dump_results(o.dump_dir, *model, r);
  if (!o.plot_file.empty() &&
      !plot(argc, argv, o.plot_file, r.trace, with_baseline && base.ok ? &base.trace : nullptr))
    return kExitRun;
  warn_non_finite_loss(r);
  if (!r.ok) {
    std::cerr << "ckptlab-cli: run failed: " << r.error << "\n";
    if (!s.failure.fix.empty()) std::cerr << "ckptlab-cli: to fix it: " << s.failure.fix << "\n";
    return kExitRun;
  }
  return kExitOk;
}

std::int64_t parameter_bytes(const Model& model, const Module& m) {
  std::int64_t total = 0;
  std::set<std::string> seen;
  for (auto i = m.first_op; i < m.end_op; ++i)
    for (const auto& in : model.ops[static_cast<std::size_t>(i)].inputs)
      for (const auto& p : model.parameters)
        if (p.name == in && seen.insert(in).second) total += p.initial.nbytes();
  return total;
}

int cmd_modules(const std::vector<std::string>& args) {
  if (has_help(args)) {
    std::cout << "usage: ckptlab-cli modules MODEL [--json]\n\nThe module tree with, per "
                 "module, op count, parameter bytes and the activation bytes its ops save for "
                 "backward in a plain run (measured by running the model once).\n";
    return kExitOk;
  }
  bool json = false;
  std::vector<std::string> pos;
  for (const auto& a : args) {
    if (a == "--json") {
      json = true;
    } else if (a == "--dry-run") {
      // Always: a dry run measures saved bytes exactly, at any size.
    } else if (a.rfind("--", 0) == 0) {
      throw cli::UsageError("unknown option " + a);
    } else {
      pos.push_back(a);
    }
  }
  if (pos.size() != 1) throw cli::UsageError("modules takes exactly one MODEL");
  int code = kExitOk;
  auto model = load_or_exit(pos[0], &code);
  if (!model) return code;
  // Saved bytes are shapes, not values: a dry run measures them exactly at any size.
  CheckpointConfig measure;
  measure.dry_run = true;
  const RunResult r = with_progress("measuring", [&] { return Runner(model).run(measure); });
  warn_non_finite_loss(r);
  if (!r.ok) {
    std::cerr << "ckptlab-cli: run failed: " << r.error << "\n";
    return kExitRun;
  }
  // Saved bytes per module: tensors whose saving op ran inside the module's ops.
  std::map<std::string, std::int64_t> saved_by_node;
  for (const auto& t : r.trace.tensors())
    if (t.saved_at_step >= 0) saved_by_node[r.trace.step(t.saved_at_step).node] += t.bytes;
  auto saved_in = [&](const Module& m) {
    std::int64_t total = 0;
    for (auto i = m.first_op; i < m.end_op; ++i) {
      auto it = saved_by_node.find(model->ops[static_cast<std::size_t>(i)].name);
      if (it != saved_by_node.end()) total += it->second;
    }
    return total;
  };
  if (json) {
    std::cout << "[";
    bool first = true;
    for (const Module* m : model->all_modules()) {
      std::cout << (first ? "\n" : ",\n") << "  {\"path\": \"" << m->path << "\", \"kind\": \""
                << m->kind << "\", \"ops\": " << (m->end_op - m->first_op)
                << ", \"parameter_bytes\": " << parameter_bytes(*model, *m)
                << ", \"saved_bytes\": " << saved_in(*m)
                << ", \"checkpointable\": " << (m->checkpointable ? "true" : "false") << "}";
      first = false;
    }
    std::cout << "\n]\n";
    return kExitOk;
  }
  std::printf("%-48s %-16s %7s %12s %12s\n", "module", "kind", "ops", "params", "keeps");
  for (const Module* m : model->all_modules()) {
    const int depth = static_cast<int>(std::count(m->path.begin(), m->path.end(), '.'));
    std::string name = std::string(static_cast<std::size_t>(2 * depth), ' ') + m->name;
    if (!m->checkpointable) name += " (x)";
    std::printf("%-48s %-16s %7lld %12s %12s\n", name.c_str(), m->kind.c_str(),
                static_cast<long long>(m->end_op - m->first_op),
                format_bytes(parameter_bytes(*model, *m)).c_str(),
                format_bytes(saved_in(*m)).c_str());
  }
  std::printf(
      "\n(x): not checkpointable (its ops are not contiguous); saves: activation bytes "
      "its ops keep for backward in a plain run\n");
  return kExitOk;
}

int cmd_compare(int argc, char** argv, const std::vector<std::string>& args) {
  if (has_help(args)) {
    std::cout << kCompareHelp << "\n" << kRunOptionsHelp;
    return kExitOk;
  }
  std::vector<std::string> pos, configs;
  bool json = false;
  std::string plot_file;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--config" && i + 1 < args.size()) {
      configs.push_back(args[++i]);
    } else if (args[i] == "--plot" && i + 1 < args.size()) {
      plot_file = args[++i];
    } else if (args[i] == "--json") {
      json = true;
    } else if (args[i].rfind("--", 0) == 0) {
      throw cli::UsageError("unknown option " + args[i] +
                            " (compare takes --config, --json, --plot)");
    } else {
      pos.push_back(args[i]);
    }
  }
  if (pos.size() != 1) throw cli::UsageError("compare takes exactly one MODEL");
  if (configs.empty()) throw cli::UsageError("compare needs at least one --config");
  int code = kExitOk;
  auto model = load_or_exit(pos[0], &code);
  if (!model) return code;
  std::vector<std::pair<std::string, CheckpointConfig>> parsed;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    auto [label, cargs] = cli::split_config(configs[i], static_cast<int>(i));
    parsed.emplace_back(label,
                        cli::make_config(*model, cli::parse_run_options(cargs, nullptr, false)));
  }
  Runner runner(model);
  CheckpointConfig plain = parsed.front().second;
  plain.modules.clear();
  plain.ranges.clear();
  plain.segments = 0;
  if (!plain.dry_run && !check_memory_guard(runner, plain, plain.max_memory).fits)
    plain.dry_run = true;  // compared as dry runs where the real one would not fit
  const RunResult base =
      with_progress("running without checkpointing", [&] { return runner.run(plain); });
  std::vector<RunResult> results;
  std::vector<RunSummary> sums;
  for (auto [label, c] : parsed) {
    if (!c.dry_run) {
      const GuardVerdict g = check_memory_guard(runner, c, c.max_memory);
      if (!g.fits) {
        // Shown from its dry run (exact bytes, estimated times), said so, never computed.
        std::cerr << "ckptlab-cli: " << label << ": " << g.message << " Shown as a dry run.\n";
        c.dry_run = true;
        label += " (dry)";
      }
    }
    results.push_back(with_progress("running " + label, [&] { return runner.run(c); }));
    sums.push_back(summarize(*model, results.back(), label,
                             base.ok && base.dry_run == c.dry_run ? &base : nullptr));
  }
  bool failed = false;
  if (json) {
    std::cout << summaries_json(sums) << "\n";
  } else {
    // The label column is as wide as the longest label, so the figures stay in columns.
    int width = 6;
    for (const auto& s : sums) width = std::max(width, static_cast<int>(s.label.size()));
    std::printf("%-*s %12s %12s %8s %8s %8s %10s %8s\n", width, "config", "peak", "saved", "fwd",
                "recomp", "bwd", "time ms", "time x");
    for (const auto& s : sums) {
      // A failed run saved nothing: its row says so instead of showing a "saving".
      const bool vs = s.ok && s.baseline;
      char ratio[32] = "-";
      if (vs && s.baseline->total_ms > 0)
        std::snprintf(ratio, sizeof ratio, "%.2f", s.times.total_ms / s.baseline->total_ms);
      std::printf("%-*s %12s %12s %8lld %8lld %8lld %10.2f %8s\n", width, s.label.c_str(),
                  format_bytes(s.peak.bytes).c_str(),
                  !s.ok ? "FAILED"
                  : vs  ? format_bytes(s.baseline->peak_bytes - s.peak.bytes).c_str()
                        : "-",
                  static_cast<long long>(s.executions.forward),
                  static_cast<long long>(s.executions.recompute),
                  static_cast<long long>(s.executions.backward), s.times.total_ms, ratio);
    }
    for (const auto& s : sums) {
      if (!s.ok) {
        std::printf("%s: RUN FAILED: %s\n", s.label.c_str(), s.error.c_str());
        if (!s.failure.why.empty()) std::printf("  why: %s\n", s.failure.why.c_str());
        if (!s.failure.fix.empty()) std::printf("  fix: %s\n", s.failure.fix.c_str());
        std::printf("  (its row holds the failed run's figures up to the failure, not a saving)\n");
      }
      if (!s.messages.empty())
        std::printf("%s:\n%s", s.label.c_str(), grouped_messages_text(s.messages, "  ").c_str());
    }
  }
  for (const auto& s : sums) failed = failed || !s.ok;
  if (!plot_file.empty()) {
    const Trace* ghost = results.size() >= 2 ? &results[results.size() - 2].trace : &base.trace;
    if (!plot(argc, argv, plot_file, results.back().trace, ghost)) return kExitRun;
  }
  return failed ? kExitRun : kExitOk;
}

int cmd_code(const std::vector<std::string>& args) {
  if (has_help(args)) {
    std::cout << "usage: ckptlab-cli code MODEL [checkpoint options]\n\nPrints the PyTorch "
                 "code of the configuration: where the checkpoint(...) calls go.\n\n"
              << kRunOptionsHelp;
    return kExitOk;
  }
  std::vector<std::string> pos;
  const cli::RunOptions o = cli::parse_run_options(args, &pos, false);
  if (pos.size() != 1) throw cli::UsageError("code takes exactly one MODEL");
  int code = kExitOk;
  auto model = load_or_exit(pos[0], &code);
  if (!model) return code;
  std::cout << pytorch_code(*model, cli::make_config(*model, o));
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kMainHelp;
    return args.empty() ? kExitUsage : kExitOk;
  }
  if (args[0] == "--version") {
    std::cout << "ckptlab-cli " << CKPTLAB_VERSION << "\n";
    return kExitOk;
  }
  const std::string cmd = args[0];
  args.erase(args.begin());
  try {
    if (cmd == "run") return cmd_run(argc, argv, args);
    if (cmd == "modules") return cmd_modules(args);
    if (cmd == "compare") return cmd_compare(argc, argv, args);
    if (cmd == "code") return cmd_code(args);
    if (cmd == "plan") return cli::cmd_plan(args);
    throw cli::UsageError("unknown command '" + cmd + "'");
  } catch (const cli::UsageError& e) {
    std::cerr << "ckptlab-cli: " << e.what() << "\n(see ckptlab-cli "
              << (cmd.rfind("-", 0) == 0 ? "" : cmd + " ") << "--help)\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "ckptlab-cli: " << e.what() << "\n";
    return kExitRun;
  }
}
