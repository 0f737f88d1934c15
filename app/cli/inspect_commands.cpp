#include "inspect_commands.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <iostream>
#include <optional>
#include <set>

#include "cli_common.hpp"
#include "cli_reference.hpp"
#include "engine/model/load_notes.hpp"
#include "engine/plan/pytorch_code.hpp"
#include "engine/report/figures.hpp"
#include "engine/report/run_summary.hpp"
#include "engine/request/execute.hpp"

namespace ckpt::cli {

namespace {

std::int64_t parameter_bytes(const Model& model, const Module& m) {
  std::int64_t total = 0;
  std::set<std::string> seen;
  for (auto i = m.first_op; i < m.end_op; ++i)
    for (const auto& in : model.ops[static_cast<std::size_t>(i)].inputs)
      for (const auto& p : model.parameters)
        if (p.name == in && seen.insert(in).second) total += p.initial.nbytes();
  return total;
}

}  // namespace

// The module tree with each module's op count, parameter bytes and the bytes it keeps.
void print_modules(const Model& model, const std::function<std::int64_t(const Module&)>& saved_in,
                   bool json) {
  if (json) {
    std::cout << "[";
    bool first = true;
    for (const Module* m : model.all_modules()) {
      std::cout << (first ? "\n" : ",\n") << "  {\"path\": \"" << m->path << "\", \"kind\": \""
                << m->kind << "\", \"ops\": " << (m->end_op - m->first_op)
                << ", \"parameter_bytes\": " << parameter_bytes(model, *m)
                << ", \"saved_bytes\": " << saved_in(*m)
                << ", \"checkpointable\": " << (m->checkpointable ? "true" : "false") << "}";
      first = false;
    }
    std::cout << "\n]\n";
    return;
  }
  std::printf("%-48s %-16s %7s %12s %12s\n", "module", "kind", "ops", "params", "keeps");
  for (const Module* m : model.all_modules()) {
    const int depth = static_cast<int>(std::count(m->path.begin(), m->path.end(), '.'));
    std::string name = std::string(static_cast<std::size_t>(2 * depth), ' ') + m->name;
    if (!m->checkpointable) name += " (x)";
    std::printf("%-48s %-16s %7lld %12s %12s\n", name.c_str(), m->kind.c_str(),
                static_cast<long long>(m->end_op - m->first_op),
                format_bytes(parameter_bytes(model, *m)).c_str(),
                format_bytes(saved_in(*m)).c_str());
  }
  std::printf(
      "\n(x): not checkpointable (its ops are not contiguous); saves: activation bytes "
      "its ops keep for backward in a plain run\n");
  // Every trainable parameter by name: what an ONNX file does not say (--frozen changes it).
  std::printf("\nparameters\n");
  for (const std::string& line : load_summary_lines(model, true))
    std::printf("  %s\n", line.c_str());
}

namespace {

struct ModulesArgs {
  bool json = false;
  Device device = Device::cpu;
};

const std::vector<OptionRule<ModulesArgs>>& modules_rules() {
  using S = const std::string&;
  static const std::vector<OptionRule<ModulesArgs>> rules = {
      {"--json", "", "the tree as a JSON array, one object per module",
       [](ModulesArgs& m, S, S) { m.json = true; }},
      {"--device", "auto|cpu|cuda",
       "whose saved bytes: this engine's CPU (auto, cpu) or PyTorch 2.x's on an NVIDIA GPU",
       [](ModulesArgs& m, S a, S v) {
         if (v != "cpu" && v != "cuda" && v != "auto")
           throw UsageError(a + " takes auto, cpu or cuda, got '" + v + "'");
         m.device = v == "cuda" ? Device::cuda : Device::cpu;
       }},
      {"--dry-run", "", "accepted for symmetry with run: modules always measures with a dry run",
       [](ModulesArgs&, S, S) {}},
  };
  return rules;
}

}  // namespace

CommandDoc modules_command_doc() {
  return {
      "modules",
      "MODEL [--json] [--device auto|cpu|cuda]",
      "the module tree: op count, parameter bytes, saved activation bytes",
      "The module tree with, per module, op count, parameter bytes and the activation bytes its "
      "ops save for backward in a plain run (measured by a dry run of the model; with --device "
      "cuda, as PyTorch 2.x holds them on a GPU).",
      {option_group("modules options", modules_rules())},
      TakesRunOptions::none,
      kExitCodesText,
  };
}

int cmd_modules(const std::vector<std::string>& args) {
  if (has_help(args)) {
    std::cout << command_help(modules_command_doc());
    return kExitOk;
  }
  ModulesArgs m;
  std::vector<std::string> pos;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (apply_option(modules_rules(), args, i, m)) continue;
    if (args[i].rfind("--", 0) == 0) throw UsageError("unknown option " + args[i]);
    pos.push_back(args[i]);
  }
  const bool json = m.json;
  const Device device = m.device;
  if (pos.size() != 1) throw UsageError("modules takes exactly one MODEL");
  int code = kExitOk;
  auto model = load_or_exit(pos[0], &code);
  if (!model) return code;
  // Saved bytes are shapes, not values: a dry run measures them exactly at any size.
  RunRequest measure;
  measure.settings.dry_run = true;
  measure.settings.device = device;
  RequestOptions options;
  options.report = ReportDetail::none;
  const RunOutcome outcome =
      with_progress("measuring", [&] { return execute(RunTarget(model), measure, options); });
  const RunResult& r = *outcome.result;
  warn_non_finite_loss(r);
  if (!r.ok) {
    std::cerr << "ckptlab-cli: run failed: " << r.error << "\n";
    return kExitRun;
  }
  // Saved bytes per module: what its ops saved for backward in the forward.
  const auto saved_by_node = forward_saved_bytes_by_node(r.trace);
  auto saved_in = [&](const Module& m) {
    std::int64_t total = 0;
    for (auto i = m.first_op; i < m.end_op; ++i) {
      auto it = saved_by_node.find(model->ops[static_cast<std::size_t>(i)].name);
      if (it != saved_by_node.end()) total += it->second;
    }
    return total;
  };
  print_modules(*model, saved_in, json);
  return kExitOk;
}

namespace {

struct CompareArgs {
  std::string model;
  std::vector<std::string> configs;
  bool json = false;
  std::string plot_file;
};

const std::vector<OptionRule<CompareArgs>>& compare_rules() {
  using S = const std::string&;
  static const std::vector<OptionRule<CompareArgs>> rules = {
      {"--config", "\"[label:] options\"",
       "one configuration: a quoted list of run options, optionally prefixed by a label "
       "(repeatable; at least one)",
       [](CompareArgs& c, S, S v) { c.configs.push_back(v); }},
      {"--json", "", "an array of run's JSON objects, one per configuration",
       [](CompareArgs& c, S, S) { c.json = true; }},
      {"--plot", "FILE", "the memory plot (.png or .svg) of the last two configurations overlaid",
       [](CompareArgs& c, S, S v) { c.plot_file = v; }},
  };
  return rules;
}

CompareArgs parse_compare_args(const std::vector<std::string>& args) {
  CompareArgs c;
  std::vector<std::string> pos;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (apply_option(compare_rules(), args, i, c)) continue;
    if (args[i].rfind("--", 0) == 0)
      throw UsageError("unknown option " + args[i] + " (compare takes --config, --json, --plot)");
    pos.push_back(args[i]);
  }
  if (pos.size() != 1) throw UsageError("compare takes exactly one MODEL");
  if (c.configs.empty()) throw UsageError("compare needs at least one --config");
  c.model = pos[0];
  return c;
}

// One row per configuration; the label column as wide as the longest label. "peak saved" is
// the peak's saving against the same settings without checkpoints (figures.hpp), not the bytes
// saved for backward.
void print_compare_table(const std::vector<RunSummary>& sums) {
  int width = 6;
  for (const auto& s : sums) width = std::max(width, static_cast<int>(s.label.size()));
  std::printf("%-*s %12s %12s %8s %8s %8s %10s %8s\n", width, "config", "peak", "peak saved", "fwd",
              "recomp", "bwd", "time ms", "time x");
  for (const auto& s : sums) {
    // A failed run saved nothing: its row says so instead of showing a "saving".
    const std::optional<AgainstPlain> vs = s.ok ? against_plain(s) : std::nullopt;
    char ratio[32] = "-";
    if (vs && s.baseline->total_ms > 0) std::snprintf(ratio, sizeof ratio, "%.2f", vs->time_ratio);
    std::printf("%-*s %12s %12s %8lld %8lld %8lld %10.2f %8s\n", width, s.label.c_str(),
                format_bytes(s.peak.bytes).c_str(),
                !s.ok ? "FAILED"
                : vs  ? format_bytes(vs->peak.saving()).c_str()
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

}  // namespace

CommandDoc compare_command_doc() {
  return {
      "compare",
      "MODEL --config \"[label:] options\" [--config ...] [--json] [--plot FILE]",
      "several configurations side by side (and --plot overlaid)",
      "Runs each configuration, with its run without checkpoints, and prints them side by side: "
      "peak, peak saved, op executions by phase, time. Each --config is a quoted list of run "
      "options (see the run options), optionally prefixed by a label: ckptlab-cli compare "
      "samples/densenet_block.json --config \"plain:\" --config \"all: --checkpoint-all\"",
      {option_group("compare options", compare_rules())},
      TakesRunOptions::none,
      kExitCodesText,
  };
}

int cmd_compare(int argc, char** argv, const std::vector<std::string>& args) {
  if (has_help(args)) {
    std::cout << command_help(compare_command_doc());
    return kExitOk;
  }
  const CompareArgs a = parse_compare_args(args);
  int code = kExitOk;
  auto model = load_or_exit(a.model, &code);
  if (!model) return code;
  std::vector<std::pair<std::string, RunRequest>> parsed;
  for (std::size_t i = 0; i < a.configs.size(); ++i) {
    auto [label, cargs] = split_config(a.configs[i], static_cast<int>(i));
    const RunOptions options = parse_run_options(cargs, nullptr, false);
    if (!check_device(options.device, options.dry_run)) return kExitRun;
    parsed.emplace_back(label, make_request(*model, options));
  }
  // One target: each configuration is compared with its settings' run without checkpoints, run
  // once for all the configurations that share them.
  const RunTarget target(model);
  RequestOptions options;
  options.baseline = true;
  options.report = ReportDetail::summary;
  std::vector<RunOutcome> outcomes;
  std::vector<RunSummary> sums;
  for (const auto& [label, request] : parsed) {
    outcomes.push_back(execute_with_progress(target, request, options));
    const RunOutcome& out = outcomes.back();
    RunSummary s = out.report.summary;
    s.label = label;
    if (!out.not_computed.empty()) {
      // Shown from its dry run (exact bytes, estimated times), said so, never computed.
      std::cerr << "ckptlab-cli: " << label << ": " << out.not_computed << " Shown as a dry run.\n";
      s.label += " (dry)";
    }
    sums.push_back(std::move(s));
  }
  if (a.json)
    std::cout << summaries_json(sums) << "\n";
  else
    print_compare_table(sums);
  const bool failed = std::any_of(sums.begin(), sums.end(), [](const auto& s) { return !s.ok; });
  if (!a.plot_file.empty()) {
    const RunOutcome& last = outcomes.back();
    const Trace* ghost = outcomes.size() >= 2 ? &outcomes[outcomes.size() - 2].result->trace
                         : last.baseline      ? &last.baseline->trace
                                              : nullptr;
    if (!plot(argc, argv, a.plot_file, last.result->trace, ghost)) return kExitRun;
  }
  return failed ? kExitRun : kExitOk;
}

CommandDoc code_command_doc() {
  return {
      "code",
      "MODEL [options]",
      "the PyTorch code of a configuration (where checkpoint() goes)",
      "Prints the PyTorch code of the configuration: where the checkpoint(...) calls go, and with "
      "--optimizer and --amp the training step the run assumed.",
      {},
      TakesRunOptions::without_outputs,
      kExitCodesText,
  };
}

int cmd_code(const std::vector<std::string>& args) {
  if (has_help(args)) {
    std::cout << command_help(code_command_doc());
    return kExitOk;
  }
  std::vector<std::string> pos;
  const RunOptions o = parse_run_options(args, &pos, false);
  if (pos.size() != 1) throw UsageError("code takes exactly one MODEL");
  int code = kExitOk;
  auto model = load_or_exit(pos[0], &code);
  if (!model) return code;
  std::cout << pytorch_code(*model, make_request(*model, o));
  return kExitOk;
}

}  // namespace ckpt::cli
