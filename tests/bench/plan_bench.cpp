// Planning benchmarks (issues 12 and 28), printed, never asserted. Each row plans as
// `ckptlab-cli plan MODEL --budget 50%` does (the optimal plan, then the whole frontier: every
// strategy and the budget sweep) and prints the candidates, the dry runs that verified points,
// the time, the process's peak memory (RSS high-water mark) against one dry run's, and the
// optimal plan's peak at 50 % and 70 % of the unplanned peak. Goals (issue 28): the frontier in
// under 1 s once the model is loaded, at most 1.5 x the memory of one dry run; the 1,000-block
// chain's optimal plan in under 1 s.
//
//   ckptlab_plan_bench [--models a,b,...] [--onnx-dir DIR] [--model-error]
// (each row runs in a child process of its own, `--row NAME`, so that its RSS is its own)
// models: chain1000, heavy_model_sin, gpt2_small, resnet18, resnet50, densenet121, vit_b_16
// (torchvision models at batch 8, 224x224, exported at bench time by samples/export_onnx.py,
// or taken from DIR/<name>.onnx when it exists there).
#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QProcess>
#include <QTemporaryDir>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

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
bool model_error = false;  // --model-error

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
  dry.settings.use_reentrant = false;
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
  RunSettings settings = scenario_request(*model).settings;
  settings.use_reentrant = false;  // as issue 28's user ran them: --variant non-reentrant
  PlanEvaluator ev(model, settings);
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
  if (model_error) {
    // How far the peak model was from the dry runs that verified what it proposed.
    const PeakModel& pm = planner.peak_model();
    double worst = 0, total = 0;
    for (const auto& p : planner.evaluated()) {
      const double e = static_cast<double>(pm.predict(p.chosen) - p.eval.peak_bytes) /
                       static_cast<double>(p.eval.peak_bytes);
      worst = std::abs(e) > std::abs(worst) ? e : worst;
      total += std::abs(e);
    }
    std::printf("    peak model against %zu dry runs: mean |error| %.1f %%, worst %+.1f %%\n",
                planner.evaluated().size(),
                100 * total / std::max<double>(1, static_cast<double>(planner.evaluated().size())),
                100 * worst);
  }
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

// One row in this process (`--row NAME`): the RSS high-water mark is then the row's own.
int run_row(const std::string& name, const QString& onnx_dir) {
  const std::string samples = std::string(CKPTLAB_BENCH_DIR) + "/../../samples/";
  // The 1,000-block chains: their optimal plan alone (the frontier is not the goal there).
  if (name == "chain1000")
    row(
        "chain1000 (optimal only)",
        [] { return load_model_json_text(chain_json(1000), "chain1000.json"); },
        CandidateOptions{0, true}, false);
  else if (name == "heavy_model_sin")
    row(
        "heavy_model_sin (optimal)", [&] { return load_model(samples + "heavy_model_sin.json"); },
        CandidateOptions{0, true}, false);
  else if (name == "gpt2_small")
    row(
        "GPT-2 small b32x1024", [&] { return load_model(samples + "gpt2_small.json"); },
        CandidateOptions{}, true);
  else
    row(
        name + " 224 b8", [&] { return load_model(exported(onnx_dir, name.c_str())); },
        CandidateOptions{}, true);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  QCoreApplication app(argc, argv);
  std::vector<std::string> models = {"chain1000", "heavy_model_sin", "gpt2_small", "resnet18",
                                     "resnet50",  "densenet121",     "vit_b_16"};
  QString onnx_dir;
  std::string single;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--model-error") {
      model_error = true;
      continue;
    }
    if (i + 1 >= argc) break;
    ++i;
    if (a == "--models") {
      models.clear();
      std::stringstream s(argv[i]);
      for (std::string m; std::getline(s, m, ',');) models.push_back(m);
    } else if (a == "--onnx-dir") {
      onnx_dir = argv[i];
    } else if (a == "--row") {
      single = argv[i];
    }
  }
  if (!single.empty()) return run_row(single, onnx_dir);
  QTemporaryDir tmp;
  if (onnx_dir.isEmpty()) onnx_dir = tmp.path();
  std::printf(
      "Checkpoint Lab planning benchmark (wall clock, this machine; every point verified by a dry\n"
      "run; 'plan ms': the optimal plan at 50%% and the whole frontier, as `ckptlab-cli plan\n"
      "--budget 50%%`, evaluator set-up included; 'x dry': the planning's RSS high-water mark\n"
      "over one dry run's, the model loaded in both; each row in a process of its own)\n\n");
  header();
  std::fflush(stdout);
  for (const std::string& m : models) {
    if (m != "chain1000" && m != "heavy_model_sin" && m != "gpt2_small") {
      try {
        exported(onnx_dir, m.c_str());  // here, so that the row's process only loads it
      } catch (const std::exception& e) {
        std::printf("%-26s %s\n", m.c_str(), e.what());
        continue;
      }
    }
    QStringList args{"--row", QString::fromStdString(m), "--onnx-dir", onnx_dir};
    if (model_error) args << "--model-error";
    QProcess child;
    child.setProcessChannelMode(QProcess::ForwardedChannels);
    child.start(QCoreApplication::applicationFilePath(), args);
    if (!child.waitForFinished(3600000) || child.exitCode() != 0)
      std::printf("%-26s failed (exit %d)\n", m.c_str(), child.exitCode());
    std::fflush(stdout);
  }
  return 0;
}
