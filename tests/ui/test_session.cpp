// The Session and its RunController without a window: kept results answer a configuration that
// was run before (same trace, no new run), asynchronously and with balanced busy signals, and
// the ghost logic is the same whether a result was run or kept.

#include <QSignalSpy>
#include <QtTest>

#include "engine/model/loader.hpp"
#include "engine/plan/pytorch_code.hpp"
#include "engine/run/runner.hpp"
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
    RunRequest a = scenario_request(*model_);
    a.plan.modules = {"block"};
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
    // Each compares with the same settings without checkpoints, run the same way by the engine.
    RunRequest plain = a;
    plain.plan = a.plan.without();
    const RunResult plain_run = Runner(model_).run(plain);
    QVERIFY(dry->summary.baseline && real->summary.baseline);
    QCOMPARE(dry->summary.baseline->peak_bytes, plain_run.trace.peak().bytes);
    QCOMPARE(real->summary.baseline->peak_bytes, plain_run.trace.peak().bytes);

    runs.setMemoryLimit(1024);
    a.settings.seed += 1;
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
    RunRequest a = scenario_request(*model_);
    RunRequest b = a;
    b.plan.modules = {"block"};

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
    RunRequest c = a;
    c.settings.seed = a.settings.seed + 1;
    runs.request(c);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 4, kTimeout);
    QVERIFY(lastOf(finished)->result != first->result);
    QVERIFY(lastOf(finished)->result != second->result);
    QTRY_VERIFY(!runs.busy());

    // A kept answer while a run is in flight supersedes it: only the newest is delivered.
    RunRequest d = a;
    d.plan.modules = {"block2"};
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
    QCOMPARE(s.current()->request.plan.modules, std::set<std::string>{});
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
    const RunRequest first = s.request();
    QVERIFY(s.toggleModule(QStringLiteral("block")));
    s.setReentrant(!first.settings.use_reentrant);
    const RunRequest third = s.request();
    QVERIFY(s.canUndo() && !s.canRedo());
    s.rerun();  // the same configuration again: not a step of the history
    s.undo();
    QCOMPARE(s.request().settings.use_reentrant, first.settings.use_reentrant);
    QCOMPARE(s.request().plan.modules, std::set<std::string>{"block"});
    s.undo();
    QVERIFY(same_run(s.request(), first));
    QVERIFY(!s.canUndo() && s.canRedo());
    s.undo();  // nothing left: no change
    QVERIFY(same_run(s.request(), first));
    s.redo();
    s.redo();
    QVERIFY(same_run(s.request(), third));
    QVERIFY(!s.canRedo());
    QTRY_VERIFY_WITH_TIMEOUT(!s.runs()->busy(), kTimeout);
    QVERIFY(same_run(s.current()->request, third));
    s.undo();
    QVERIFY(s.toggleModule(QStringLiteral("block")));  // a new branch: redo is gone
    QVERIFY(!s.canRedo());
    QVERIFY(history.count() >= 6);
    s.openModel(model_, QStringLiteral("blocks.json"));
    QVERIFY(!s.canUndo() && !s.canRedo());
    QTRY_VERIFY_WITH_TIMEOUT(!s.runs()->busy(), kTimeout);
  }

  // The code is written off the UI thread; of two quick requests, the newer one's text stays.
  // Issue 38: "Freeze" opens the file again with the parameters taken as not trainable, and
  // keeps the configuration; freezing again undoes it.
  void freezingReopensTheFileKeepingTheConfiguration() {
    Session session;
    QSignalSpy changed(&session, &Session::modelChanged);
    session.openFile(qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/samples/tiny_resnet.onnx");
    QTRY_COMPARE_WITH_TIMEOUT(changed.count(), 1, kTimeout);
    QVERIFY(session.toggleModule(QStringLiteral("layer2")));
    QVERIFY(session.model()->find_parameter("layer1.0.conv1.weight")->requires_grad);
    QVERIFY(session.toggleFrozen(QStringLiteral("layer1")));
    QTRY_COMPARE_WITH_TIMEOUT(changed.count(), 2, kTimeout);
    QCOMPARE(session.frozen(), std::vector<std::string>{"layer1"});
    QVERIFY(!session.model()->find_parameter("layer1.0.conv1.weight")->requires_grad);
    QVERIFY(session.model()->find_parameter("layer2.0.conv1.weight")->requires_grad);
    QVERIFY(session.isCheckpointed("layer2"));
    QVERIFY(session.toggleFrozen(QStringLiteral("layer1")));
    QTRY_COMPARE_WITH_TIMEOUT(changed.count(), 3, kTimeout);
    QVERIFY(session.frozen().empty());
    QVERIFY(session.model()->find_parameter("layer1.0.conv1.weight")->requires_grad);
    // A pattern that names nothing is refused, saying why; the model stays as it was.
    QSignalSpy said(&session, &Session::message), failed(&session, &Session::openFailed);
    QVERIFY(session.setFrozen({"layer1", "nothing.*"}));
    QTRY_COMPARE_WITH_TIMEOUT(said.count(), 1, kTimeout);
    QVERIFY(said.last().at(0).toString().startsWith("Not frozen: "));
    QVERIFY(said.last().at(0).toString().contains("--frozen 'nothing.*' names no parameter"));
    QCOMPARE(failed.count(), 0);
    QVERIFY(session.frozen().empty());
    QVERIFY(session.model()->find_parameter("layer1.0.conv1.weight")->requires_grad);
    // Another file starts with nothing frozen.
    QVERIFY(session.toggleFrozen(QStringLiteral("fc")));
    QTRY_COMPARE_WITH_TIMEOUT(changed.count(), 4, kTimeout);
    session.openFile(qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/samples/tiny_densenet.onnx");
    QTRY_COMPARE_WITH_TIMEOUT(changed.count(), 5, kTimeout);
    QVERIFY(session.frozen().empty());
    QTRY_VERIFY_WITH_TIMEOUT(!session.runs()->busy(), kTimeout);
  }

  void theCodeViewShowsTheNewestConfiguration() {
    CodeView view;
    QSignalSpy updated(&view, &CodeView::codeUpdated);
    RunRequest plain = scenario_request(*model_);
    RunRequest one = plain;
    one.plan.modules = {"block2"};
    view.setRequest(model_, plain);
    view.setRequest(model_, one);
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
