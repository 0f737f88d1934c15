#pragma once

// What ckptlab-cli's commands share: exit codes, loading a model
// or saying why not, --device, a spinner for long runs, and the --plot picture.

#include <chrono>
#include <cstdio>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cli_options.hpp"
#include "engine/model/loader.hpp"
#include "engine/model/model.hpp"
#include "engine/report/memory_series.hpp"
#include "engine/request/execute.hpp"
#include "engine/run/run_request.hpp"
#include "engine/trace/trace.hpp"

namespace ckpt::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitModel = 3;
inline constexpr int kExitRun = 4;

bool stderr_is_tty();
bool has_help(const std::vector<std::string>& args);
// --frozen PATTERN (repeatable, any command that opens a MODEL): taken out of `args` by main
// before the command parses its own, and applied by every load below.
void take_load_options(std::vector<std::string>& args);
// Those options' rows, as the help and the reference show them.
OptionGroup load_option_group();
const LoadOptions& load_options();
// The model at `path` (a file, or a bundled sample's name) with the load options; null with
// *code set after saying why. An ONNX model's load summary (which initializers are trained,
// the loader's warnings) goes to stderr.
std::shared_ptr<Model> load_or_exit(const std::string& path, int* code);
// --device: false after saying why the device asked for cannot run here. A cuda dry run runs
// anywhere (the meta device with CUDA's memory semantics); a real cuda run needs a GPU and the
// CUDA engine.
bool check_device(DeviceChoice d, bool dry_run);
// --plot: the memory plot of `trace` (and `ghost`, if any) as PNG or SVG, offscreen.
bool plot(int argc, char** argv, const std::string& path, const Trace& trace, const Trace* ghost);
// The same with the series the engine made (one FSDP2 rank's when the run is sharded: the
// report's series, engine/report/run_report.hpp), the steps named from `trace`.
bool plot(int argc, char** argv, const std::string& path, MemorySeriesPtr series,
          MemorySeriesPtr ghost, const Trace& trace);
// A loss of NaN or Inf is a wrong answer, never a figure to print quietly.
void warn_non_finite_loss(const RunResult& r);

// What a long job is doing now, as its spinner says it; set from the job's thread.
class ProgressLabel {
 public:
  explicit ProgressLabel(std::string text = {}) : text_(std::move(text)) {}
  void set(std::string text) {
    std::lock_guard<std::mutex> lock(mutex_);
    text_ = std::move(text);
  }
  std::string get() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return text_;
  }

 private:
  mutable std::mutex mutex_;
  std::string text_;
};

// Runs `job` on a worker thread; on a terminal, shows a spinner with the elapsed time for
// runs longer than a second (the engine knows no total in advance, so no fake percentage).
template <typename Job>
auto with_progress(const ProgressLabel& what, Job job) {
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
    std::fprintf(stderr, "\r\033[K%c %s  %.1f s", frames[frame++ % 4], what.get().c_str(), s);
    std::fflush(stderr);
    shown = true;
  }
  if (shown) std::fprintf(stderr, "\r\033[K");
  return fut.get();
}

template <typename Job>
auto with_progress(const std::string& what, Job job) {
  return with_progress(ProgressLabel(what), std::move(job));
}

// The request's pipeline (engine/request/execute.hpp), its spinner naming the stage it is at.
RunOutcome execute_with_progress(const RunTarget& target, const RunRequest& request,
                                 RequestOptions options);

}  // namespace ckpt::cli
