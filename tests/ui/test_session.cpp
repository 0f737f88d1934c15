// The Session and its RunController without a window: kept results answer a configuration that
// was run before (same trace, no new run), asynchronously and with balanced busy signals, and
// the ghost logic is the same whether a result was run or kept.

#include <QSignalSpy>
#include <QtTest>

#include "engine/model/loader.hpp"
#include "engine/plan/pytorch_code.hpp"
#include "support/test_models.hpp"
#include "ui/panels/code_view.hpp"
#include "ui/session/session.hpp"

using namespace ckpt;
using namespace ckpt::ui;

namespace {

constexpr int kTimeout = 120000;

RunSnapshotPtr lastOf(const QSignalSpy& spy) {
  return spy.isEmpty() ? nullptr : spy.last().at(0).value<RunSnapshotPtr>();
}

}  // namespace

class TestSession : public QObject {
  Q_OBJECT

  std::shared_ptr<const Model> model_;

 private slots:
  void initTestCase() {
    qRegisterMetaType<RunSnapshotPtr>("ckpt::ui::RunSnapshotPtr");
    model_ = load_model_json_text(test::kBlocksJson, "blocks.json");
  }

  // Every request is a dry run first (its exact curve at once), then the real run replaces it;
  // a configuration over the memory limit is shown as its dry run only, saying why.
  void aDryRunComesFirstAndTheGuardRefusesWhatWouldNotFit() {
    RunController runs;
    runs.setModel(model_);
    QSignalSpy previewed(&runs, &RunController::previewed);
    QSignalSpy finished(&runs, &RunController::finished);
    CheckpointConfig a = scenario_config(*model_);
    a.modules = {"block"};
    runs.request(a);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kTimeout);
    QCOMPARE(previewed.count(), 1);
    const RunSnapshotPtr dry = lastOf(previewed), real = lastOf(finished);
    QVERIFY(dry->dryRun() && dry->realRunFollows && dry->series->dry_run);
    QVERIFY(!real->dryRun() && !real->series->dry_run && real->notComputed.empty());
    QCOMPARE(dry->generation, real->generation);
    QCOMPARE(dry->series->peak_bytes, real->series->peak_bytes);
    QCOMPARE(dry->series->totals, real->series->totals);
    QVERIFY(dry->summary.dry_run && !real->summary.dry_run);

    runs.setMemoryLimit(1024);
    a.seed += 1;
    runs.request(a);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, kTimeout);
    const RunSnapshotPtr refused = lastOf(finished);
    QVERIFY(refused->dryRun() && !refused->realRunFollows);
    QVERIFY2(QString::fromStdString(refused->notComputed).contains("not run"),
             refused->notComputed.c_str());
    QCOMPARE(refused->series->not_computed, refused->notComputed);
    QCOMPARE(previewed.count(), 1);  // nothing follows it, so it comes as the result
    QTRY_VERIFY(!runs.busy());
  }

  void aConfigurationRunBeforeIsAnsweredFromTheKeptResult() {
    RunController runs;
    runs.setModel(model_);
    QSignalSpy finished(&runs, &RunController::finished);
    QSignalSpy busy(&runs, &RunController::busyChanged);
    CheckpointConfig a = scenario_config(*model_);
    CheckpointConfig b = a;
    b.modules = {"block"};

    runs.request(a);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kTimeout);
    const RunSnapshotPtr first = lastOf(finished);
    runs.request(b);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, kTimeout);
    const RunSnapshotPtr second = lastOf(finished);
    QVERIFY(second->result != first->result);
    QTRY_VERIFY(!runs.busy());

    // Back to a: the same result object, so nothing ran; delivered from the event loop.
    const quint64 id = runs.request(a);
    QVERIFY(runs.busy());
    QCOMPARE(finished.count(), 2);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 3, kTimeout);
    const RunSnapshotPtr again = lastOf(finished);
    QCOMPARE(again->result, first->result);
    QCOMPARE(again->series, first->series);
    QCOMPARE(again->generation, id);
    QVERIFY(!runs.busy());

    // A seed the controller never ran is a real run.
    CheckpointConfig c = a;
    c.seed = a.seed + 1;
    runs.request(c);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 4, kTimeout);
    QVERIFY(lastOf(finished)->result != first->result);
    QVERIFY(lastOf(finished)->result != second->result);
    QTRY_VERIFY(!runs.busy());

    // A kept answer while a run is in flight supersedes it: only the newest is delivered.
    CheckpointConfig d = a;
    d.modules = {"block2"};
    runs.request(d);
    QVERIFY(runs.busy());
    runs.request(b);
    QTRY_VERIFY_WITH_TIMEOUT(!runs.busy(), kTimeout);
    QTest::qWait(50);
    QCOMPARE(finished.count(), 5);
    QCOMPARE(lastOf(finished)->result, second->result);
    // Every "busy" was followed by an "idle".
    int balance = 0;
    for (const auto& args : busy) balance += args.at(0).toBool() ? 1 : -1;
    QCOMPARE(balance, 0);
    QCOMPARE(busy.last().at(0).toBool(), false);

    // A new model forgets the kept results.
    runs.setModel(load_model_json_text(test::kBlocksJson, "blocks-again.json"));
    runs.request(a);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 6, kTimeout);
    QVERIFY(lastOf(finished)->result != first->result);
  }

  void clickingABlockOffAgainShowsTheFirstCurveWithTheGhost() {
    Session s;
    QSignalSpy finished(&s, &Session::runFinished);
    s.openModel(model_, QStringLiteral("blocks.json"));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kTimeout);
    const RunSnapshotPtr plain = s.current();
    QVERIFY(s.toggleModule(QStringLiteral("block")));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, kTimeout);
    const RunSnapshotPtr checkpointed = s.current();
    QCOMPARE(s.ghost(), plain->series);
    QVERIFY(s.toggleModule(QStringLiteral("block")));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 3, kTimeout);
    QCOMPARE(s.current()->result, plain->result);
    QCOMPARE(s.current()->config.modules, std::set<std::string>{});
    QCOMPARE(s.ghost(), checkpointed->series);
    QTRY_VERIFY(!s.runs()->busy());
  }

  // Undo and redo walk the history of configurations, each shown by a run (a kept result for
  // one run before); a new change after an undo drops what could be redone; opening another
  // model starts a new history.
  void undoAndRedoWalkTheConfigurations() {
    Session s;
    QSignalSpy finished(&s, &Session::runFinished);
    QSignalSpy history(&s, &Session::historyChanged);
    s.openModel(model_, QStringLiteral("blocks.json"));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kTimeout);
    QVERIFY(!s.canUndo() && !s.canRedo());
    const CheckpointConfig first = s.config();
    QVERIFY(s.toggleModule(QStringLiteral("block")));
    s.setReentrant(!first.use_reentrant);
    const CheckpointConfig third = s.config();
    QVERIFY(s.canUndo() && !s.canRedo());
    s.rerun();  // the same configuration again: not a step of the history
    s.undo();
    QCOMPARE(s.config().use_reentrant, first.use_reentrant);
    QCOMPARE(s.config().modules, std::set<std::string>{"block"});
    s.undo();
    QVERIFY(s.config() == first);
    QVERIFY(!s.canUndo() && s.canRedo());
    s.undo();  // nothing left: no change
    QVERIFY(s.config() == first);
    s.redo();
    s.redo();
    QVERIFY(s.config() == third);
    QVERIFY(!s.canRedo());
    QTRY_VERIFY_WITH_TIMEOUT(!s.runs()->busy(), kTimeout);
    QVERIFY(s.current()->config == third);
    s.undo();
    QVERIFY(s.toggleModule(QStringLiteral("block")));  // a new branch: redo is gone
    QVERIFY(!s.canRedo());
    QVERIFY(history.count() >= 6);
    s.openModel(model_, QStringLiteral("blocks.json"));
    QVERIFY(!s.canUndo() && !s.canRedo());
    QTRY_VERIFY_WITH_TIMEOUT(!s.runs()->busy(), kTimeout);
  }

  // The code is written off the UI thread; of two quick requests, the newer one's text stays.
  void theCodeViewShowsTheNewestConfiguration() {
    CodeView view;
    QSignalSpy updated(&view, &CodeView::codeUpdated);
    CheckpointConfig plain = scenario_config(*model_);
    CheckpointConfig one = plain;
    one.modules = {"block2"};
    view.setConfig(model_, plain);
    view.setConfig(model_, one);
    QTRY_VERIFY_WITH_TIMEOUT(!updated.isEmpty(), kTimeout);
    QTest::qWait(100);
    QCOMPARE(updated.count(), 1);
    const QString expected = QString::fromStdString(pytorch_code(*model_, one));
    QVERIFY(expected.contains(QLatin1String("block2")));
    QCOMPARE(view.toPlainText(), expected);
    QVERIFY(view.toPlainText() != QString::fromStdString(pytorch_code(*model_, plain)));
  }
};

QTEST_MAIN(TestSession)
#include "test_session.moc"
