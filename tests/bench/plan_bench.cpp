// Planning benchmarks (issues 12 and 28), printed, never asserted. Each row plans as
// `ckptlab-cli plan MODEL --budget 50%` does (the optimal plan, then the whole frontier: every
// strategy and the budget sweep) and prints the candidates, the dry runs that verified points,
// the time, the process's peak memory (RSS high-water mark) against one dry run's, and the
// optimal plan's peak at 50 % and 70 % of the unplanned peak. Goals (issue 28): the frontier in
// under 1 s once the model is loaded, at most 1.5 x the memory of one dry run; the 1,000-block
// chain's optimal plan in under 1 s.
//
//   ckptlab_plan_bench [--models a,b,...] [--onnx-dir DIR]
// models: chain1000, heavy_model_sin, gpt2_small, resnet18, resnet50, densenet121, vit_b_16
// (torchvision models at batch 8, 224x224, exported at bench time by samples/export_onnx.py,
// or taken from DIR/<name>.onnx when it exists there).
#include <QDir>
#include <QFileInfo>
#include <QProcess>
#include <QTemporaryDir>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>

#include "engine/model/loader.hpp"
#include "engine/plan/planner.hpp"
#include "engine/report/run_summary.hpp"
#include "engine/request/execute.hpp"

using namespace ckpt;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// The process's resident high-water mark (VmHWM), and its reset (Linux: clear_refs 5), so that
// each phase of a row is measured on its own.
std::int64_t rss_peak() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  return 0;
}
void reset_rss_peak() {
  std::ofstream("/proc/self/clear_refs") << "5";
}

std::string chain_json(int blocks) {
  const int widths[] = {24, 40, 16, 48, 32};
  std::string layers;
  for (int i = 0; i < blocks; ++i) {
    const int in = widths[i % 5], out = widths[(i + 1) % 5];
    layers += std::string(i ? "," : "") + R"({"type": "sequential", "name": "b)" +
              std::to_string(i) + R"(", "layers": [{"type": "linear", "name": "fc", "in": )" +
              std::to_string(in) + R"(, "out": )" + std::to_string(out) +
              R"(}, {"type": "tanh", "name": "act"}]})";
  }
  return R"({"format": "checkpoint-lab-model", "version": 1, "name": "chain1000", "batch": 256,
    "inputs": [{"name": "x", "shape": ["batch", 24], "requires_grad": true}],
    "model": {"type": "sequential", "layers": [)" +
         layers + "]}}";
}

std::string mib(std::int64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f MiB", static_cast<double>(b) / (1 << 20));
  return buf;
}

// The optimal plan's peak at `percent` of the unplanned peak, as "peak (share)", or why not.
std::string optimal_at(Planner& planner, int percent) {
  const std::int64_t plain = planner.evaluator().baseline().peak_bytes;
  const PlanPoint p = planner.plan(Strategy::optimal, plain * percent / 100);
  if (!p.fits) return "no fit";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%s (%.0f%%)", format_bytes(p.eval.peak_bytes).c_str(),
                100.0 * static_cast<double>(p.eval.peak_bytes) / static_cast<double>(plain));
  return buf;
}

void header() {
  std::printf("%-26s %6s %5s %9s %9s %8s %9s %9s %6s %21s %21s\n", "model", "ops", "cand",
              "load ms", "dry ms", "dry runs", "plan ms", "RSS plan", "x dry", "optimal at 50%",
              "optimal at 70%");
}

// One row: load, one dry run (time, RSS), then the planning a user asks for.
void row(const std::string& label, const std::function<std::shared_ptr<Model>()>& load,
         const CandidateOptions& options, bool frontier) {
  auto t = Clock::now();
  std::shared_ptr<Model> model;
  try {
    model = load();
  } catch (const std::exception& e) {
    std::printf("%-26s not loaded: %s\n", label.c_str(), e.what());
    return;
  }
  const double load_ms = ms_since(t);
  reset_rss_peak();
  RunRequest dry = scenario_request(*model);
  dry.settings.dry_run = true;
  dry.settings.threads = 1;
  RunTarget target(model);
  RequestOptions bare;
  bare.report = ReportDetail::none;
  (void)execute(target, dry, bare);  // compiles the model, pays for first allocations
  dry.settings.seed += 1;            // not the kept baseline: a run of its own
  t = Clock::now();
  (void)execute(target, dry, bare);
  const double dry_ms = ms_since(t);
  const std::int64_t dry_rss = rss_peak();
  reset_rss_peak();
  t = Clock::now();
  PlanEvaluator ev(model, scenario_request(*model).settings);
  Planner planner(ev, options);
  const std::int64_t plain = ev.baseline().peak_bytes;
  std::string at50, at70;
  if (frontier) {
    // What `plan --budget 50%` computes: the plan, then the frontier (strategies and sweep).
    at50 = optimal_at(planner, 50);
    const auto points = planner.sweep(plain / 2);
    (void)pareto_frontier(points);
  } else {
    at50 = optimal_at(planner, 50);
  }
  const double plan_ms = ms_since(t);
  const std::int64_t plan_rss = rss_peak();
  const auto runs = ev.runs();
  at70 = optimal_at(planner, 70);
  std::printf(
      "%-26s %6zu %5zu %9.0f %9.1f %8lld %9.0f %9s %6.2f %21s %21s\n", label.c_str(),
      model->ops.size(), planner.candidates().items.size(), load_ms, dry_ms,
      static_cast<long long>(runs), plan_ms, mib(plan_rss).c_str(),
      static_cast<double>(plan_rss) / static_cast<double>(std::max<std::int64_t>(1, dry_rss)),
      at50.c_str(), at70.c_str());
  std::fflush(stdout);
}

std::string exported(const QString& dir, const char* name) {
  const QString path = QDir(dir).filePath(QString(name) + ".onnx");
  if (QFileInfo::exists(path)) return path.toStdString();
  QProcess py;
  py.start(CKPTLAB_BENCH_PYTHON,
           {QString(CKPTLAB_BENCH_DIR) + "/../../samples/export_onnx.py", "--torchvision", name,
            "--out", dir, "--batch", "8", "--size", "224"});
  if (!py.waitForFinished(900000) || py.exitCode() != 0)
    throw std::runtime_error("not exported (" + py.readAllStandardError().left(200).toStdString() +
                             ")");
  return path.toStdString();
}

}  // namespace

int main(int argc, char** argv) {
  std::set<std::string> only;
  QString onnx_dir;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--models") {
      std::stringstream s(argv[i + 1]);
      for (std::string m; std::getline(s, m, ',');) only.insert(m);
    } else if (a == "--onnx-dir") {
      onnx_dir = argv[i + 1];
    }
  }
  auto wanted = [&](const std::string& m) { return only.empty() || only.count(m); };
  QTemporaryDir tmp;
  if (onnx_dir.isEmpty()) onnx_dir = tmp.path();
  const std::string samples = std::string(CKPTLAB_BENCH_DIR) + "/../../samples/";
  std::printf(
      "Checkpoint Lab planning benchmark (wall clock, this machine; every point verified by a dry\n"
      "run; 'plan ms': the optimal plan at 50%% and the whole frontier, as `ckptlab-cli plan\n"
      "--budget 50%%`, evaluator set-up included; 'x dry': the planning's RSS high-water mark "
      "over\n"
      "one dry run's, the model loaded in both)\n\n");
  header();
  // The 1,000-block chain: its optimal plan alone (the frontier is not the goal there).
  if (wanted("chain1000"))
    row(
        "chain1000 (optimal only)",
        [] { return load_model_json_text(chain_json(1000), "chain1000.json"); },
        CandidateOptions{0, false, 0}, false);
  if (wanted("heavy_model_sin"))
    row(
        "heavy_model_sin (optimal)", [&] { return load_model(samples + "heavy_model_sin.json"); },
        CandidateOptions{0, false, 0}, false);
  if (wanted("gpt2_small"))
    row(
        "GPT-2 small b32x1024", [&] { return load_model(samples + "gpt2_small.json"); },
        CandidateOptions{}, true);
  for (const char* name : {"resnet18", "resnet50", "densenet121", "vit_b_16"})
    if (wanted(name))
      row(
          std::string(name) + " 224 b8", [&] { return load_model(exported(onnx_dir, name)); },
          CandidateOptions{}, true);
  return 0;
}
