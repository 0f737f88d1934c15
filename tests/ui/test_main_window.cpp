// The main window end to end, on the offscreen platform: open, click a block, replay, stress
// the toggles, export, settings, screenshots.

#include <QComboBox>
#include <QDir>
#include <QGraphicsScene>
#include <QRandomGenerator>
#include <QSet>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "engine/report/figures.hpp"
#include "engine/run/runner.hpp"
#include "support/isolated_settings.hpp"
#include "support/test_models.hpp"
#include "support/wait.hpp"
#include "ui/app/main_window.hpp"
#include "ui/graph/graph_view.hpp"
#include "ui/panels/code_view.hpp"
#include "ui/panels/inspector.hpp"
#include "ui/panels/module_tree.hpp"
#include "ui/panels/summary_view.hpp"
#include "ui/player/player.hpp"
#include "ui/plot/memory_plot.hpp"
#include "ui/session/session.hpp"

using namespace ckpt;
using namespace ckpt::ui;
using test::waitFor;
using test::waitIdle;
using test::waitReady;
using test::waitRunOf;

namespace {

constexpr int kTimeout = test::kWaitTimeoutMs;

// The first checkpointable module in the graph, drawn as a cluster (expanded) or as a node
// (collapsed), and where to click it: a cluster's title bar, a node's middle.
std::pair<const Module*, QGraphicsItem*> firstBlock(const MainWindow& w) {
  const Model& model = *w.session()->model();
  for (const auto& c : w.session()->graph()->clusters()) {
    const Module* m = findModule(model.root, c.module);
    if (m && m->checkpointable)
      return {m, w.graphView()->clusterItem(QString::fromStdString(c.module))};
  }
  const auto& nodes = w.session()->graph()->nodes();
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].kind != VisualNode::Kind::module) continue;
    const Module* m = findModule(model.root, nodes[i].module);
    if (m && m->checkpointable) return {m, w.graphView()->nodeItem(static_cast<int>(i))};
  }
  return {nullptr, nullptr};
}

void clickBlock(GraphView* view, QGraphicsItem* item) {
  view->centerOn(item);
  const QRectF r = item->boundingRect();
  const QPointF scenePos = item->type() == ClusterItem::Type
                               ? QPointF(r.center().x(), r.top() + 12)
                               : QPointF(r.center().x() - 10, r.center().y());
  QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, view->mapFromScene(scenePos));
}

int distinctColours(const QImage& img) {
  QSet<QRgb> colours;
  for (int y = 0; y < img.height(); y += 7)
    for (int x = 0; x < img.width(); x += 7) colours.insert(img.pixel(x, y));
  return colours.size();
}

}  // namespace

class TestMainWindow : public QObject {
  Q_OBJECT

  QTemporaryDir home_;
  test::ModelFiles models_;

 private slots:
  void initTestCase() { test::isolateSettings(home_, QStringLiteral("test_ui_main_window")); }

  // An op the ONNX importer fused (issue 27) lists the exported nodes it stands for; the
  // Inspector shows the model's list as it is.
  void inspectorListsTheNodesOfAFusedOp() {
    auto model = std::make_shared<Model>();
    OpNode op;
    op.name = "mlp.1.gelu";
    op.op_type = "gelu";
    op.module = "mlp.1";
    op.inputs = {"h"};
    op.outputs = {"y"};
    op.fused = {"/mlp/mlp.1/Div", "/mlp/mlp.1/Erf", "/mlp/mlp.1/Add", "/mlp/mlp.1/Mul",
                "/mlp/mlp.1/Mul_1"};
    model->ops.push_back(op);
    Inspector inspector;
    inspector.setModel(model);
    inspector.showOp(0);
    const QString text = inspector.toPlainText();
    QVERIFY2(text.contains(QStringLiteral("fused from 5 ONNX nodes")), qPrintable(text));
    for (const auto& n : op.fused) QVERIFY2(text.contains(QString::fromStdString(n)), n.c_str());
    model->ops[0].fused.clear();
    inspector.setModel(model);
    inspector.showOp(0);
    QVERIFY(!inspector.toPlainText().contains(QStringLiteral("fused from")));
  }

  void clickingAClusterRerunsAndLeavesAGhost_data() {
    QTest::addColumn<QString>("path");
    for (const QString& p : models_.all()) QTest::newRow(qPrintable(QFileInfo(p).fileName())) << p;
  }

  void clickingAClusterRerunsAndLeavesAGhost() {
    QFETCH(QString, path);
    MainWindow w;
    w.resize(1400, 900);
    w.show();
    w.openPath(path);
    QVERIFY2(waitReady(w), qPrintable(path));
    auto first = w.session()->current();
    QVERIFY(first->series);
    QCOMPARE(w.memoryPlot()->model().series, first->series);
    QCOMPARE(w.memoryPlot()->model().series->peak_bytes, first->trace().peak().bytes);

    auto [m, item] = firstBlock(w);
    QVERIFY2(m && item, "no checkpointable module in the graph");
    std::set<std::string> expected = first->request.plan.modules;
    if (!expected.erase(m->path)) expected.insert(m->path);
    clickBlock(w.graphView(), item);
    QCOMPARE(w.session()->request().plan.modules, expected);
    QVERIFY(waitRunOf(w, expected));

    auto second = w.session()->current();
    QVERIFY(second != first);
    // The plot shows the engine's figure for this configuration, computed independently.
    Runner runner(w.session()->model());
    RunResult direct = runner.run(second->request);
    QCOMPARE(w.memoryPlot()->model().series->peak_bytes, direct.trace.peak().bytes);
    QCOMPARE(w.memoryPlot()->model().series->steps(), direct.trace.step_count());
    QCOMPARE(direct.ok, second->result->ok);
    // The ghost is the previous configuration's curve.
    QCOMPARE(w.memoryPlot()->model().ghost, first->series);
    QCOMPARE(w.session()->ghost(), first->series);
    QCOMPARE(item->isVisible(), true);
    QCOMPARE(w.moduleTree()->itemFor(QString::fromStdString(m->path))->checkState(0),
             expected.count(m->path) ? Qt::Checked : Qt::Unchecked);
  }

  // The Precision control (issue 31): bf16 autocast runs the forward and the loss with the
  // linears' inputs and weights cast to bfloat16 (each cast a step of the run): the app's
  // figures are the engine's for the request with --amp bf16, and back to float32 the float32
  // figures return.
  void precisionControlRunsUnderAutocast() {
    MainWindow w;
    w.resize(1400, 900);
    w.show();
    w.openPath(models_.path(QStringLiteral("blocks.json")));
    QVERIFY(waitReady(w));
    const std::int64_t fp32Peak = w.session()->current()->trace().peak().bytes;
    auto* box = w.findChild<QComboBox*>(QStringLiteral("precisionBox"));
    QVERIFY(box);
    QVERIFY(box->isEnabled());
    QCOMPARE(box->currentData().toInt(), static_cast<int>(AmpMode::off));
    box->setCurrentIndex(box->findData(static_cast<int>(AmpMode::bf16)));
    QVERIFY(waitFor([&] {
      auto s = w.session()->current();
      return s && s->request.settings.amp == AmpMode::bf16 && !w.session()->runs()->busy();
    }));
    auto bf16 = w.session()->current();
    QVERIFY(bf16->result && bf16->result->ok);
    Runner runner(w.session()->model());
    const RunResult direct = runner.run(bf16->request);
    QVERIFY2(direct.ok, direct.error.c_str());
    QCOMPARE(bf16->trace().peak().bytes, direct.trace.peak().bytes);
    const auto casts = [](const Trace& t) {
      int n = 0;
      for (std::int64_t k = 0; k < t.step_count(); ++k) n += t.step(k).op == "to(bfloat16)";
      return n;
    };
    // Six linears: each one's weight (and bias) cast once, and its input where it is float32.
    QVERIFY2(casts(bf16->trace()) >= 10, qPrintable(QString::number(casts(bf16->trace()))));
    box->setCurrentIndex(box->findData(static_cast<int>(AmpMode::off)));
    QVERIFY(waitFor([&] {
      auto s = w.session()->current();
      return s && s->request.settings.amp == AmpMode::off && !w.session()->runs()->busy();
    }));
    QCOMPARE(w.session()->current()->trace().peak().bytes, fp32Peak);
    QCOMPARE(casts(w.session()->current()->trace()), 0);
  }

  // The Device control: CUDA shows what PyTorch 2.x holds on a GPU, as a dry run on any machine:
  // the cuBLAS workspace, the allocator's reserved line above the allocated curve, and the
  // badge and the summary saying whose memory it is. Back to CPU, the CPU figures return.
  void deviceControlShowsTheGpusMemory() {
    MainWindow w;
    w.resize(1400, 900);
    w.show();
    w.openPath(models_.path(QStringLiteral("blocks.json")));
    QVERIFY(waitReady(w));
    const std::int64_t cpuPeak = w.session()->current()->trace().peak().bytes;
    QVERIFY(w.memoryPlot()->model().series->reserved.empty());
    auto* box = w.findChild<QComboBox*>(QStringLiteral("deviceBox"));
    QVERIFY(box);
    QVERIFY(box->isEnabled());
    box->setCurrentIndex(box->findData(static_cast<int>(Device::cuda)));
    QVERIFY(waitFor([&] {
      auto s = w.session()->current();
      return s && s->request.settings.device == Device::cuda && !w.session()->runs()->busy();
    }));
    auto cuda = w.session()->current();
    QVERIFY(cuda->dryRun());
    QVERIFY(!cuda->notComputed.empty());  // the engine's guard kept the dry run: no CUDA engine
    // The same request the CLI makes with --device cuda --dry-run, run directly.
    RunRequest dry = cuda->request;
    dry.settings.dry_run = true;
    Runner runner(w.session()->model());
    const RunResult direct = runner.run(dry);
    QCOMPARE(cuda->trace().peak().bytes, direct.trace.peak().bytes);
    QVERIFY(direct.reserved);
    const auto workspace = static_cast<std::size_t>(MemoryCategory::workspace);
    QVERIFY(cuda->trace().peak().by_category[workspace] > 0);
    QVERIFY(cuda->trace().peak().bytes > cpuPeak);
    const MemorySeries& series = *w.memoryPlot()->model().series;
    QCOMPARE(series.reserved_peak, direct.reserved->peak_bytes);
    QVERIFY(series.reserved_peak >= series.peak_bytes);
    QCOMPARE(static_cast<std::int64_t>(series.reserved.size()), series.steps());
    QVERIFY(QString::fromStdString(series.memory_of).contains(QStringLiteral("PyTorch 2.x")));
    QVERIFY(cuda->summary.gpu.has_value());
    // The CPU curve is another allocator's memory: no ghost to compare the GPU's with.
    QVERIFY(!w.session()->ghost());
    box->setCurrentIndex(box->findData(static_cast<int>(Device::cpu)));
    QVERIFY(waitFor([&] {
      auto s = w.session()->current();
      return s && s->request.settings.device == Device::cpu && !s->dryRun() &&
             !w.session()->runs()->busy();
    }));
    QCOMPARE(w.session()->current()->trace().peak().bytes, cpuPeak);
    QVERIFY(w.memoryPlot()->model().series->reserved.empty());
    if (const QString keep = qEnvironmentVariable("CKPTLAB_UI_ARTIFACTS"); !keep.isEmpty()) {
      box->setCurrentIndex(box->findData(static_cast<int>(Device::cuda)));
      QVERIFY(waitFor([&] {
        auto s = w.session()->current();
        return s && s->request.settings.device == Device::cuda && !w.session()->runs()->busy();
      }));
      QTest::qWait(200);
      w.grab().save(QDir(keep).filePath(QStringLiteral("device_cuda.png")));
    }
  }

  // The Optimizer box ends the step with the optimizer's: its state live from the first step,
  // the step's phases in the run summary, the optimizer in the exported code.
  void optimizerControlEndsTheTrainingStep() {
    MainWindow w;
    w.resize(1400, 900);
    w.show();
    w.openPath(models_.path(QStringLiteral("blocks.json")));
    QVERIFY(waitReady(w));
    const auto state = static_cast<std::size_t>(MemoryCategory::optimizer_state);
    const auto parameters = static_cast<std::size_t>(MemoryCategory::parameter);
    QCOMPARE(w.session()->current()->trace().memory_at(0)[state], std::int64_t{0});
    QVERIFY(!w.session()->current()->summary.step_phases.has_optimizer_step);
    auto* box = w.findChild<QComboBox*>(QStringLiteral("optimizerBox"));
    QVERIFY(box);
    QVERIFY(box->isEnabled());
    box->setCurrentIndex(box->findData(static_cast<int>(OptimizerKind::adamw)));
    QVERIFY(waitFor([&] {
      auto s = w.session()->current();
      return s && s->request.settings.optimizer.kind == OptimizerKind::adamw &&
             !s->realRunFollows && !w.session()->runs()->busy();
    }));
    auto run = w.session()->current();
    QVERIFY2(run->result->ok, run->result->error.c_str());
    // Adam's two moments per parameter, there before the first op.
    const auto first = run->trace().memory_at(0);
    QVERIFY2(
        first[state] >= 2 * first[parameters],
        qPrintable(QString("state %1, parameters %2").arg(first[state]).arg(first[parameters])));
    const StepPhases& phases = run->summary.step_phases;
    QVERIFY(phases.has_optimizer_step);
    QVERIFY(phases.peak_optimizer_step > phases.after_backward);
    QVERIFY(!run->result->optimizer_state.empty());
    auto* summary = w.findChild<SummaryView*>();
    QVERIFY(summary);
    QVERIFY(summary->toPlainText().contains(QStringLiteral("optimizer step peak")));
    auto* code = w.findChild<CodeView*>();
    QVERIFY(code);
    QVERIFY(waitFor(
        [&] { return code->toPlainText().contains(QStringLiteral("torch.optim.AdamW(")); }));
    QVERIFY(code->toPlainText().contains(QStringLiteral("optimizer.step()")));
    // Back to none: the run stops after backward again.
    box->setCurrentIndex(box->findData(static_cast<int>(OptimizerKind::none)));
    QVERIFY(waitFor([&] {
      auto s = w.session()->current();
      return s && s->request.settings.optimizer.kind == OptimizerKind::none && !s->realRunFollows &&
             !w.session()->runs()->busy();
    }));
    QVERIFY(!w.session()->current()->summary.step_phases.has_optimizer_step);
  }

  // Offload from the Modules tree: refused on the CPU (the copies would stay in the same
  // memory), then on the CUDA device the block's saved tensors leave the device and the run
  // summary names the host memory they take.
  void offloadFromTheModulesTree() {
    MainWindow w;
    w.resize(1400, 900);
    w.show();
    w.openPath(models_.path(QStringLiteral("blocks.json")));
    QVERIFY(waitReady(w));
    Session* s = w.session();
    const std::string block = "block";
    QSignalSpy said(s, &Session::message);
    QVERIFY(!s->toggleOffload(QString::fromStdString(block)));
    QVERIFY(!said.isEmpty() && said.last().at(0).toString().contains(QStringLiteral("GPU")));
    QVERIFY(s->request().plan.offload.empty());
    s->setDevice(Device::cuda);
    QVERIFY(waitFor([&] {
      auto c = s->current();
      return c && c->request.settings.device == Device::cuda && !s->runs()->busy();
    }));
    const std::int64_t plain = s->current()->trace().peak().bytes;
    const auto activation = static_cast<std::size_t>(MemoryCategory::activation);
    auto savedAtForwardEnd = [&] {
      const Trace& t = s->current()->trace();
      return t.memory_at(t.forward_end())[activation];
    };
    const std::int64_t plainSaved = savedAtForwardEnd();
    QVERIFY(s->toggleOffload(QString::fromStdString(block)));
    QVERIFY(waitFor([&] {
      auto c = s->current();
      return c && c->request.plan.offload.count(block) && !s->runs()->busy();
    }));
    auto run = s->current();
    QVERIFY2(run->result->ok, run->result->error.c_str());
    QVERIFY(run->summary.offload && run->summary.offload->to_host_bytes > 0);
    // Marking the offloaded module in the tree toggled no checkbox (it once checkpointed every
    // module: a font change is an itemChanged too).
    QVERIFY(s->request().plan.modules.empty());
    QVERIFY(w.findChild<ModuleTree*>()->itemFor(QStringLiteral("block"))->font(0).italic());
    // The block's saved tensors are off the device once the forward has moved on (the peak may
    // still rise: a storage two nodes save comes back twice, as with save_on_cpu).
    QVERIFY(savedAtForwardEnd() < plainSaved);
    auto* summary = w.findChild<SummaryView*>();
    QVERIFY(summary->toPlainText().contains(QStringLiteral("offloaded")));
    // Toggled again: kept on the device as before.
    QVERIFY(s->toggleOffload(QString::fromStdString(block)));
    QVERIFY(waitFor([&] {
      auto c = s->current();
      return c && c->request.plan.offload.empty() && !s->runs()->busy();
    }));
    QCOMPARE(s->current()->trace().peak().bytes, plain);
  }

  void playerStepsAndKeys() {
    MainWindow w;
    w.show();
    w.openPath(models_.path(QStringLiteral("blocks.json")));
    QVERIFY(waitReady(w));
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.activateWindow();
    Player* p = w.player();
    const std::int64_t n = w.session()->current()->trace().step_count();
    QCOMPARE(p->stepCount(), n);
    // Forward through every step in order, then back.
    p->toStart();
    QSignalSpy moved(p, &Player::cursorChanged);
    for (std::int64_t k = 1; k < n; ++k) {
      p->stepForward();
      QCOMPARE(p->cursor(), k);
      QCOMPARE(w.memoryPlot()->model().cursor, k);
    }
    p->stepForward();
    QCOMPARE(p->cursor(), n - 1);  // clamped at the end
    for (std::int64_t k = n - 2; k >= 0; --k) {
      p->stepBack();
      QCOMPARE(p->cursor(), k);
    }
    QCOMPARE(moved.size(), static_cast<qsizetype>(2 * (n - 1)));

    // The op at the cursor is highlighted in the graph.
    for (std::int64_t k = 0; k < n; ++k) {
      p->setCursor(k);
      const TraceStep s = w.session()->current()->trace().step(k);
      const std::int64_t op = w.session()->model()->op_index(s.node);
      if (op < 0) continue;
      QCOMPARE(w.graphView()->currentNode(), w.session()->graph()->nodeOfOp(op));
    }

    // Keyboard: Home, Right, Right, Left, End, Space plays, Space pauses.
    QTest::keyClick(&w, Qt::Key_Home);
    QCOMPARE(p->cursor(), 0);
    QTest::keyClick(&w, Qt::Key_Right);
    QTest::keyClick(&w, Qt::Key_Right);
    QCOMPARE(p->cursor(), 2);
    QTest::keyClick(&w, Qt::Key_Left);
    QCOMPARE(p->cursor(), 1);
    QTest::keyClick(&w, Qt::Key_End);
    QCOMPARE(p->cursor(), n - 1);
    QTest::keyClick(&w, Qt::Key_Home);
    QTest::keyClick(&w, Qt::Key_Space);
    QVERIFY(p->isPlaying());
    QTRY_VERIFY_WITH_TIMEOUT(p->cursor() > 0, 5000);
    QTest::keyClick(&w, Qt::Key_Space);
    QVERIFY(!p->isPlaying());

    // Clicking the plot moves the cursor there.
    MemoryPlot* plot = w.memoryPlot();
    const QRectF rect(plot->rect());
    const double x = plot->renderer().xOfStep(5, rect, plot->model());
    QTest::mouseClick(plot, Qt::LeftButton, {}, QPoint(int(x), plot->height() / 2));
    QCOMPARE(p->cursor(), std::int64_t(5));
  }

  // The view moves per-node counts along the run's state timeline; they must equal the trace's
  // own state_at at any cursor, reached forwards, backwards or by jumps.
  void graphStatesMatchTheTrace_data() {
    QTest::addColumn<QString>("path");
    QTest::newRow("blocks") << models_.path(QStringLiteral("blocks.json"));
    QTest::newRow("heavy, collapsed") << models_.path(QStringLiteral("heavy.json"));
  }

  void graphStatesMatchTheTrace() {
    QFETCH(QString, path);
    MainWindow w;
    w.show();
    w.openPath(path);
    QVERIFY(waitReady(w));
    const Trace& trace = w.session()->current()->trace();
    const Model& model = *w.session()->model();
    const ModelGraph& graph = *w.session()->graph();
    QRandomGenerator rng(7);
    std::vector<std::int64_t> cursors{0, 1, 2, trace.step_count() - 1, trace.step_count() / 2};
    for (int i = 0; i < 25; ++i)
      cursors.push_back(rng.bounded(static_cast<qint64>(trace.step_count())));
    for (std::int64_t k : cursors) {
      w.player()->setCursor(k);
      std::vector<NodeItem::StateCounts> expected(graph.nodes().size());
      for (std::size_t op = 0; op < model.ops.size(); ++op)
        for (const auto& v : model.ops[op].outputs)
          if (const std::int64_t t = trace.tensor_index(v); t >= 0)
            ++expected[static_cast<std::size_t>(graph.nodeOfOp(static_cast<std::int64_t>(op)))]
                      [static_cast<std::size_t>(trace.state_at(t, k))];
      for (std::size_t n = 0; n < graph.nodes().size(); ++n) {
        if (graph.nodes()[n].kind == VisualNode::Kind::input ||
            graph.nodes()[n].kind == VisualNode::Kind::output)
          continue;
        QVERIFY2(w.graphView()->statesOf(static_cast<int>(n)) == expected[n],
                 qPrintable(QStringLiteral("node %1 at step %2").arg(n).arg(k)));
      }
    }
  }

  void recomputeStepsLightUpTheSegment() {
    MainWindow w;
    w.show();
    w.openPath(models_.path(QStringLiteral("blocks.json")));
    QVERIFY(waitReady(w));
    QVERIFY(w.session()->toggleModule(QStringLiteral("block")));
    QVERIFY(waitRunOf(w, {"block"}));
    auto snap = w.session()->current();
    if (!snap->result->ok && snap->result->error.find("engine/checkpoint") != std::string::npos)
      QSKIP("this build's engine has no checkpointing yet");
    QVERIFY2(snap->result->ok, snap->result->error.c_str());
    const Trace& trace = snap->trace();
    QVERIFY(!trace.recomputes().empty());
    const RecomputeSpan span = trace.recomputes().front();
    QCOMPARE(span.segment, std::string("block"));
    const std::int64_t last = span.end_step - 1;
    w.player()->setCursor(last);
    QCOMPARE(w.graphView()->recomputingModule(), QStringLiteral("block"));
    QVERIFY(w.graphView()->clusterItem(QStringLiteral("block")));
    // Nodes inside the segment show recomputed tensors; nodes outside do not.
    const Model& model = *w.session()->model();
    int recomputedInside = 0;
    for (std::size_t i = 0; i < model.ops.size(); ++i) {
      const int node = w.session()->graph()->nodeOfOp(static_cast<std::int64_t>(i));
      const auto counts = w.graphView()->statesOf(node);
      const int recomputed = counts[static_cast<std::size_t>(ActivationState::recomputed)];
      const std::string& mod = model.ops[i].module;
      if (mod == "block" || mod.starts_with("block."))
        recomputedInside += recomputed;
      else
        QVERIFY2(recomputed == 0, model.ops[i].name.c_str());
    }
    QVERIFY(recomputedInside > 0);
    // Outside the span, nothing is being recomputed.
    w.player()->setCursor(0);
    QVERIFY(w.graphView()->recomputingModule().isEmpty());
  }

  void rapidRandomTogglesEndConsistent() {
    MainWindow w;
    w.show();
    w.openPath(models_.path(QStringLiteral("blocks.json")));
    QVERIFY(waitReady(w));
    std::vector<QString> modules;
    for (const Module* m : w.session()->model()->all_modules())
      if (m->checkpointable) modules.push_back(QString::fromStdString(m->path));
    QVERIFY(!modules.empty());
    QRandomGenerator rng(20261122);
    for (int i = 0; i < 200; ++i) {
      w.session()->toggleModule(modules[rng.bounded(static_cast<quint32>(modules.size()))]);
      if (i % 7 == 0) QCoreApplication::processEvents();
      if (i % 50 == 0) w.player()->setCursor(rng.bounded(5));
    }
    const auto expected = w.session()->request().plan.modules;
    QVERIFY(waitRunOf(w, expected));
    QTest::qWait(100);
    auto snap = w.session()->current();
    QCOMPARE(snap->request.plan.modules, expected);
    QCOMPARE(w.memoryPlot()->model().series, snap->series);
    for (const QString& m : modules) {
      const bool on = expected.count(m.toStdString()) > 0;
      QCOMPARE(w.moduleTree()->itemFor(m)->checkState(0), on ? Qt::Checked : Qt::Unchecked);
    }
    QCOMPARE(w.player()->stepCount(), snap->trace().step_count());
  }

  void exportsGraphAndPlot() {
    MainWindow w;
    w.show();
    w.openPath(models_.path(QStringLiteral("blocks.json")));
    QVERIFY(waitReady(w));
    QTemporaryDir dir;
    for (const char* name : {"graph.png", "graph.svg", "plot.png", "plot.svg"}) {
      const QString path = dir.filePath(QLatin1String(name));
      QString error;
      const bool ok = QString::fromLatin1(name).startsWith(QLatin1String("graph"))
                          ? w.exportGraph(path, &error)
                          : w.exportPlot(path, &error);
      QVERIFY2(ok, qPrintable(error));
      QVERIFY2(QFileInfo(path).size() > 1000, name);
    }
    QVERIFY(!QImage(dir.filePath(QStringLiteral("graph.png"))).isNull());
    QString error;
    QVERIFY(!w.exportGraph(dir.filePath(QStringLiteral("graph.gifx")), &error));
    QVERIFY(error.contains(QStringLiteral("graph.gifx")));
  }

  void settingsSurviveARestart() {
    const QString file = models_.path(QStringLiteral("blocks.json"));
    {
      MainWindow w;
      w.show();
      w.resize(1234, 777);
      w.openPath(file);
      QVERIFY(waitReady(w));
      w.setTheme(ThemeMode::dark);
      w.player()->setSpeed(4.0);
      w.close();
    }
    MainWindow again;
    QCOMPARE(again.theme(), ThemeMode::dark);
    QCOMPARE(again.recentFiles().value(0), QFileInfo(file).absoluteFilePath());
    QCOMPARE(again.size(), QSize(1234, 777));
    QCOMPARE(again.player()->speed(), 4.0);
    again.setTheme(ThemeMode::system);
  }

  void openingABadFileSaysWhy() {
    QTemporaryDir dir;
    const QString bad = dir.filePath(QStringLiteral("bad.json"));
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("{ \"model\": [1, 2");
    f.close();
    MainWindow w;
    w.show();
    QSignalSpy failed(w.session(), &Session::openFailed);
    w.openPath(bad);
    QVERIFY(failed.wait(kTimeout));
    QVERIFY(failed.first().at(0).toString().contains(QStringLiteral("bad.json")));
    QVERIFY(w.graphView()->overlayText().contains(QStringLiteral("bad.json")));
  }

  void screenshotOfEachModel_data() { clickingAClusterRerunsAndLeavesAGhost_data(); }

  void screenshotOfEachModel() {
    QFETCH(QString, path);
    MainWindow w;
    w.resize(1440, 900);
    w.show();
    w.openPath(path);
    QVERIFY(waitReady(w));
    const QImage shot = w.grab().toImage();
    QCOMPARE(shot.size(), QSize(1440, 900));
    QVERIFY(distinctColours(shot) > 30);
    QVERIFY(!w.graphView()->scene()->items().isEmpty());
    if (const QString keep = qEnvironmentVariable("CKPTLAB_UI_ARTIFACTS"); !keep.isEmpty())
      shot.save(QDir(keep).filePath(QFileInfo(path).completeBaseName() + QStringLiteral(".png")));
  }
};

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"
