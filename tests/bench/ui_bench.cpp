// ckptlab_ui_bench: the desktop app's performance figures (issue 7), printed, never asserted.
//   click -> updated plot (median, DenseNet block sample), HeavyModel open time, torchvision's
//   DenseNet-121 (exported to ONNX at bench time) open + run + layout time, layout time of a
//   hand-built DenseNet-121-shaped module hierarchy, frame times while stepping, the UI thread's
//   longest block (a 5 ms heartbeat timer).
// Run: ctest -C Bench -L bench -R ui_bench -V   (or build/tests/bench/ckptlab_ui_bench)
//   The Plan dock on torchvision's ViT-B/16 and ResNet-50 at batch 8: Plan -> frontier shown.
// CKPTLAB_BENCH_ONLY=layout,densenet,heavy,capture8b,plan,click runs only those parts (to profile
// one). capture8b: the Llama 8B capture (issue 37) opened in the window.

#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <algorithm>
#include <cstdio>
#include <vector>

#include "engine/model/loader.hpp"
#include "engine/report/run_summary.hpp"
#include "engine/run/runner.hpp"
#include "ui/app/main_window.hpp"
#include "ui/app/sample_catalog.hpp"
#include "ui/core/model_graph.hpp"
#include "ui/graph/graph_view.hpp"
#include "ui/layout/dot_format.hpp"
#include "ui/layout/layout_engine.hpp"
#include "ui/panels/plan_view.hpp"
#include "ui/player/player.hpp"
#include "ui/plot/memory_plot.hpp"

using namespace ckpt;
using namespace ckpt::ui;

namespace {

// The longest gap between two ticks of a 5 ms timer: how long the UI thread was blocked.
class Heartbeat : public QObject {
 public:
  Heartbeat() {
    timer_.setInterval(5);
    timer_.setTimerType(Qt::PreciseTimer);
    connect(&timer_, &QTimer::timeout, this, [this] {
      const qint64 now = clock_.nsecsElapsed();
      if (last_ > 0) worst_ = std::max(worst_, now - last_);
      if (last_ > 0 && now - last_ > 50'000'000 && qEnvironmentVariableIsSet("CKPTLAB_BENCH_GAPS"))
        std::printf("    [UI thread blocked %.0f ms, ending %.0f ms after start]\n",
                    static_cast<double>(now - last_) / 1e6, static_cast<double>(now) / 1e6);
      last_ = now;
    });
  }
  void start() {
    worst_ = 0;
    last_ = 0;
    clock_.start();
    timer_.start();
  }
  double stopMs() {
    timer_.stop();
    return static_cast<double>(worst_) / 1e6;
  }

 private:
  QTimer timer_;
  QElapsedTimer clock_;
  qint64 last_ = 0;
  qint64 worst_ = 0;
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

bool waitFor(const std::function<bool()>& done, int ms = 600000) {
  QElapsedTimer t;
  t.start();
  while (!done()) {
    if (t.elapsed() > ms) return false;
    // Sleeps until an event comes (the heartbeat or the 1 ms timer below wakes it): a spinning
    // loop would take one of the machine's cores away from the runs being measured.
    QTimer::singleShot(1, [] {});
    QCoreApplication::processEvents(QEventLoop::AllEvents | QEventLoop::WaitForMoreEvents);
  }
  return true;
}

bool wanted(const char* part) {
  const QString only = qEnvironmentVariable("CKPTLAB_BENCH_ONLY");
  return only.isEmpty() || only.split(QLatin1Char(',')).contains(QLatin1String(part));
}

bool ready(MainWindow& w) {
  return w.isReady() && !w.session()->runs()->busy() && !w.session()->layingOut();
}

// HeavyModel as the blog wrote it: 1,000 calls of a 100-op function adding one shared `a`.
const char* kHeavy = R"({
  "name": "heavy_model_bench", "seed": 1,
  "inputs": [{"name": "x", "shape": [], "requires_grad": true}],
  "model": {"type": "sequential", "parameters": {"a": {"shape": [], "init": 1.0}},
    "layers": [{"type": "repeat", "count": 1000, "body":
      {"type": "function", "name": "heavy_function", "layers": [
        {"type": "repeat", "count": 100, "body": {"type": "add", "param": "a"}}]}}]}
})";

// torchvision's DenseNet-121 module hierarchy and dataflow (names as its ONNX export scopes
// them): 4 dense blocks of 6/12/24/16 layers, each layer concat + norm1 relu1 conv1 norm2
// relu2 conv2, transitions norm relu conv pool; about 430 ops.
std::shared_ptr<Model> densenet121Shape() {
  auto m = std::make_shared<Model>();
  m->name = "densenet121";
  m->inputs.push_back({"input", {1, 3, 224, 224}, DType::f32, false, true});
  auto module = [&](Module& parent, const std::string& name, const std::string& kind) {
    auto child = std::make_unique<Module>();
    child->name = name;
    child->path = parent.path.empty() ? name : parent.path + "." + name;
    child->kind = kind;
    child->definition = child->path;
    child->checkpointable = true;
    child->first_op = static_cast<std::int64_t>(m->ops.size());
    parent.children.push_back(std::move(child));
    return parent.children.back().get();
  };
  auto op = [&](Module& mod, const std::string& name, const std::string& type,
                std::vector<std::string> inputs) {
    OpNode o;
    o.name = mod.path + "." + name;
    o.op_type = type;
    o.inputs = std::move(inputs);
    o.outputs = {o.name};
    o.module = mod.path;
    m->ops.push_back(o);
    mod.end_op = static_cast<std::int64_t>(m->ops.size());
    return o.name;
  };
  Module* features = module(m->root, "features", "Sequential");
  std::string x = "input";
  for (const char* n : {"conv0", "norm0", "relu0", "pool0"}) {
    Module* leaf = module(*features, n,
                          n[0] == 'c'   ? "Conv2d"
                          : n[0] == 'n' ? "BatchNorm2d"
                          : n[0] == 'r' ? "ReLU"
                                        : "MaxPool2d");
    x = op(*leaf, "op",
           n[0] == 'c'   ? "conv"
           : n[0] == 'n' ? "batch_norm"
           : n[0] == 'r' ? "relu"
                         : "max_pool2d",
           {x});
    features->end_op = static_cast<std::int64_t>(m->ops.size());
  }
  const int layers[] = {6, 12, 24, 16};
  for (int b = 0; b < 4; ++b) {
    Module* block = module(*features, "denseblock" + std::to_string(b + 1), "_DenseBlock");
    std::vector<std::string> feats{x};
    for (int l = 0; l < layers[b]; ++l) {
      Module* layer = module(*block, "denselayer" + std::to_string(l + 1), "_DenseLayer");
      std::string h = op(*layer, "cat", "concat", feats);
      for (const char* n : {"norm1", "relu1", "conv1", "norm2", "relu2", "conv2"}) {
        Module* leaf = module(*layer, n,
                              n[0] == 'c'   ? "Conv2d"
                              : n[0] == 'n' ? "BatchNorm2d"
                                            : "ReLU");
        h = op(*leaf, "op", n[0] == 'c' ? "conv" : n[0] == 'n' ? "batch_norm" : "relu", {h});
        layer->end_op = static_cast<std::int64_t>(m->ops.size());
      }
      feats.push_back(h);
      block->end_op = static_cast<std::int64_t>(m->ops.size());
    }
    x = op(*block, "cat_out", "concat", feats);
    if (b < 3) {
      Module* t = module(*features, "transition" + std::to_string(b + 1), "_Transition");
      for (const char* n : {"norm", "relu", "conv", "pool"}) {
        Module* leaf = module(*t, n,
                              n[0] == 'c'   ? "Conv2d"
                              : n[0] == 'n' ? "BatchNorm2d"
                              : n[0] == 'r' ? "ReLU"
                                            : "AvgPool2d");
        x = op(*leaf, "op",
               n[0] == 'c'   ? "conv"
               : n[0] == 'n' ? "batch_norm"
               : n[0] == 'r' ? "relu"
                             : "avg_pool2d",
               {x});
        t->end_op = static_cast<std::int64_t>(m->ops.size());
      }
    }
    features->end_op = static_cast<std::int64_t>(m->ops.size());
  }
  Module* norm5 = module(*features, "norm5", "BatchNorm2d");
  x = op(*norm5, "op", "batch_norm", {x});
  features->end_op = static_cast<std::int64_t>(m->ops.size());
  x = op(m->root, "relu", "relu", {x});
  x = op(m->root, "pool", "adaptive_avg_pool2d", {x});
  x = op(m->root, "flatten", "flatten", {x});
  Module* cls = module(m->root, "classifier", "Linear");
  x = op(*cls, "op", "linear", {x});
  m->outputs = {x};
  m->root.end_op = static_cast<std::int64_t>(m->ops.size());
  return m;
}

double layoutMs(const ModelGraph& graph, LayoutEngine& engine) {
  QSignalSpy done(&engine, &LayoutEngine::finished);
  QSignalSpy failed(&engine, &LayoutEngine::failed);
  QElapsedTimer t;
  t.start();
  engine.request(graph.layoutGraph());
  if (!waitFor([&] { return !done.isEmpty() || !failed.isEmpty(); })) return -1;
  if (!failed.isEmpty()) {
    std::printf("  layout failed: %s\n", qPrintable(failed.first().at(1).toString()));
    return -1;
  }
  return static_cast<double>(t.nsecsElapsed()) / 1e6;
}

struct OpenTimes {
  bool ok = false;
  double openMs = 0, loadedMs = 0, laidOutMs = 0, runShownMs = 0, blockedMs = 0;
  double previewShownMs = -1;  // the dry run's curve, shown before the real run (-1: none)
};

// Opens `path` in `w` and times it: loaded (modelChanged), laid out (graphChanged), the dry
// run's curve shown (runPreviewed), first run shown (runFinished), everything done; the
// heartbeat measures the UI thread meanwhile.
OpenTimes timeOpen(MainWindow& w, const QString& path, Heartbeat& heartbeat) {
  OpenTimes o;
  heartbeat.start();
  QElapsedTimer t;
  t.start();
  auto stamp = [&t](double& at) { at = static_cast<double>(t.nsecsElapsed()) / 1e6; };
  const auto c1 =
      QObject::connect(w.session(), &Session::modelChanged, &w, [&] { stamp(o.loadedMs); });
  const auto c2 =
      QObject::connect(w.session(), &Session::runFinished, &w, [&] { stamp(o.runShownMs); });
  const auto c3 =
      QObject::connect(w.session(), &Session::graphChanged, &w, [&] { stamp(o.laidOutMs); });
  const auto c4 = QObject::connect(w.session(), &Session::runPreviewed, &w, [&] {
    if (o.previewShownMs < 0) stamp(o.previewShownMs);
  });
  w.openPath(path);
  o.ok = waitFor([&] { return ready(w); });
  o.openMs = static_cast<double>(t.nsecsElapsed()) / 1e6;
  o.blockedMs = heartbeat.stopMs();
  for (const auto& c : {c1, c2, c3, c4}) QObject::disconnect(c);
  return o;
}

// torchvision's DenseNet-121 exported as a user would for this app (training mode, opset 13,
// no constant folding: see samples/export_onnx.py), 1 x 3 x 224 x 224. Empty when torchvision
// (python3-torchvision) or /usr/bin/python3 is missing.
QString exportDenseNet121(const QString& dir, QString& why) {
  const QString out = QDir(dir).filePath(QStringLiteral("densenet121.onnx"));
  const char* script = R"(
import sys, torch, torchvision
torch.manual_seed(0)
m = torchvision.models.densenet121()
torch.onnx.export(m, (torch.randn(1, 3, 224, 224),), sys.argv[1], opset_version=13,
                  input_names=["input"], output_names=["output"],
                  training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
)";
  QProcess py;
  py.start(QStringLiteral("/usr/bin/python3"),
           {QStringLiteral("-c"), QString::fromUtf8(script), out});
  if (!py.waitForFinished(600000) || py.exitStatus() != QProcess::NormalExit ||
      py.exitCode() != 0) {
    why = QString::fromUtf8(py.readAllStandardError()).trimmed().section(QLatin1Char('\n'), -1);
    if (why.isEmpty()) why = py.errorString();
    return {};
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QTemporaryDir home;
  qputenv("XDG_CONFIG_HOME", home.filePath(QStringLiteral("config")).toUtf8());
  qputenv("XDG_CACHE_HOME", home.filePath(QStringLiteral("cache")).toUtf8());  // cold layouts
  QCoreApplication::setOrganizationName(QStringLiteral("ckptlab-bench"));
  Heartbeat heartbeat;
  std::printf("Checkpoint Lab UI benchmark (offscreen; times are wall clock, this machine)\n\n");

  // 1. Layout of a hand-built DenseNet-121-shaped module hierarchy (no cache: a fresh engine
  // each time): dot alone, without loading or running anything.
  if (wanted("layout")) {
    auto dn = densenet121Shape();
    ModelGraph full(dn, [&] {
      std::set<std::string> all;
      forEachModule(dn->root, [&](const Module& mm, int) { all.insert(mm.path); });
      return all;
    }());
    ModelGraph initial(dn, ModelGraph::initialExpansion(*dn));
    // CKPTLAB_DUMP_DOT=DIR keeps the DOT text, to time dot's options by hand.
    if (const QString dump = qEnvironmentVariable("CKPTLAB_DUMP_DOT"); !dump.isEmpty()) {
      for (auto [name, g] : {std::pair{"densenet121_full.dot", &full},
                             std::pair{"densenet121_initial.dot", &initial}}) {
        QFile out(QDir(dump).filePath(QLatin1String(name)));
        if (out.open(QIODevice::WriteOnly)) out.write(toDot(g->layoutGraph()).c_str());
      }
    }
    LayoutEngine engine;
    std::printf(
        "DenseNet-121-sized graph: %zu ops, %zu visible nodes and %zu edges fully "
        "expanded (%zu clusters)\n",
        dn->ops.size(), full.layoutGraph().nodes.size(), full.layoutGraph().edges.size(),
        full.layoutGraph().clusters.size());
    std::printf("  layout, every module a nested cluster:   %8.0f ms\n", layoutMs(full, engine));
    std::printf("  layout, the app's initial expansion:     %8.0f ms (%zu nodes)\n",
                layoutMs(initial, engine), initial.layoutGraph().nodes.size());
    QElapsedTimer t;
    t.start();
    layoutMs(full, engine);
    std::printf("  same layout again (cache hit):           %8.2f ms\n\n",
                static_cast<double>(t.nsecsElapsed()) / 1e6);
  }

  // 2. torchvision's DenseNet-121, exported now: open (load + layout + first run) in the window.
  if (wanted("densenet")) {
    QTemporaryDir dir;
    QString why;
    QElapsedTimer ex;
    ex.start();
    const QString onnx = exportDenseNet121(dir.path(), why);
    if (onnx.isEmpty()) {
      std::printf("torchvision DenseNet-121: not exported (%s), skipped\n\n", qPrintable(why));
    } else {
      std::printf("torchvision DenseNet-121 exported to ONNX by /usr/bin/python3 in %.0f ms\n",
                  static_cast<double>(ex.nsecsElapsed()) / 1e6);
      MainWindow w;
      w.resize(1440, 900);
      w.show();
      const OpenTimes o = timeOpen(w, onnx, heartbeat);
      if (o.ok) {
        auto snap = w.session()->current();
        std::printf(
            "  %zu ops, %zu graph nodes at first; loaded at %.0f ms, laid out at %.0f ms, "
            "dry run's curve shown at %.0f ms, first run (1 x 3 x 224 x 224, %.0f ms in the "
            "engine) shown at %.0f ms; all done at %.0f ms; UI thread blocked at most %.1f ms\n\n",
            w.session()->model()->ops.size(), w.session()->graph()->nodes().size(), o.loadedMs,
            o.laidOutMs, o.previewShownMs, snap->summary.times.total_ms, o.runShownMs, o.openMs,
            o.blockedMs);
      } else {
        std::printf("  did not open (%s)\n\n", qPrintable(w.graphView()->overlayText()));
      }
    }
  }

  // 3. HeavyModel: open (load + first run + layout) in the window.
  if (wanted("heavy")) {
    QTemporaryDir dir;
    const QString heavy = dir.filePath(QStringLiteral("heavy_model_bench.json"));
    QFile f(heavy);
    if (f.open(QIODevice::WriteOnly)) f.write(kHeavy);
    f.close();
    MainWindow w;
    w.resize(1440, 900);
    w.show();
    const OpenTimes o = timeOpen(w, heavy, heartbeat);
    const double openMs = o.openMs, blocked = o.blockedMs, loadedMs = o.loadedMs,
                 laidOutMs = o.laidOutMs, runMs = o.runShownMs;
    if (o.ok) {
      auto snap = w.session()->current();
      std::printf(
          "HeavyModel (1,000 x 100 ops): opened, run and laid out in %.0f ms "
          "(run %.0f ms in the engine, %.0f ms in the Runner + %.0f ms deriving the series, "
          "summary, lessons and timeline; %lld steps, %zu graph nodes); UI thread blocked at "
          "most %.1f ms\n",
          openMs, snap->summary.times.total_ms, snap->runnerMs, snap->derivedMs,
          static_cast<long long>(snap->trace().step_count()), w.session()->graph()->nodes().size(),
          blocked);
      // Frame times while stepping through the backward.
      std::vector<double> frames;
      Player* p = w.player();
      p->setCursor(snap->trace().step_count() / 2);
      for (int i = 0; i < 300; ++i) {
        QElapsedTimer ft;
        ft.start();
        p->stepForward();
        w.graphView()->viewport()->repaint();
        w.memoryPlot()->repaint();
        frames.push_back(static_cast<double>(ft.nsecsElapsed()) / 1e6);
      }
      std::printf(
          "  loaded at %.0f ms, laid out at %.0f ms, dry run's curve shown at %.0f ms, first run "
          "shown at %.0f ms\n",
          loadedMs, laidOutMs, o.previewShownMs, runMs);
      std::printf("  stepping: frame median %.2f ms, p95 %.2f ms, max %.2f ms\n", median(frames),
                  percentile(frames, 0.95), *std::max_element(frames.begin(), frames.end()));
      heartbeat.start();
      p->setSpeed(10);
      p->play();
      QTest::qWait(2000);
      p->pause();
      std::printf("  playing 2 s at 10x: UI thread blocked at most %.1f ms\n\n",
                  heartbeat.stopMs());
    } else {
      std::printf("HeavyModel: did not open (%s)\n\n", qPrintable(w.graphView()->overlayText()));
    }
  }

  // 3a. Issue 37: the Llama-family decoder at Llama 3 8B's sizes (1 x 8,192 tokens), captured
  // on meta by ckptlab_capture at bench time: File > Open to the dry run's curve and the laid-out
  // graph, with the UI thread's longest block (a capture without weights runs dry only).
  if (wanted("capture8b")) {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("llama_8b.capture.json"));
    QProcess py;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(
        QStringLiteral("PYTHONPATH"),
        QStringLiteral(CKPTLAB_SOURCE_DIR "/resources/python:" CKPTLAB_SOURCE_DIR "/tests/oracle"));
    py.setProcessEnvironment(env);
    py.start(QStringLiteral("/usr/bin/python3"),
             {QStringLiteral("-m"), QStringLiteral("ckptlab_capture"),
              QStringLiteral("capture_models:llama_8b"), QStringLiteral("--input-int"),
              QStringLiteral("1x8192:128256"), QStringLiteral("-o"), path});
    if (!py.waitForFinished(600000) || py.exitCode() != 0) {
      std::printf("Llama 8B capture: not made (%s)\n\n",
                  qPrintable(QString::fromUtf8(py.readAllStandardError()).trimmed()));
    } else {
      MainWindow w;
      w.resize(1440, 900);
      w.show();
      const OpenTimes o = timeOpen(w, path, heartbeat);
      if (o.ok) {
        auto snap = w.session()->current();
        std::printf(
            "Llama 8B capture (1 x 8,192 tokens, dry run only; %zu ops, %zu graph nodes at "
            "first): loaded at %.0f ms, laid out at %.0f ms, its dry run (peak %.1f GiB) shown at "
            "%.0f ms, all done at %.0f ms; UI thread blocked at most %.1f ms\n\n",
            w.session()->model()->ops.size(), w.session()->graph()->nodes().size(), o.loadedMs,
            o.laidOutMs, snap ? static_cast<double>(snap->trace().peak().bytes) / (1 << 30) : 0.0,
            o.runShownMs, o.openMs, o.blockedMs);
      } else
        std::printf("Llama 8B capture: did not open (%s)\n\n",
                    qPrintable(w.graphView()->overlayText()));
    }
  }

  // 3b. Click -> the dry run's plot (issue 11) on a model users open, at the batch they train
  // at: CKPTLAB_BENCH_CLICK_MODEL=densenet121.onnx (exported with a dynamic batch axis),
  // CKPTLAB_BENCH_CLICK_BATCH=64. Each click shows the dry run's exact curve first; the real
  // run follows in the background (cancelled by the next click).
  if (const QString path = qEnvironmentVariable("CKPTLAB_BENCH_CLICK_MODEL");
      !path.isEmpty() && wanted("dryclick")) {
    MainWindow w;
    w.resize(1440, 900);
    w.show();
    w.openPath(path);
    if (!waitFor([&] { return ready(w); })) {
      std::printf("dry click: %s did not open\n", qPrintable(path));
      return 0;
    }
    const qint64 batch = qEnvironmentVariableIntValue("CKPTLAB_BENCH_CLICK_BATCH");
    if (batch > 0) {
      const auto before = w.memoryPlot()->model().series;
      w.session()->setBatch(batch);
      waitFor([&] { return w.memoryPlot()->model().series != before; });
    }
    std::vector<std::string> blocks;
    for (const Module* m : w.session()->model()->all_modules())
      if (m->checkpointable && std::count(m->path.begin(), m->path.end(), '.') == 1)
        blocks.push_back(m->path);  // stages: features.denseblock1, layer1, ...
    if (blocks.empty())
      for (const Module* m : w.session()->model()->all_modules())
        if (m->checkpointable) blocks.push_back(m->path);
    w.session()->setReentrant(false);  // any block runs, whatever requires grad
    waitFor([&] { return !w.session()->runs()->busy(); });
    std::vector<double> clicks, runner, derived;
    QElapsedTimer t;
    for (std::size_t i = 0; i < 2 * blocks.size() && i < 16; ++i) {  // each on, then off
      const auto before = w.memoryPlot()->model().series;
      t.start();
      w.session()->toggleModule(QString::fromStdString(blocks[i / 2]));
      const quint64 id = w.session()->runs()->latestRequest();
      // This click's own result (not the previous click's real run arriving meanwhile).
      if (!waitFor([&] {
            const auto c = w.session()->current();
            return c && c->generation == id && w.memoryPlot()->model().series == c->series;
          }))
        break;
      w.memoryPlot()->repaint();
      clicks.push_back(static_cast<double>(t.nsecsElapsed()) / 1e6);
      runner.push_back(w.session()->current()->runnerMs);
      derived.push_back(w.session()->current()->derivedMs);
    }
    const auto snap = w.session()->current();
    std::printf(
        "click -> dry-run plot on %s, batch %lld (%lld steps, peak %s): median %.1f ms, max "
        "%.1f ms over %zu clicks (goal < 100 ms)\n",
        qPrintable(QFileInfo(path).fileName()), static_cast<long long>(batch),
        snap ? static_cast<long long>(snap->trace().step_count()) : 0LL,
        snap ? format_bytes(snap->summary.peak.bytes).c_str() : "-", median(clicks),
        clicks.empty() ? 0.0 : *std::max_element(clicks.begin(), clicks.end()), clicks.size());
    std::vector<double> on, dry_ms;  // a click on is a new configuration: its dry run first
    for (std::size_t i = 0; i < clicks.size(); i += 2) {
      on.push_back(clicks[i]);
      dry_ms.push_back(runner[i]);
    }
    std::printf(
        "  clicks on (a new configuration: its dry run) median %.1f ms, max %.1f ms, of which "
        "the dry run %.1f ms; clicks off answer from kept results\n",
        median(on), on.empty() ? 0.0 : *std::max_element(on.begin(), on.end()), median(dry_ms));
    (void)derived;
    w.session()->runs()->cancelAll();
    w.session()->runs()->waitForIdle();
  }

  // 3c. The Plan dock (issue 28): torchvision models at batch 8, 224 x 224, exported by
  // samples/export_onnx.py (CKPTLAB_BENCH_ONNX_DIR keeps the exports between runs): Plan pressed
  // -> the frontier shown, against one dry run of the same model in this process.
  if (wanted("plan")) {
    QTemporaryDir scratch;
    const QString dir = qEnvironmentVariable("CKPTLAB_BENCH_ONNX_DIR", scratch.path());
    const QStringList names =
        qEnvironmentVariable("CKPTLAB_BENCH_PLAN_MODELS", QStringLiteral("vit_b_16,resnet50"))
            .split(QLatin1Char(','), Qt::SkipEmptyParts);
    for (const QString& name : names) {
      const QString onnx = QDir(dir).filePath(name + QStringLiteral(".onnx"));
      if (!QFileInfo::exists(onnx)) {
        QProcess py;
        py.start(QStringLiteral("/usr/bin/python3"),
                 {QStringLiteral(CKPTLAB_SOURCE_DIR "/samples/export_onnx.py"),
                  QStringLiteral("--torchvision"), name, QStringLiteral("--out"), dir,
                  QStringLiteral("--batch"), QStringLiteral("8"), QStringLiteral("--size"),
                  QStringLiteral("224")});
        if (!py.waitForFinished(900000) || py.exitCode() != 0) {
          std::printf("Plan dock, %s: not exported (%s), skipped\n", qPrintable(name),
                      qPrintable(QString::fromUtf8(py.readAllStandardError()).right(200)));
          continue;
        }
      }
      QElapsedTimer load;
      load.start();
      std::shared_ptr<const Model> model = load_model(onnx.toStdString());
      const double loadMs = static_cast<double>(load.nsecsElapsed()) / 1e6;
      RunRequest request = scenario_request(*model);
      request.settings.use_reentrant = false;
      RunRequest dry = request;
      dry.settings.dry_run = true;
      QElapsedTimer one;
      one.start();
      const RunResult dryRun = Runner(model).run(dry);
      const double dryMs = static_cast<double>(one.nsecsElapsed()) / 1e6;
      PlanView view;
      view.resize(420, 480);
      view.show();
      view.setModel(model, request);
      QSignalSpy done(&view, &PlanView::planningFinished);
      heartbeat.start();
      QElapsedTimer t;
      t.start();
      view.startPlanning();
      done.wait(600000);
      const double planMs = static_cast<double>(t.nsecsElapsed()) / 1e6;
      const auto results = view.results();
      std::printf(
          "Plan dock, torchvision %s at batch 8 (%zu ops, plain peak %.1f MiB): Plan -> "
          "frontier shown in %.0f ms (%zu plans evaluated, %zu on the frontier%s); one dry run "
          "%.0f ms (ratio %.2f), loading %.0f ms; UI thread blocked at most %.1f ms\n",
          qPrintable(name), model->ops.size(),
          static_cast<double>(dryRun.trace.peak().bytes) / (1 << 20), planMs,
          results ? results->points.size() : 0, results ? results->front.size() : 0,
          results && !results->error.empty() ? (", " + results->error).c_str() : "", dryMs,
          planMs / std::max(1.0, dryMs), loadMs, heartbeat.stopMs());
    }
    std::printf("\n");
  }

  // 4. Click -> updated plot on the DenseNet block sample.
  if (wanted("click")) {
    QString path = QStringLiteral(":/samples/densenet_block.json");
    if (!QFile::exists(path)) path = defaultSamplePath();
    if (path.isEmpty()) {
      std::printf("click -> plot: no bundled sample in this build, skipped\n");
      return 0;
    }
    MainWindow w;
    w.resize(1440, 900);
    w.show();
    w.openPath(path);
    if (!waitFor([&] { return ready(w); })) {
      std::printf("click -> plot: %s did not open\n", qPrintable(path));
      return 0;
    }
    // Every block a user can click (a checkpointable module with children), each clicked on
    // and then off again: every click is one change from the sample's own configuration.
    std::vector<std::string> blocks;
    for (const Module* m : w.session()->model()->all_modules())
      if (m->checkpointable && !m->children.empty()) blocks.push_back(m->path);
    if (blocks.empty())
      for (const Module* m : w.session()->model()->all_modules())
        if (m->checkpointable) blocks.push_back(m->path);
    std::vector<double> clicks, toggles, runners, derived, delivered, handled;
    int failedRuns = 0;
    double handledAt = 0;
    QElapsedTimer t;
    QObject::connect(w.session(), &Session::runFinished, &w,
                     [&] { handledAt = static_cast<double>(t.nsecsElapsed()) / 1e6; });
    heartbeat.start();
    for (std::size_t i = 0; i < 2 * blocks.size(); ++i) {
      const QString m = QString::fromStdString(blocks[i / 2]);
      const auto before = w.memoryPlot()->model().series;
      t.start();
      w.session()->toggleModule(m);
      toggles.push_back(static_cast<double>(t.nsecsElapsed()) / 1e6);
      if (!waitFor([&] {
            return w.memoryPlot()->model().series != before && !w.session()->runs()->busy();
          }))
        break;
      w.memoryPlot()->repaint();
      clicks.push_back(static_cast<double>(t.nsecsElapsed()) / 1e6);
      const auto snap = w.session()->current();
      if (!snap->result->ok) ++failedRuns;
      runners.push_back(snap->runnerMs);
      derived.push_back(snap->derivedMs);
      delivered.push_back(static_cast<double>(snap->wallMs));
      handled.push_back(handledAt);
    }
    const double blocked = heartbeat.stopMs();
    std::printf(
        "click -> updated plot on %s (%lld steps): median %.1f ms, max %.1f ms over %zu "
        "clicks on %zu blocks (%d runs failed); UI thread blocked at most %.1f "
        "ms\n",
        qPrintable(path), static_cast<long long>(w.session()->current()->trace().step_count()),
        median(clicks), clicks.empty() ? 0.0 : *std::max_element(clicks.begin(), clicks.end()),
        clicks.size(), blocks.size(), failedRuns, blocked);
    std::vector<double> on, off;  // clicking a block on runs; clicking it off again is kept
    for (std::size_t i = 0; i < clicks.size(); ++i) (i % 2 ? off : on).push_back(clicks[i]);
    std::printf(
        "  median of the clicks on (a new run) %.1f ms, of the clicks off (the sample's "
        "own configuration again, a kept result) %.1f ms\n",
        median(on), median(off));
    std::printf(
        "  medians: toggle handled on the UI thread %.1f ms; on the worker, Runner %.1f ms + "
        "series, summary, lessons, timeline %.1f ms; result delivered at %.0f ms, views updated "
        "at %.1f ms\n",
        median(toggles), median(runners), median(derived), median(delivered), median(handled));
  }
  return 0;
}
