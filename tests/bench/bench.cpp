// ckptlab_bench: forward + backward of the models users open, in the engine and in PyTorch
// (bench_torch.py, /usr/bin/python3) in the same run, with 1 and 2 threads. The two sides'
// steps alternate in blocks, so that both see the same machine load; the table gives median
// times, the ratio ours / PyTorch and, for the two hand-built networks, the GFLOP/s each
// reaches. A report, never a pass/fail on time. It also gives the ratio of process CPU time,
// which other processes competing for the cores disturb much less than wall-clock time.
//
// The models (issue 14's table):
//   mlp, resnet18         built from the engine's ops (nets.cpp) and by hand in PyTorch;
//   resnet50, densenet121 torchvision's, 224x224 batch 8, exported to ONNX at bench time
//                         (samples/export_onnx.py) and run through the Runner with the trace
//                         recorded, as users run them, against torchvision's model itself;
//   transformer_block, gpt_mini, heavy_model, heavy_model_sin
//                         the samples' JSON files through the Runner, against the same network
//                         written in PyTorch (bench_torch.py);
//   vgg11_bn              exported and loaded only (the load-time row of a 530 MB file).
// Each model the Runner runs also gets a load line (load_model's time against the file's size)
// and a memory line (the process's resident set against the trace's peak plus the weights).
//
//   ckptlab_bench [--iters N] [--warmup N] [--threads 1,2] [--models mlp,resnet18,...]
//                 [--no-torch] [--profile]   (adds the engine's time per op)
//   --iters and --warmup apply to every model; without them the big models (resnet50,
//   densenet121, heavy_model, heavy_model_sin) run 3 steps after 1 warm-up, the others 10
//   after 2.

#include <malloc.h>
#include <omp.h>

#include <time.h>
#include <QCoreApplication>
#include <QFileInfo>
#include <QProcess>
#include <QTemporaryDir>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "engine/model/loader.hpp"
#include "engine/report/run_summary.hpp"
#include "engine/run/runner.hpp"
#include "engine/tensor/storage_pool.hpp"
#include "nets.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// An idle OpenMP team does not sleep at once: libgomp's workers spin-wait for the next region
// (GOMP_SPINCOUNT, milliseconds on these cores) in both processes. The bench waits this long
// whenever it hands over from one side to the other, outside the timed region, so that neither
// side's spinning workers take a core from the other's first step.
constexpr auto kSettle = std::chrono::milliseconds(25);
void settle() {
  std::this_thread::sleep_for(kSettle);
}
// Steps a side runs back to back (not the big models); see the stepping loop.
constexpr int kBlock = 5;

// The PyTorch side, kept running so that its steps interleave with ours.
class Torch {
 public:
  Torch(const QString& python, const QString& script) {
    proc_.setProcessChannelMode(QProcess::ForwardedErrorChannel);
    proc_.start(python, {script, "serve"});
    if (!proc_.waitForStarted(30000))
      throw std::runtime_error("cannot start " + python.toStdString());
  }
  ~Torch() {
    proc_.write("quit\n");
    proc_.waitForFinished(30000);
  }
  Torch(const Torch&) = delete;
  Torch& operator=(const Torch&) = delete;
  std::string ask(const std::string& line) {
    proc_.write((line + "\n").c_str());
    while (!proc_.canReadLine())
      if (!proc_.waitForReadyRead(600000))
        throw std::runtime_error("bench_torch.py did not answer '" + line + "'");
    return proc_.readLine().trimmed().toStdString();
  }

 private:
  QProcess proc_;
};

// --profile: time per op, from the ledger's step events (forward ops by name, backward
// steps by node name), to see what limits a model.
class OpProfile : public ckpt::RunListener {
 public:
  explicit OpProfile(ckpt::ExecutionContext& context) : context_(context) {}
  void on_event(const ckpt::RunEvent& e) override {
    if (e.kind == ckpt::RunEvent::Kind::step_begin) {
      op_ = e.op;
      begin_ = e.time_ns;
    } else if (e.kind == ckpt::RunEvent::Kind::step_end) {
      auto& [ns, count] = by_op_[context_.label(op_)];
      ns += static_cast<double>(e.time_ns - begin_);
      ++count;
    }
  }
  // A Runner's model runs in its own context: its trace's steps give the same figures, with
  // the phase in the name (a recompute's conv2d is not the forward's).
  void add_trace(const ckpt::Trace& trace) {
    for (std::int64_t k = 0; k < trace.step_count(); ++k) {
      const ckpt::TraceStep step = trace.step(k);
      auto& [ns, count] = by_op_[std::string(ckpt::phase_name(step.phase)) + " " + step.op];
      ns += static_cast<double>(step.duration_ns);
      ++count;
    }
  }
  void print(int steps) const {
    std::vector<std::pair<double, std::string>> rows;
    double total = 0;
    for (const auto& [name, v] : by_op_) {
      rows.emplace_back(v.first, name);
      total += v.first;
    }
    std::sort(rows.rbegin(), rows.rend());
    for (const auto& [ns, name] : rows)
      std::printf("    %-32s %9.2f ms/step %5.1f%%  (%d calls/step)\n", name.c_str(),
                  ns / 1e6 / steps, 100 * ns / total, by_op_.at(name).second / steps);
  }

 private:
  ckpt::ExecutionContext& context_;
  ckpt::LabelId op_ = 0;
  std::int64_t begin_ = 0;
  std::map<std::string, std::pair<double, int>> by_op_;
};

std::string run_text(const QString& program, const QStringList& args) {
  QProcess p;
  p.start(program, args);
  p.waitForFinished(120000);
  return p.readAllStandardOutput().toStdString();
}

// What a model row is: a network built in C++ (nets.cpp), a file run through the Runner, or a
// file only loaded.
enum class Kind { net, runner, load_only };

struct ModelCase {
  std::string name;
  Kind kind;
  std::string file;  // a sample's file name, or "torchvision:NAME" (exported at bench time)
  bool big;          // default 3 steps after 1 warm-up instead of 10 after 2
  std::string what;  // the row's description
};

const std::vector<ModelCase>& all_cases() {
  static const std::vector<ModelCase> cases{
      {"mlp", Kind::net, "", false, "MLP 4 x Linear(1024), batch 64"},
      {"resnet18", Kind::net, "", false, "ResNet-18 shape, batch 8, 3x64x64"},
      {"transformer_block", Kind::runner, "transformer_block.json", false,
       "samples/transformer_block.json: pre-norm block, 4 x 16 x 64, 4 heads"},
      {"gpt_mini", Kind::runner, "gpt_mini.json", false,
       "samples/gpt_mini.json: 4 blocks, width 64, 64 tokens, batch 4"},
      {"heavy_model", Kind::runner, "heavy_model.json", true,
       "samples/heavy_model.json: 1000 calls of 100 x (x = x + a) on scalars"},
      {"heavy_model_sin", Kind::runner, "heavy_model_sin.json", true,
       "samples/heavy_model_sin.json: 1000 calls of 100 x (x = sin(x) + a)"},
      {"resnet50", Kind::runner, "torchvision:resnet50", true,
       "torchvision ResNet-50, 224x224 batch 8 (ONNX)"},
      {"densenet121", Kind::runner, "torchvision:densenet121", true,
       "torchvision DenseNet-121, 224x224 batch 8 (ONNX)"},
      {"vgg11_bn", Kind::load_only, "torchvision:vgg11_bn", true,
       "torchvision VGG-11 BN, 224x224 batch 8 (ONNX): load only"},
  };
  return cases;
}

const ModelCase* find_case(const std::string& name) {
  for (const auto& c : all_cases())
    if (c.name == name) return &c;
  return nullptr;
}

// A field of /proc/self/status in bytes (VmRSS, VmHWM); -1 when unreadable.
std::int64_t proc_status_bytes(const std::string& field) {
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1)) * 1024;
  return -1;
}

// Resets VmHWM to the current resident set (Linux >= 4.0), so that it measures what follows.
bool reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
  f.flush();
  return static_cast<bool>(f);
}

// A file's size in MB (10^6 bytes), three decimals below 1 MB.
std::string mb(std::int64_t bytes) {
  char buf[32];
  const double v = static_cast<double>(bytes) / 1e6;
  std::snprintf(buf, sizeof buf, v < 1 ? "%.3f MB" : "%.1f MB", v);
  return buf;
}

// Exports torchvision.models.NAME at 224x224 batch 8 to DIR/NAME.onnx with
// samples/export_onnx.py; the file's path, or empty (the reason printed) when it failed.
std::string export_torchvision(const QString& python, const QTemporaryDir& dir,
                               const std::string& name, double* seconds) {
  const auto t0 = Clock::now();
  QProcess py;
  py.start(python,
           {QString(CKPTLAB_BENCH_DIR) + "/../../samples/export_onnx.py", "--torchvision",
            QString::fromStdString(name), "--out", dir.path(), "--batch", "8", "--size", "224"});
  if (!py.waitForFinished(900000) || py.exitCode() != 0) {
    std::printf("%-17s not exported (%s), skipped\n", name.c_str(),
                py.readAllStandardError().right(300).trimmed().data());
    return {};
  }
  *seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return dir.filePath(QString::fromStdString(name) + ".onnx").toStdString();
}

// The engine's side of one model: a step, and what the lines after its rows need.
struct EngineSide {
  std::function<void()> step;
  double flops = 0;  // 0: not counted
  // Runner models:
  std::shared_ptr<const ckpt::Model> model;
  std::unique_ptr<ckpt::Runner> runner;
  ckpt::RunRequest config;
  ckpt::RunResult last;
  std::int64_t rss_before_load = 0;
  std::int64_t leftover_pool = 0, leftover_heap = 0;  // returned before loading
};

}  // namespace

int main(int argc, char** argv) {
  QCoreApplication app(argc, argv);
  int iters_arg = 0, warmup_arg = -1;  // unset: by model
  std::vector<int> threads{1, 2};
  std::vector<std::string> models;
  for (const auto& c : all_cases()) models.push_back(c.name);
  bool with_torch = true;
  bool profile = false;
  const QStringList args = app.arguments();
  auto usage = [] {
    std::string names;
    for (const auto& c : all_cases()) names += (names.empty() ? "" : ",") + c.name;
    std::fprintf(stderr,
                 "usage: ckptlab_bench [--iters N] [--warmup N] [--threads 1,2] "
                 "[--models %s] [--no-torch] [--profile]\n",
                 names.c_str());
    return 2;
  };
  for (int i = 1; i < args.size(); ++i) {
    const auto a = args[i].toStdString();
    auto next = [&] {
      if (i + 1 >= args.size()) throw std::invalid_argument(a + " needs a value");
      return args[++i].toStdString();
    };
    if (a == "--iters") {
      iters_arg = std::stoi(next());
    } else if (a == "--warmup") {
      warmup_arg = std::stoi(next());
    } else if (a == "--threads") {
      threads.clear();
      for (const auto& t : split(next())) threads.push_back(std::stoi(t));
    } else if (a == "--models") {
      models = split(next());
    } else if (a == "--no-torch") {
      with_torch = false;
    } else if (a == "--profile") {
      profile = true;
    } else {
      return usage();
    }
  }
  for (const auto& m : models)
    if (!find_case(m)) {
      std::fprintf(stderr, "ckptlab_bench: unknown model '%s'\n", m.c_str());
      return usage();
    }
  const QString python = qEnvironmentVariable("CKPTLAB_PYTHON", CKPTLAB_BENCH_PYTHON);
  const QString script = QString(CKPTLAB_BENCH_DIR) + "/bench_torch.py";
  const std::string samples = std::string(CKPTLAB_BENCH_DIR) + "/../../samples/";

  std::printf("Checkpoint Lab benchmark: forward + backward, median of the steps after warm-up\n");
  if (iters_arg > 0 || warmup_arg >= 0)
    std::printf("steps: %d after %d warm-up, every model\n", iters_arg > 0 ? iters_arg : 10,
                warmup_arg >= 0 ? warmup_arg : 2);
  else
    std::printf(
        "steps: 10 after 2 warm-up; the big models (resnet50, densenet121, heavy_model, "
        "heavy_model_sin) only 3 after 1, to keep the run to minutes: their medians are rough\n");
  std::printf("engine: Eigen GEMM, OpenMP (max %d threads)\n", omp_get_max_threads());
  // Other processes competing for the cores distort wall-clock times (and OpenMP's
  // spin-waiting makes multi-threaded runs collapse): say so next to the figures.
  if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
    double load = 0;
    if (std::fscanf(f, "%lf", &load) == 1)
      std::printf("machine load: %.2f on %d cores%s\n", load, omp_get_num_procs(),
                  load > 0.5 * omp_get_num_procs() ? "  (busy: figures are unreliable)" : "");
    std::fclose(f);
  }
  if (with_torch) {
    const std::string cfg = run_text(python, {script, "config"});
    std::printf("PyTorch (%s %s):\n", python.toStdString().c_str(), script.toStdString().c_str());
    std::stringstream ss(cfg);
    for (std::string line; std::getline(ss, line);)
      if (line.find("BLAS") != std::string::npos ||
          line.find("PyTorch built") != std::string::npos ||
          line.find("MKL") != std::string::npos || line.find("OpenMP") != std::string::npos ||
          line.find("CPU capability") != std::string::npos ||
          line.find("get_num_threads") != std::string::npos)
        std::printf("  %s\n", line.substr(0, 160).c_str());
  }
  std::printf(
      "\nThe Runner's models run as users run them (`ckptlab-cli run`): scenario configuration, "
      "no checkpointing, trace recorded; one step = Runner::run (inputs, forward, loss, "
      "backward). PyTorch: the same network's forward + loss + backward.\n");
  std::printf("\n%-17s %7s %10s %10s %7s %12s %12s\n", "model", "threads", "ours ms", "torch ms",
              "ratio", "ours GF/s", "torch GF/s");

  std::unique_ptr<Torch> torch;
  if (with_torch) torch = std::make_unique<Torch>(python, script);
  QTemporaryDir exports;
  for (const auto& name : models) {
    const ModelCase& mc = *find_case(name);
    const int iters = iters_arg > 0 ? iters_arg : mc.big ? 3 : 10;
    const int warmup = warmup_arg >= 0 ? warmup_arg : mc.big ? 1 : 2;
    auto ledger = std::make_shared<ckpt::MemoryLedger>();
    ckpt::ExecutionScope scope(ledger);
    EngineSide ours_side;
    std::string file_note;
    if (mc.kind == Kind::net) {
      ckpt::bench::Net net = name == "mlp" ? ckpt::bench::make_mlp() : ckpt::bench::make_resnet18();
      ours_side.step = [step = net.step] {
        ckpt::PhaseScope fwd(ckpt::Phase::forward);
        step();
      };
      ours_side.flops = net.flops;
      std::printf("%-17s %s (%.2f GFLOP per step)\n", name.c_str(), mc.what.c_str(),
                  net.flops / 1e9);
    } else {
      std::string path = samples + mc.file;
      double export_s = 0;
      if (mc.file.rfind("torchvision:", 0) == 0) {
        path = export_torchvision(python, exports, mc.file.substr(12), &export_s);
        if (path.empty()) continue;
      }
      // What the previous model left resident is not this model's: the storage pool's idle
      // blocks, and the heap glibc keeps after frees (its mmap threshold grows with the first
      // large free, so later blocks come from the heap, which free() does not shrink).
      const std::int64_t rss0 = proc_status_bytes("VmRSS");
      ckpt::storage_pool::trim();
      const std::int64_t rss1 = proc_status_bytes("VmRSS");
      malloc_trim(0);
      ours_side.rss_before_load = proc_status_bytes("VmRSS");
      ours_side.leftover_pool = std::max<std::int64_t>(0, rss0 - rss1);
      ours_side.leftover_heap = std::max<std::int64_t>(0, rss1 - ours_side.rss_before_load);
      const auto t0 = Clock::now();
      try {
        ours_side.model = ckpt::load_model(path);
      } catch (const std::exception& e) {
        std::printf("%-17s not loaded: %s\n", name.c_str(), e.what());
        continue;
      }
      const double load_s = std::chrono::duration<double>(Clock::now() - t0).count();
      std::printf("%-17s %s\n", name.c_str(), mc.what.c_str());
      std::printf(
          "%-17s load %.3f s for %s (%s, %zu ops%s)\n", name.c_str(), load_s,
          mb(QFileInfo(QString::fromStdString(path)).size()).c_str(),
          QFileInfo(QString::fromStdString(path)).fileName().toStdString().c_str(),
          ours_side.model->ops.size(),
          export_s > 0
              ? (", exported in " + std::to_string(static_cast<int>(export_s)) + " s").c_str()
              : "");
      std::fflush(stdout);
      if (mc.kind == Kind::load_only) continue;
      ours_side.runner = std::make_unique<ckpt::Runner>(ours_side.model);
      ours_side.config = ckpt::scenario_request(*ours_side.model);
      ours_side.step = [&s = ours_side] {
        s.last = ckpt::RunResult{};  // the previous result's tensors are not this run's
        s.last = s.runner->run(s.config);
        if (!s.last.ok) throw std::runtime_error("the run failed: " + s.last.error);
      };
    }
    const bool peak_reset = mc.kind == Kind::runner && reset_peak_rss();
    for (int t : threads) {
      omp_set_num_threads(t);
      ours_side.config.settings.threads = t;
      int torch_threads = 0;
      if (torch) {
        const auto ready = torch->ask("setup " + name + " " + std::to_string(t));
        torch_threads = std::stoi(ready.substr(ready.find(' ') + 1));
      }
      std::vector<double> ours, theirs, ours_cpu, theirs_cpu;
      OpProfile prof(scope.context());
      bool profiling = false;  // the op profile listens (after the warm-up)
      int profiled_steps = 0;
      // The storage pool over the profiled steps: a miss maps fresh pages, which the kernel
      // zero-fills on first touch, inside whichever op touches them first.
      ckpt::StoragePoolStats pool_before;
      const auto torch_step = [&](bool timed) {
        std::stringstream reply(torch->ask("step"));
        double tt = 0, tc = 0;
        reply >> tt >> tc;
        if (timed) theirs.push_back(tt), theirs_cpu.push_back(tc);
      };
      const auto our_step = [&](bool timed) {
        const auto t0 = Clock::now();
        const double c0 = cpu_ms();
        ours_side.step();
        const double c1 = cpu_ms();
        if (profiling) {
          ++profiled_steps;
          if (mc.kind == Kind::runner) prof.add_trace(ours_side.last.trace);
        }
        if (timed)
          ours.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count()),
              ours_cpu.push_back(c1 - c0);
      };
      // Each side runs a block of steps back to back, as a training loop does, and the first
      // step of a block is not timed: one process's step leaves the caches, and for a while the
      // scheduler's placement of its threads, to itself, and the other's next step paid for it
      // (MLP at 2 threads: 20-25 ms interleaved step by step, 13-15 ms back to back). The big
      // models' steps are long enough for that to vanish and too long to repeat: one at a time.
      const int block = mc.big ? 1 : kBlock;
      try {
        for (int i = 0; i < warmup; ++i) {
          if (torch) torch_step(false);
          our_step(false);
        }
        if (profile && mc.kind != Kind::load_only) {
          if (mc.kind == Kind::net) scope.context().add_listener(&prof);
          profiling = true;
          pool_before = ckpt::storage_pool::stats();
        }
        while (static_cast<int>(ours.size()) < iters) {
          const int n = std::min<int>(block, iters - static_cast<int>(ours.size()));
          if (torch) {
            settle();
            if (block > 1) torch_step(false);
            for (int j = 0; j < n; ++j) torch_step(true);
            settle();
          }
          if (block > 1) our_step(false);
          for (int j = 0; j < n; ++j) our_step(true);
        }
      } catch (const std::exception& e) {
        std::printf("%-17s %7d  %s\n", name.c_str(), t, e.what());
        break;
      }
      const double mo = median(ours), mt = median(theirs);
      const double gf = ours_side.flops / 1e9;
      char ogf[32] = "-", tgf[32] = "-";
      if (gf > 0) {
        std::snprintf(ogf, sizeof ogf, "%.1f", gf / (mo / 1e3));
        std::snprintf(tgf, sizeof tgf, "%.1f", gf / (mt / 1e3));
      }
      const double co = median(ours_cpu), ct = median(theirs_cpu);
      if (torch)
        std::printf("%-17s %4d/%-2d %10.2f %10.2f %7.3f %12s %12s   cpu %.2f / %.2f = %.3f\n",
                    name.c_str(), t, torch_threads, mo, mt, mo / mt, ogf, tgf, co, ct, co / ct);
      else
        std::printf("%-17s %7d %10.2f %10s %7s %12s %12s\n", name.c_str(), t, mo, "-", "-", ogf,
                    "-");
      if (profiling) {
        if (mc.kind == Kind::net) scope.context().remove_listener(&prof);
        prof.print(profiled_steps);
        const auto pool_after = ckpt::storage_pool::stats();
        const double n = std::max(profiled_steps, 1);
        std::printf(
            "    storage pool per step: %.0f hits, %.0f misses, %.1f MiB returned to the "
            "system\n",
            static_cast<double>(pool_after.hits - pool_before.hits) / n,
            static_cast<double>(pool_after.misses - pool_before.misses) / n,
            static_cast<double>(pool_after.released_bytes - pool_before.released_bytes) / n /
                (1 << 20));
      }
      // Per-op cost where the ops are scalars (HeavyModel): the step over its op executions.
      if (mc.kind == Kind::runner && ours_side.last.ok && name.rfind("heavy", 0) == 0) {
        const auto n = ours_side.last.trace.counts();
        const double ops = static_cast<double>(n.forward + n.recompute + n.backward);
        std::printf(
            "%-17s %7s per op execution (%.0f, from the trace): ours %.2f us, PyTorch "
            "%.2f us\n",
            "", "", ops, mo * 1e3 / ops, torch ? mt * 1e3 / ops : 0.0);
      }
      std::fflush(stdout);
    }
    if (mc.kind == Kind::runner && ours_side.last.ok) {
      // Resident memory against what the trace accounts for: the ledger's peak (parameters,
      // inputs, activations, gradients...) plus the model's own copy of its weights.
      std::int64_t weights = 0;
      for (const auto& p : ours_side.model->parameters) weights += p.initial.nbytes();
      const std::int64_t peak = ours_side.last.trace.peak().bytes;
      const std::int64_t hwm = proc_status_bytes("VmHWM"), rss = proc_status_bytes("VmRSS");
      const std::int64_t before = ours_side.rss_before_load;
      const auto pool = ckpt::storage_pool::stats();
      using ckpt::format_bytes;
      std::printf(
          "%-17s memory: resident peak %s%s, %s after the run (the storage pool holds %s "
          "idle), %s before loading (the previous models' leftovers given back first: %s idle "
          "pool blocks, %s freed heap by malloc_trim)\n",
          name.c_str(), format_bytes(hwm).c_str(),
          peak_reset ? " (VmHWM since loading)" : " (VmHWM of the whole process)",
          format_bytes(rss).c_str(), format_bytes(pool.cached_bytes).c_str(),
          format_bytes(before).c_str(), format_bytes(ours_side.leftover_pool).c_str(),
          format_bytes(ours_side.leftover_heap).c_str());
      const double accounted = static_cast<double>(peak + weights);
      std::printf(
          "%-17s         traced peak %s + weights %s = %s; resident peak grew by %s "
          "since loading began",
          "", format_bytes(peak).c_str(), format_bytes(weights).c_str(),
          format_bytes(peak + weights).c_str(), format_bytes(hwm - before).c_str());
      // Below a MiB the ratios say only how small the traced figures are.
      if (peak + weights >= (1 << 20))
        std::printf("; resident peak / (traced + weights) = %.2f, its growth / that = %.2f\n",
                    static_cast<double>(hwm) / accounted,
                    static_cast<double>(hwm - before) / accounted);
      else
        std::printf(" (the model, its trace and its result, outside the ledger)\n");
      std::fflush(stdout);
    }
  }
  std::printf(
      "\n(threads: ours/PyTorch's; GF/s counts 2 FLOPs per multiply-add of every conv and "
      "linear, forward, weight and input gradients, for the hand-built networks only; a file's "
      "MB are 10^6 bytes, memory's MiB and GiB 2^20 and 2^30)\n");
  return 0;
}
