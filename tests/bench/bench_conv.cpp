// ckptlab_bench_conv: the convolutions of ckptlab_bench's ResNet-18 (batch 8, 3 x 64 x 64), of
// torchvision's ResNet-50 at 224 x 224 (--net resnet50) or of torchvision's R3D-18 on
// 16 x 112 x 112 clips (--net r3d18, 3-D), one layer shape at a time, in the
// engine and in PyTorch (bench_conv_torch.py): the forward, the input gradient and the weight
// gradient each on their own, as median process CPU time (--wall: wall-clock time, which shows
// what a second thread buys), so that a change to one convolution path can be measured where it
// acts. A report, never a pass/fail on time.
//
//   ckptlab_bench_conv [--net resnet18|resnet50|r3d18] [--iters N] [--threads N] [--batch N]
//   [--wall]
//                      [--no-torch] [--only NAME] [--algo auto|im2col|winograd]

#include <omp.h>

#include <time.h>
#include <QCoreApplication>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>

#include <algorithm>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/ops/ops.hpp"
#include "engine/tensor/generator.hpp"

namespace {

using namespace ckpt;

struct Layer {
  const char* name;
  std::int64_t c, o, hw, k, stride, pad;
  int per_step;     // how many times one step of the network runs this shape
  bool input_grad;  // false for the stem, whose input is the data
  // 3-D layers: the input's depth and the kernel's depth, stride and padding (0: a 2-D layer).
  std::int64_t t = 0, kt = 0, st = 0, pt = 0;
  int spatial() const { return t > 0 ? 3 : 2; }
  std::int64_t out_t() const { return t > 0 ? (t + 2 * pt - kt) / st + 1 : 1; }
};

// The conv layers of tests/bench/nets.cpp's ResNet-18 at 64 x 64.
const std::vector<Layer> kLayers = {
    {"stem 7x7/2", 3, 64, 64, 7, 2, 3, 1, false},
    {"l1 3x3 64", 64, 64, 16, 3, 1, 1, 4, true},
    {"l2.0 3x3/2", 64, 128, 16, 3, 2, 1, 1, true},
    {"l2.down 1x1/2", 64, 128, 16, 1, 2, 0, 1, true},
    {"l2 3x3 128", 128, 128, 8, 3, 1, 1, 3, true},
    {"l3.0 3x3/2", 128, 256, 8, 3, 2, 1, 1, true},
    {"l3.down 1x1/2", 128, 256, 8, 1, 2, 0, 1, true},
    {"l3 3x3 256", 256, 256, 4, 3, 1, 1, 3, true},
    {"l4.0 3x3/2", 256, 512, 4, 3, 2, 1, 1, true},
    {"l4.down 1x1/2", 256, 512, 4, 1, 2, 0, 1, true},
    {"l4 3x3 512", 512, 512, 2, 3, 1, 1, 3, true},
};

// torchvision's ResNet-50 (stride in the 3x3, "v1.5") at 224 x 224: 53 convolutions a step.
const std::vector<Layer> kResNet50Layers = {
    {"stem 7x7/2", 3, 64, 224, 7, 2, 3, 1, false},
    {"l1.0 1x1 64", 64, 64, 56, 1, 1, 0, 1, true},
    {"l1 1x1 256>64", 256, 64, 56, 1, 1, 0, 2, true},
    {"l1 3x3 64", 64, 64, 56, 3, 1, 1, 3, true},
    {"l1 1x1 64>256", 64, 256, 56, 1, 1, 0, 4, true},
    {"l2.0 1x1 256>128", 256, 128, 56, 1, 1, 0, 1, true},
    {"l2.0 3x3/2", 128, 128, 56, 3, 2, 1, 1, true},
    {"l2.down 1x1/2", 256, 512, 56, 1, 2, 0, 1, true},
    {"l2 1x1 128>512", 128, 512, 28, 1, 1, 0, 4, true},
    {"l2 1x1 512>128", 512, 128, 28, 1, 1, 0, 3, true},
    {"l2 3x3 128", 128, 128, 28, 3, 1, 1, 3, true},
    {"l3.0 1x1 512>256", 512, 256, 28, 1, 1, 0, 1, true},
    {"l3.0 3x3/2", 256, 256, 28, 3, 2, 1, 1, true},
    {"l3.down 1x1/2", 512, 1024, 28, 1, 2, 0, 1, true},
    {"l3 1x1 256>1024", 256, 1024, 14, 1, 1, 0, 6, true},
    {"l3 1x1 1024>256", 1024, 256, 14, 1, 1, 0, 5, true},
    {"l3 3x3 256", 256, 256, 14, 3, 1, 1, 5, true},
    {"l4.0 1x1 1024>512", 1024, 512, 14, 1, 1, 0, 1, true},
    {"l4.0 3x3/2", 512, 512, 14, 3, 2, 1, 1, true},
    {"l4.down 1x1/2", 1024, 2048, 14, 1, 2, 0, 1, true},
    {"l4 1x1 512>2048", 512, 2048, 7, 1, 1, 0, 3, true},
    {"l4 1x1 2048>512", 2048, 512, 7, 1, 1, 0, 2, true},
    {"l4 3x3 512", 512, 512, 7, 3, 1, 1, 2, true},
};

// torchvision's R3D-18 (Conv3DSimple, Conv3DNoTemporal's 1x1x1 downsamples) on 16 x 112 x 112:
// 20 convolutions a step.
const std::vector<Layer> kR3D18Layers = {
    {"stem 3x7x7/1,2,2", 3, 64, 112, 7, 2, 3, 1, false, 16, 3, 1, 1},
    {"l1 3x3x3 64", 64, 64, 56, 3, 1, 1, 4, true, 16, 3, 1, 1},
    {"l2.0 3x3x3/2", 64, 128, 56, 3, 2, 1, 1, true, 16, 3, 2, 1},
    {"l2.down 1x1x1/2", 64, 128, 56, 1, 2, 0, 1, true, 16, 1, 2, 0},
    {"l2 3x3x3 128", 128, 128, 28, 3, 1, 1, 3, true, 8, 3, 1, 1},
    {"l3.0 3x3x3/2", 128, 256, 28, 3, 2, 1, 1, true, 8, 3, 2, 1},
    {"l3.down 1x1x1/2", 128, 256, 28, 1, 2, 0, 1, true, 8, 1, 2, 0},
    {"l3 3x3x3 256", 256, 256, 14, 3, 1, 1, 3, true, 4, 3, 1, 1},
    {"l4.0 3x3x3/2", 256, 512, 14, 3, 2, 1, 1, true, 4, 3, 2, 1},
    {"l4.down 1x1x1/2", 256, 512, 14, 1, 2, 0, 1, true, 4, 1, 2, 0},
    {"l4 3x3x3 512", 512, 512, 7, 3, 1, 1, 3, true, 2, 3, 1, 1},
};

clockid_t g_clock = CLOCK_PROCESS_CPUTIME_ID;  // --wall: CLOCK_MONOTONIC

double cpu_ms() {
  timespec t{};
  clock_gettime(g_clock, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

Tensor randn(const Shape& s, Generator& g) {
  std::vector<float> v(static_cast<std::size_t>(shape_numel(s)));
  for (auto& x : v) x = static_cast<float>(g.normal());
  return Tensor::from_vector(v, s);
}

struct Times {
  double fwd = 0, dx = 0, dw = 0;
};

// Each gradient timed on a graph that needs only it (as PyTorch's autograd.grad(y, x) computes
// only dx).
Times time_engine(const Layer& l, std::int64_t batch, int iters) {
  Generator gen(0);
  const bool vol = l.spatial() == 3;
  const Tensor x =
      randn(vol ? Shape{batch, l.c, l.t, l.hw, l.hw} : Shape{batch, l.c, l.hw, l.hw}, gen);
  const Tensor w = randn(vol ? Shape{l.o, l.c, l.kt, l.k, l.k} : Shape{l.o, l.c, l.k, l.k}, gen);
  Tensor xg = x.detach(), wg = w.detach();
  xg.set_requires_grad(true);
  wg.set_requires_grad(true);
  const ConvInts s = vol ? ConvInts{l.st, l.stride, l.stride} : ConvInts{l.stride, l.stride};
  const ConvInts p = vol ? ConvInts{l.pt, l.pad, l.pad} : ConvInts{l.pad, l.pad};
  std::vector<double> f, dx, dw;
  for (int i = 0; i < iters + 2; ++i) {
    const double t0 = cpu_ms();
    Tensor y = conv(xg, wg, Tensor(), s, p);
    const double t1 = cpu_ms();
    const Tensor gy = Tensor::ones(y.shape());
    y = Tensor();
    double t2 = 0, t3 = 0;
    if (l.input_grad) {
      Tensor yx = conv(xg, w, Tensor(), s, p);
      t2 = cpu_ms();
      grad({yx}, {xg}, {gy});
      t3 = cpu_ms();
    }
    Tensor yw = conv(x, wg, Tensor(), s, p);
    const double t4 = cpu_ms();
    grad({yw}, {wg}, {gy});
    const double t5 = cpu_ms();
    if (i < 2) continue;
    f.push_back(t1 - t0);
    dx.push_back(t3 - t2);
    dw.push_back(t5 - t4);
  }
  return {median(f), median(dx), median(dw)};
}

}  // namespace

int main(int argc, char** argv) {
  QCoreApplication app(argc, argv);
  int iters = 15, threads = 1;
  std::int64_t batch = 8;
  bool with_torch = true;
  std::string only, net = "resnet18";
  ConvAlgorithm algo = ConvAlgorithm::automatic;
  const QStringList args = app.arguments();
  for (int i = 1; i < args.size(); ++i) {
    const auto a = args[i].toStdString();
    auto next = [&] {
      if (i + 1 >= args.size()) throw std::invalid_argument(a + " needs a value");
      return args[++i].toStdString();
    };
    if (a == "--iters") {
      iters = std::stoi(next());
    } else if (a == "--threads") {
      threads = std::stoi(next());
    } else if (a == "--batch") {
      batch = std::stoll(next());
    } else if (a == "--net") {
      net = next();
    } else if (a == "--wall") {
      g_clock = CLOCK_MONOTONIC;
    } else if (a == "--no-torch") {
      with_torch = false;
    } else if (a == "--only") {
      only = next();
    } else if (a == "--algo") {
      const std::string v = next();
      algo = v == "im2col"     ? ConvAlgorithm::im2col
             : v == "winograd" ? ConvAlgorithm::winograd
                               : ConvAlgorithm::automatic;
    } else {
      std::fprintf(stderr,
                   "usage: ckptlab_bench_conv [--net resnet18|resnet50|r3d18] [--iters N] "
                   "[--threads N] [--batch N] [--wall] [--no-torch] [--only NAME] [--algo "
                   "auto|im2col|winograd]\n");
      return 2;
    }
  }
  if (net != "resnet18" && net != "resnet50" && net != "r3d18") {
    std::fprintf(stderr, "--net: resnet18, resnet50 or r3d18, not %s\n", net.c_str());
    return 2;
  }
  const bool resnet50 = net == "resnet50", r3d18 = net == "r3d18";
  omp_set_num_threads(threads);
  ConvAlgorithmScope algorithm(algo);
  std::vector<Layer> layers;
  for (const auto& l : r3d18 ? kR3D18Layers : resnet50 ? kResNet50Layers : kLayers)
    if (only.empty() || std::string(l.name).find(only) != std::string::npos) layers.push_back(l);

  std::map<std::string, Times> torch;
  if (with_torch) {
    QJsonArray spec;
    for (const auto& l : layers)
      spec.append(QJsonArray{l.name, qint64(l.c), qint64(l.o), qint64(l.hw), qint64(l.k),
                             qint64(l.stride), qint64(l.pad), l.input_grad, qint64(l.t),
                             qint64(l.kt), qint64(l.st), qint64(l.pt)});
    QProcess p;
    p.setProcessChannelMode(QProcess::ForwardedErrorChannel);
    const QString python = qEnvironmentVariable("CKPTLAB_PYTHON", CKPTLAB_BENCH_PYTHON);
    p.start(python, {QString(CKPTLAB_BENCH_DIR) + "/bench_conv_torch.py", QString::number(threads),
                     QString::number(batch), QString::number(iters),
                     g_clock == CLOCK_MONOTONIC ? "wall" : "cpu",
                     QString::fromUtf8(QJsonDocument(spec).toJson(QJsonDocument::Compact))});
    if (!p.waitForFinished(1200000) || p.exitCode() != 0) {
      std::fprintf(stderr, "bench_conv_torch.py failed\n");
      return 1;
    }
    const QJsonObject r = QJsonDocument::fromJson(p.readAllStandardOutput()).object();
    for (auto it = r.begin(); it != r.end(); ++it) {
      const QJsonArray v = it.value().toArray();
      torch[it.key().toStdString()] = {v[0].toDouble(), v[1].toDouble(), v[2].toDouble()};
    }
  }

  std::printf("conv layers of %s (batch %lld, %s), %d thread(s), median %s ms of %d\n\n",
              r3d18      ? "R3D-18"
              : resnet50 ? "ResNet-50"
                         : "ResNet-18",
              static_cast<long long>(batch),
              r3d18      ? "16 x 112 x 112"
              : resnet50 ? "224 x 224"
                         : "64 x 64",
              threads, g_clock == CLOCK_MONOTONIC ? "wall-clock" : "process CPU", iters);
  std::printf("%-17s %4s %11s %11s %11s %11s %8s %8s\n", "layer", "x", "fwd ours/pt", "dx ours/pt",
              "dw ours/pt", "sum ours/pt", "ratio", "GF/s");
  Times total_ours, total_torch;
  for (const auto& l : layers) {
    const Times o = time_engine(l, batch, iters);
    const Times t = torch.count(l.name) ? torch[l.name] : Times{};
    const std::int64_t out = (l.hw + 2 * l.pad - l.k) / l.stride + 1;
    const double macs = static_cast<double>(batch * l.out_t() * out * out * l.o * l.c * l.k * l.k *
                                            std::max<std::int64_t>(l.kt, 1));
    const double sum_o = o.fwd + o.dx + o.dw, sum_t = t.fwd + t.dx + t.dw;
    const double gf = 2 * macs * (l.input_grad ? 3 : 2) / 1e9 / (sum_o / 1e3);
    std::printf("%-17s %4d %5.2f/%-5.2f %5.2f/%-5.2f %5.2f/%-5.2f %5.2f/%-5.2f %8.3f %8.1f\n",
                l.name, l.per_step, o.fwd, t.fwd, o.dx, t.dx, o.dw, t.dw, sum_o, sum_t,
                sum_t > 0 ? sum_o / sum_t : 0.0, gf);
    for (auto [acc, v] : {std::pair{&total_ours, o}, std::pair{&total_torch, t}}) {
      acc->fwd += v.fwd * l.per_step;
      acc->dx += v.dx * l.per_step;
      acc->dw += v.dw * l.per_step;
    }
  }
  const double so = total_ours.fwd + total_ours.dx + total_ours.dw;
  const double st = total_torch.fwd + total_torch.dx + total_torch.dw;
  std::printf("%-17s %4s %5.1f/%-5.1f %5.1f/%-5.1f %5.1f/%-5.1f %5.1f/%-5.1f %8.3f\n", "per step",
              "", total_ours.fwd, total_torch.fwd, total_ours.dx, total_torch.dx, total_ours.dw,
              total_torch.dw, so, st, st > 0 ? so / st : 0.0);
  return 0;
}
