// ckptlab_bench: forward + backward of an MLP and a ResNet-18-shaped network, in the engine and
// in PyTorch (bench_torch.py, /usr/bin/python3) in the same run, with 1 and 2 threads. The
// two sides' steps are interleaved, so that both see the same machine load; the table gives
// median times, the ratio ours / PyTorch and the GFLOP/s each reaches. A report, never a
// pass/fail on time. With one thread it also gives the ratio of process CPU time, which other
// processes competing for the cores disturb much less than wall-clock time.
//
//   ckptlab_bench [--iters N] [--warmup N] [--threads 1,2] [--models mlp,resnet18] [--no-torch]
//                 [--profile]   (adds the engine's time per op)

#include <omp.h>

#include <time.h>
#include <QCoreApplication>
#include <QProcess>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

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

}  // namespace

int main(int argc, char** argv) {
  QCoreApplication app(argc, argv);
  int iters = 10, warmup = 2;
  std::vector<int> threads{1, 2};
  std::vector<std::string> models{"mlp", "resnet18"};
  bool with_torch = true;
  bool profile = false;
  const QStringList args = app.arguments();
  for (int i = 1; i < args.size(); ++i) {
    const auto a = args[i].toStdString();
    auto next = [&] {
      if (i + 1 >= args.size()) throw std::invalid_argument(a + " needs a value");
      return args[++i].toStdString();
    };
    if (a == "--iters") {
      iters = std::stoi(next());
    } else if (a == "--warmup") {
      warmup = std::stoi(next());
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
      std::fprintf(stderr,
                   "usage: ckptlab_bench [--iters N] [--warmup N] [--threads 1,2] "
                   "[--models mlp,resnet18] [--no-torch] [--profile]\n");
      return 2;
    }
  }
  const QString python = qEnvironmentVariable("CKPTLAB_PYTHON", CKPTLAB_BENCH_PYTHON);
  const QString script = QString(CKPTLAB_BENCH_DIR) + "/bench_torch.py";

  std::printf("Checkpoint Lab benchmark: forward + backward, median of %d steps after %d warm-up\n",
              iters, warmup);
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
  std::printf("\n%-9s %7s %10s %10s %7s %12s %12s\n", "model", "threads", "ours ms", "torch ms",
              "ratio", "ours GF/s", "torch GF/s");

  std::unique_ptr<Torch> torch;
  if (with_torch) torch = std::make_unique<Torch>(python, script);
  for (const auto& model : models) {
    auto ledger = std::make_shared<ckpt::MemoryLedger>();
    ckpt::ExecutionScope scope(ledger);
    ckpt::bench::Net net = model == "mlp" ? ckpt::bench::make_mlp() : ckpt::bench::make_resnet18();
    std::printf("%-9s (%.2f GFLOP per step)\n", model.c_str(), net.flops / 1e9);
    for (int t : threads) {
      omp_set_num_threads(t);
      int torch_threads = 0;
      if (torch) {
        const auto ready = torch->ask("setup " + model + " " + std::to_string(t));
        torch_threads = std::stoi(ready.substr(ready.find(' ') + 1));
      }
      std::vector<double> ours, theirs, ours_cpu, theirs_cpu;
      OpProfile prof(scope.context());
      for (int i = 0; i < warmup + iters; ++i) {
        if (profile && i == warmup) scope.context().add_listener(&prof);
        double tt = 0, tc = 0;
        if (torch) {
          std::stringstream reply(torch->ask("step"));
          reply >> tt >> tc;
        }
        const auto t0 = Clock::now();
        const double c0 = cpu_ms();
        {
          ckpt::PhaseScope fwd(ckpt::Phase::forward);
          net.step();
        }
        const double c1 = cpu_ms();
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        if (i >= warmup) {
          ours.push_back(ms);
          theirs.push_back(tt);
          ours_cpu.push_back(c1 - c0);
          theirs_cpu.push_back(tc);
        }
      }
      const double mo = median(ours), mt = median(theirs);
      const double gf = net.flops / 1e9;
      const double co = median(ours_cpu), ct = median(theirs_cpu);
      if (torch && t == 1)
        std::printf("%-9s %4d/%-2d %10.2f %10.2f %7.3f %12.1f %12.1f   cpu %.2f / %.2f = %.3f\n",
                    model.c_str(), t, torch_threads, mo, mt, mo / mt, gf / (mo / 1e3),
                    gf / (mt / 1e3), co, ct, co / ct);
      else if (torch)
        std::printf("%-9s %4d/%-2d %10.2f %10.2f %7.3f %12.1f %12.1f\n", model.c_str(), t,
                    torch_threads, mo, mt, mo / mt, gf / (mo / 1e3), gf / (mt / 1e3));
      else
        std::printf("%-9s %7d %10.2f %10s %7s %12.1f %12s\n", model.c_str(), t, mo, "-", "-",
                    gf / (mo / 1e3), "-");
      if (profile) {
        scope.context().remove_listener(&prof);
        prof.print(iters);
      }
      std::fflush(stdout);
    }
  }
  std::printf(
      "\n(threads: ours/PyTorch's; GF/s counts 2 FLOPs per multiply-add of every conv and "
      "linear, forward, weight and input gradients)\n");
  return 0;
}
