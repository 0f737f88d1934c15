// A long random session (issue 17): 1,000 random user actions — checkpoint toggles, variant,
// RNG setting, policy, batch, play and pause, seeks (in and out of range), opening another
// sample, pins and unpins, reruns, undo and redo — on the window, with invariants checked after
// every one: the player's cursor inside the shown trace, the module tree's checks equal to the
// configuration; and at every settle point, the shown run is the configuration's and its plot's
// peak is the engine's own for that configuration (a separate Runner). Runs under ASan and
// UBSan in ./run.sh sanitize (label stress). CKPTLAB_RANDOM_ACTIONS changes the count.

#include <QAction>
#include <QRandomGenerator>
#include <QtTest>
#include <map>

#include "engine/run/runner.hpp"
#include "support/isolated_settings.hpp"
#include "support/test_models.hpp"
#include "support/wait.hpp"
#include "ui/app/main_window.hpp"
#include "ui/core/model_graph.hpp"
#include "ui/panels/module_tree.hpp"
#include "ui/player/player.hpp"
#include "ui/plot/memory_plot.hpp"

using namespace ckpt;
using namespace ckpt::ui;

class TestRandomSession : public QObject {
  Q_OBJECT

  QTemporaryDir home_;
  test::ModelFiles models_;

  // Cheap invariants that hold at any moment, run or no run under way.
  static void checkAlways(MainWindow& w, int action) {
    const QString where = QStringLiteral("after action %1").arg(action);
    const std::int64_t steps = w.player()->stepCount();
    QVERIFY2(w.player()->cursor() >= -1 && w.player()->cursor() < std::max<std::int64_t>(steps, 1),
             qPrintable(where));
    if (const auto series = w.memoryPlot()->model().series)
      QVERIFY2(series->steps() == steps, qPrintable(where + QStringLiteral(": plot and player")));
    const auto& modules = w.session()->request().plan.modules;
    int compared = 0;
    for (const Module* m : w.session()->model()->all_modules()) {
      if (!m->checkpointable) continue;
      const QString path = QString::fromStdString(m->path);
      const auto* item = w.moduleTree()->itemFor(path);
      if (!item) continue;  // not shown in the tree (a collapsed definition's later instance)
      QVERIFY2((item->checkState(0) == Qt::Checked) == (modules.count(m->path) > 0),
               qPrintable(where + QStringLiteral(": tree check of ") + path));
      ++compared;
    }
    QVERIFY2(compared > 0, qPrintable(where + QStringLiteral(": no module in the tree")));
  }

  // After the window settles: the run shown is the configuration's, with the engine's peak.
  void checkSettled(MainWindow& w, int action, std::map<std::string, std::int64_t>& peaks) {
    QVERIFY2(test::waitIdle(w), qPrintable(QStringLiteral("idle after action %1").arg(action)));
    const auto snap = w.session()->current();
    QVERIFY(same_run(snap->request, w.session()->request()));
    QCOMPARE(w.memoryPlot()->model().series, snap->series);
    QCOMPARE(w.player()->stepCount(), snap->trace().step_count());
    if (!snap->summary.ok) return;  // a failed run's figures are checked by test_honest_failure
    // The engine's own peak for this configuration, computed once per distinct configuration.
    std::string key = w.session()->source().toStdString() + "|" +
                      std::to_string(snap->request.settings.batch) + "|" +
                      std::to_string(snap->request.settings.use_reentrant) +
                      std::to_string(snap->request.settings.preserve_rng_state) +
                      snap->request.plan.policy.spelling();
    for (const auto& m : snap->request.plan.modules) key += "|" + m;
    auto it = peaks.find(key);
    if (it == peaks.end()) {
      const RunResult direct = Runner(snap->model).run(snap->request);
      QVERIFY(direct.ok);
      it = peaks.emplace(key, direct.trace.peak().bytes).first;
    }
    QCOMPARE(snap->series->peak_bytes, it->second);
  }

 private slots:
  void initTestCase() { test::isolateSettings(home_, QStringLiteral("test_ui_random_session")); }

  void thousandRandomActions() {
    const int count = qEnvironmentVariableIsSet("CKPTLAB_RANDOM_ACTIONS")
                          ? qEnvironmentVariableIntValue("CKPTLAB_RANDOM_ACTIONS")
                          : 1000;
    const QStringList files{models_.path(QStringLiteral("blocks.json")),
                            QStringLiteral(":/samples/mlp.json"),
                            QStringLiteral(":/samples/transformer_block.json")};
    MainWindow w;
    w.resize(1440, 900);
    w.show();
    w.openPath(files[0]);
    QVERIFY(test::waitIdle(w));
    QRandomGenerator rng(20261125);
    std::map<std::string, std::int64_t> peaks;
    std::map<QString, int> done;
    const auto pick = [&](int n) { return static_cast<int>(rng.bounded(static_cast<quint32>(n))); };
    for (int action = 0; action < count; ++action) {
      Session* s = w.session();
      std::vector<const Module*> blocks;
      for (const Module* m : s->model()->all_modules())
        if (m->checkpointable) blocks.push_back(m);
      const int kind = pick(100);
      QString what;
      if (kind < 40 && !blocks.empty()) {
        what = QStringLiteral("toggle");
        s->toggleModule(QString::fromStdString(
            blocks[static_cast<std::size_t>(pick(static_cast<int>(blocks.size())))]->path));
      } else if (kind < 46) {
        what = QStringLiteral("variant");
        s->setReentrant(pick(2) == 0);
      } else if (kind < 50) {
        what = QStringLiteral("rng");
        s->setPreserveRng(pick(2) == 0);
      } else if (kind < 55) {
        what = QStringLiteral("policy");
        s->setPolicy(SelectivePolicy::parse(std::array<const char*, 4>{
            "none", "save-matmul", "save:mm", "save:mm/2"}[static_cast<std::size_t>(pick(4))]));
      } else if (kind < 60) {
        what = QStringLiteral("batch");
        s->setBatch(std::array<std::int64_t, 4>{0, 1, 2, 8}[static_cast<std::size_t>(pick(4))]);
      } else if (kind < 68) {
        what = QStringLiteral("play");
        w.player()->togglePlay();
      } else if (kind < 80) {
        what = QStringLiteral("seek");
        const std::int64_t steps = w.player()->stepCount();
        w.player()->setCursor(static_cast<std::int64_t>(pick(static_cast<int>(steps + 10))) - 5);
      } else if (kind < 83) {
        what = QStringLiteral("open");
        w.openPath(files[pick(static_cast<int>(files.size()))]);
        QVERIFY2(test::waitIdle(w), qPrintable(QStringLiteral("open at action %1").arg(action)));
      } else if (kind < 89) {
        what = QStringLiteral("pin");
        w.pinAction()->trigger();
      } else if (kind < 93) {
        what = QStringLiteral("unpin");
        const auto& pins = s->pins()->pins();
        if (pick(5) == 0)
          s->pins()->clear();
        else if (!pins.empty())
          s->pins()->remove(pins[static_cast<std::size_t>(pick(static_cast<int>(pins.size())))].id);
      } else if (kind < 94) {
        what = QStringLiteral("rerun");
        s->rerun();
      } else if (kind < 96) {
        // Through the Edit menu's actions, as Ctrl+Z and Ctrl+Shift+Z: the history of this
        // model's configurations (a disabled action does nothing).
        what = pick(3) ? QStringLiteral("undo") : QStringLiteral("redo");
        (what == QStringLiteral("undo") ? w.undoAction() : w.redoAction())->trigger();
      } else {
        what = QStringLiteral("settle");
        checkSettled(w, action, peaks);
        if (QTest::currentTestFailed()) return;
      }
      ++done[what];
      // Most actions come faster than a run finishes; now and then the event loop catches up.
      if (pick(4) == 0) QTest::qWait(pick(30));
      checkAlways(w, action);
      if (QTest::currentTestFailed()) return;
      if (action % 50 == 49) {
        checkSettled(w, action, peaks);
        if (QTest::currentTestFailed()) return;
      }
    }
    w.player()->pause();
    checkSettled(w, count, peaks);
    QString tally;
    for (const auto& [what, n] : done) tally += QStringLiteral(" %1 %2").arg(what).arg(n);
    qInfo().noquote() << count << "random actions:" << tally << "·" << peaks.size()
                      << "configurations checked against the engine";
  }
};

QTEST_MAIN(TestRandomSession)
#include "test_random_session.moc"
