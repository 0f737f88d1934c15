// Dry runs (issue 11), printed, never asserted: a dry run (the meta device: exact bytes, no
// arithmetic) against the real run of the same configuration, on torchvision's DenseNet-121
// and ResNet-50 at 224x224 batch 8 (exported at bench time), HeavyModel and GPT-2 small (whose
// real run does not fit this machine: dry only). Goals: a dry run at most 2 % of the real one;
// DenseNet-121 under 50 ms; HeavyModel under 100 ms.
#include <QProcess>
#include <QTemporaryDir>

#include <chrono>
#include <cstdio>
#include <string>

#include "engine/model/loader.hpp"
#include "engine/report/run_summary.hpp"
#include "engine/request/memory_guard.hpp"
#include "engine/run/runner.hpp"

using namespace ckpt;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// The least of `reps` runs (the first pays for cold caches).
RunResult best_of(const Runner& runner, const RunRequest& c, int reps, double* ms) {
  RunResult r;
  *ms = 1e300;
  for (int i = 0; i < reps; ++i) {
    const auto t = Clock::now();
    r = runner.run(c);
    *ms = std::min(*ms, ms_since(t));
  }
  return r;
}

void compare(const std::string& label, const std::string& path, bool real) {
  auto t = Clock::now();
  std::shared_ptr<const Model> model;
  try {
    model = load_model(path);
  } catch (const std::exception& e) {
    std::printf("%-28s not loaded: %s\n", label.c_str(), e.what());
    return;
  }
  const double load_ms = ms_since(t);
  const Runner runner(model);
  RunRequest c = scenario_request(*model);
  c.settings.dry_run = true;
  double dry_ms = 0;
  const RunResult dry = best_of(runner, c, 3, &dry_ms);
  std::printf("%-28s load %8.0f ms | dry %8.1f ms, peak %s", label.c_str(), load_ms, dry_ms,
              format_bytes(dry.trace.peak().bytes).c_str());
  if (!real) {
    std::printf(" | real: not run (would need about %s)\n",
                format_bytes(predicted_process_bytes(*model, dry.trace.peak().bytes)).c_str());
    return;
  }
  c.settings.dry_run = false;
  double real_ms = 0;
  const RunResult r = best_of(runner, c, 2, &real_ms);
  std::printf(" | real %8.0f ms, peak %s%s | dry/real %.2f %%\n", real_ms,
              format_bytes(r.trace.peak().bytes).c_str(),
              r.trace.peak().bytes == dry.trace.peak().bytes ? " (equal)" : " (DIFFERENT)",
              100.0 * dry_ms / real_ms);
}

bool export_model(const QTemporaryDir& dir, const char* name) {
  QProcess py;
  py.start(CKPTLAB_BENCH_PYTHON,
           {QString(CKPTLAB_BENCH_DIR) + "/../../samples/export_onnx.py", "--torchvision", name,
            "--out", dir.path(), "--batch", "8", "--size", "224"});
  if (py.waitForFinished(900000) && py.exitCode() == 0) return true;
  std::printf("%s: not exported (%s), skipped\n", name, py.readAllStandardError().left(300).data());
  return false;
}

}  // namespace

int main() {
  std::printf("Checkpoint Lab dry-run benchmark (wall clock, this machine; no checkpointing)\n\n");
  const std::string samples = std::string(CKPTLAB_BENCH_DIR) + "/../../samples/";
  compare("HeavyModel (x + a)", samples + "heavy_model.json", true);
  compare("HeavyModel (sin(x) + a)", samples + "heavy_model_sin.json", true);
  compare("GPT-2 small, batch 32", samples + "gpt2_small.json", false);
  QTemporaryDir dir;
  for (const char* name : {"densenet121", "resnet50"})
    if (export_model(dir, name))
      compare(std::string(name) + " 224x224 b8",
              dir.filePath(QString(name) + ".onnx").toStdString(), true);
  return 0;
}
