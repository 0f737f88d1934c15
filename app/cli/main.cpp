// ckptlab-cli: the engine without a window (docs/ARCHITECTURE.md "app/"). Argument parsing and
// wiring only; every figure comes from engine/run/run_summary so that it matches the GUI's.

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "capture_command.hpp"
#include "cli_common.hpp"
#include "cli_options.hpp"
#include "cli_reference.hpp"
#include "engine/autograd/anomaly.hpp"
#include "engine/model/load_notes.hpp"
#include "engine/report/lessons.hpp"
#include "engine/report/run_report.hpp"
#include "engine/report/run_summary.hpp"
#include "engine/request/execute.hpp"
#include "engine/tensor/npy.hpp"
#include "engine/trace/export.hpp"
#include "inspect_commands.hpp"
#include "plan_command.hpp"
#include "snapshot_command.hpp"

#ifndef CKPTLAB_VERSION
#define CKPTLAB_VERSION "0.0.0"
#endif

namespace cli = ckpt::cli;
using namespace ckpt;
using namespace ckpt::cli;

namespace {

std::string sanitize_file_name(std::string s) {
  for (auto& c : s)
    if (c == '/' || c == '\\' || c == ':') c = '_';
  return s;
}

// NumPy has no bfloat16: a bfloat16 output (under --amp bf16) is written as float32, exactly.
void save_for_numpy(const std::string& path, const Tensor& t) {
  if (t.dtype() != DType::bf16) return save_npy(path, t);
  const std::vector<double> values = t.to_vector();
  save_npy(path, Tensor::from_vector(std::vector<float>(values.begin(), values.end()), t.shape()));
}

void dump_results(const std::string& dir, const Model& model, const RunResult& r) {
  std::filesystem::create_directories(dir);
  for (std::size_t i = 0; i < r.outputs.size(); ++i) {
    const std::string name =
        i < model.outputs.size() ? model.outputs[i] : "output_" + std::to_string(i);
    save_for_numpy(dir + "/output." + sanitize_file_name(name) + ".npy", r.outputs[i]);
  }
  if (r.loss.defined()) save_npy(dir + "/loss.npy", r.loss);
  for (const auto& [name, g] : r.gradients)
    save_npy(dir + "/" + sanitize_file_name(name) + ".npy", g);
  for (const auto& [name, g] : r.input_gradients)
    save_npy(dir + "/input." + sanitize_file_name(name) + ".npy", g);
}

// The summary's JSON with the lessons the app shows beside the run (every one, messages too)
// and the model's load summary (which initializers it trains, weights made up for the run).
std::string with_lessons_json(const std::string& summary, const std::vector<Lesson>& lessons,
                              const Model& model) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(summary);
  j["load"] = load_summary_lines(model);
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

// --trace FILE, its format from the name; false when writing it failed (said why).
bool write_trace_file(const Trace& trace, const std::string& f) {
  try {
    auto ends = [&](const std::string& suf) {
      return f.size() >= suf.size() && f.compare(f.size() - suf.size(), suf.size(), suf) == 0;
    };
    const TraceFormat fmt =
        ends(".perfetto.json") ? TraceFormat::chrome
        : ends(".csv")         ? TraceFormat::csv
        : ends(".pickle")      ? TraceFormat::pytorch_snapshot
        : ends(".json")        ? TraceFormat::json
                               : throw cli::UsageError(
                                     "--trace: use a .json, .csv, .perfetto.json or .pickle file name");
    export_trace(trace, fmt, f);
    return true;
  } catch (const cli::UsageError&) {
    throw;
  } catch (const std::exception& e) {
    std::cerr << "ckptlab-cli: --trace: " << e.what() << "\n";
    return false;
  }
}

int cmd_run(int argc, char** argv, const std::vector<std::string>& args) {
  if (has_help(args)) {
    std::cout << cli::command_help(*cli::find_command_doc("run"));
    return kExitOk;
  }
  std::vector<std::string> pos;
  cli::RunOptions o = cli::parse_run_options(args, &pos, true);
  if (pos.size() != 1) throw cli::UsageError("run takes exactly one MODEL");
  int code = kExitOk;
  auto model = load_or_exit(pos[0], &code);
  if (!model) return code;
  const RunRequest request = cli::make_request(*model, o);
  if (!check_device(o.device, o.dry_run)) return kExitRun;
  const RunTarget target(model);
  RequestOptions options;
  options.baseline = !o.no_baseline;
  const RunOutcome outcome = execute_with_progress(target, request, options);
  if (!outcome.not_computed.empty()) {
    // The memory guard: the dry run said the real run would not fit.
    std::cerr << "ckptlab-cli: " << outcome.not_computed
              << "\nckptlab-cli: add --dry-run for its exact figures, or --max-memory to "
                 "allow more\n";
    return kExitRun;
  }
  if (!outcome.baseline_not_run.empty())
    std::cerr << "ckptlab-cli: the comparison without checkpointing is " << outcome.baseline_not_run
              << "\n";
  const RunResult& r = *outcome.result;
  RunSummary s = outcome.report.summary;
  s.label = request.plan.empty() ? "plain" : "checkpointed";
  const Trace* baseline =
      outcome.baseline && outcome.baseline->ok ? &outcome.baseline->trace : nullptr;
  if (!o.trace_file.empty() && !write_trace_file(r.trace, o.trace_file)) return kExitRun;
  const std::vector<Lesson>& lessons = outcome.report.lessons;
  if (o.json) {
    std::cout << with_lessons_json(summary_json(s), lessons, *model) << "\n";
  } else {
    std::cout << summary_text(s);
    if (const std::string t = lessons_text(lessons, "  "); !t.empty())
      std::cout << "lessons\n" << t;
  }
  if (!o.dump_dir.empty() && r.ok && r.dry_run)
    std::cerr << "ckptlab-cli: --dump: a dry run has no values to write\n";
  else if (!o.dump_dir.empty() && r.ok)
    dump_results(o.dump_dir, *model, r);
  if (!o.plot_file.empty()) {
    // Sharded (--fsdp, --param-dtype): the curves are one rank's, the baseline's too.
    const MemorySeriesPtr& series = outcome.report.series;
    const bool ok = series && series->per_rank
                        ? plot(argc, argv, o.plot_file, series,
                               baseline ? std::make_shared<const MemorySeries>(
                                              series_of_run(*model, *baseline, request.settings))
                                        : nullptr,
                               r.trace)
                        : plot(argc, argv, o.plot_file, r.trace, baseline);
    if (!ok) return kExitRun;
  }
  warn_non_finite_loss(r);
  if (!r.ok) {
    std::cerr << "ckptlab-cli: run failed: " << r.error << "\n";
    if (!s.failure.fix.empty()) std::cerr << "ckptlab-cli: to fix it: " << s.failure.fix << "\n";
    return kExitRun;
  }
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" ||
      (args[0] == "help" && args.size() == 1)) {
    std::cout << cli::main_help();
    return args.empty() ? kExitUsage : kExitOk;
  }
  if (args[0] == "--version") {
    std::cout << "ckptlab-cli " << CKPTLAB_VERSION << "\n";
    return kExitOk;
  }
  const std::string cmd = args[0];
  args.erase(args.begin());
  try {
    take_load_options(args);
    if (cmd == "run") return cmd_run(argc, argv, args);
    if (cmd == "modules") return cmd_modules(args);
    if (cmd == "compare") return cmd_compare(argc, argv, args);
    if (cmd == "code") return cmd_code(args);
    if (cmd == "plan") return cli::cmd_plan(args);
    if (cmd == "snapshot") return cli::cmd_snapshot(args);
    if (cmd == "capture-ops") return cli::cmd_capture_ops(args);
    if (cmd == "capture-script") return cli::cmd_capture_script(args);
    if (cmd == "help") return cli::cmd_help(args, CKPTLAB_VERSION);
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
