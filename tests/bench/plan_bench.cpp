// Planning benchmarks (issue 12), printed, never asserted: the optimal plan of a 1,000-block
// chain with unequal layers, and the whole frontier of torchvision's DenseNet-121. Every plan is
// judged by a dry run of the engine (issue 11); the baseline's per-node times come from real
// runs.
#include <QDir>
#include <QProcess>
#include <QTemporaryDir>

#include <chrono>
#include <cstdio>
#include <string>

#include "engine/model/loader.hpp"
#include "engine/plan/planner.hpp"

using namespace ckpt;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
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

void chain() {
  const int n = 1000;
  auto model = load_model_json_text(chain_json(n), "chain1000.json");
  auto t = Clock::now();
  PlanEvaluator ev(model, scenario_request(*model).settings);
  const double baseline_ms = ms_since(t) / 3;
  Planner planner(ev, CandidateOptions{0, false, 0});
  const auto& set = planner.candidates();
  const std::int64_t plain = ev.baseline().peak_bytes;
  const std::int64_t budget = plain * 6 / 10;
  t = Clock::now();
  const auto cover = min_cost_cover(set, set.blocks, plain - budget);
  const double dp_ms = ms_since(t);
  const auto runs0 = ev.runs();
  t = Clock::now();
  const PlanPoint p = planner.plan(Strategy::optimal, budget);
  const double total_ms = ms_since(t);
  std::printf("1,000-block chain (unequal widths 16..48, batch 256, %zu ops):\n",
              model->ops.size());
  std::printf("  knapsack DP over %zu blocks:                %8.2f ms  (target < 50 ms)\n",
              set.blocks.size(), dp_ms);
  std::printf("  optimal at 60%% of the peak, runs included: %8.0f ms, %lld runs of %.1f ms\n",
              total_ms, static_cast<long long>(ev.runs() - runs0), baseline_ms);
  std::printf("  plan: %zu segments, peak %lld of %lld bytes (%s), recompute %.2f ms\n\n",
              p.chosen.size(), static_cast<long long>(p.eval.peak_bytes),
              static_cast<long long>(plain), p.fits ? "fits" : "over", p.eval.recompute_ms());
  (void)cover;
}

void densenet() {
  QTemporaryDir dir;
  QProcess py;
  py.start(CKPTLAB_BENCH_PYTHON,
           {QString(CKPTLAB_BENCH_DIR) + "/../../samples/export_onnx.py", "--torchvision",
            "densenet121", "--out", dir.path(), "--batch", "2", "--size", "32", "--classes", "10"});
  if (!py.waitForFinished(600000) || py.exitCode() != 0) {
    std::printf("DenseNet-121: not exported (%s), skipped\n",
                py.readAllStandardError().left(200).constData());
    return;
  }
  auto model = load_model(dir.filePath("densenet121.onnx").toStdString());
  auto t = Clock::now();
  PlanEvaluator ev(model, scenario_request(*model).settings);
  const double run_ms = ms_since(t) / 3;
  Planner planner(ev, CandidateOptions{1, true, 24});
  t = Clock::now();
  const auto points = planner.sweep(ev.baseline().peak_bytes * 8 / 10);
  const double sweep_ms = ms_since(t);
  const auto front = pareto_frontier(points);
  std::printf("torchvision DenseNet-121 (batch 2, 32x32, %zu ops, %zu candidates):\n",
              model->ops.size(), planner.candidates().items.size());
  std::printf(
      "  frontier: %zu points (%zu on the frontier) in %.0f ms, %lld dry runs; baseline "
      "%.0f ms\n",
      points.size(), front.size(), sweep_ms, static_cast<long long>(ev.runs()), run_ms);
  std::printf("  (target < 2 s for the whole frontier, dry runs included)\n");
  for (const auto& p : front)
    std::printf("    %-10s %-24s peak %10lld  recompute %8.2f ms\n", strategy_name(p.strategy),
                p.detail.c_str(), static_cast<long long>(p.eval.peak_bytes), p.eval.recompute_ms());
}

}  // namespace

int main() {
  std::printf(
      "Checkpoint Lab planning benchmark (wall clock, this machine; plans judged by dry runs)\n\n");
  chain();
  densenet();
  return 0;
}
