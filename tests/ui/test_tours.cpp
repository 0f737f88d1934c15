// Guided lessons (Help ▸ Lessons): every bundled lesson runs to its last step on the engine,
// each step's settings are the session's, its caption quotes the figures of the run shown (no
// placeholder left), its cursor lands where it says, Back restores the step before, and the
// keyboard alone drives it. The lessons also say what is true: the reentrant checkpoint over
// inputs without grad fails and the non-reentrant one does not; the blog's HeavyModel saves
// nothing for backward. With CKPTLAB_SCREENSHOT_DIR set, a lesson in large text is written
// there as lesson.png (the README's picture).

#include <QDir>
#include <QDockWidget>
#include <QLabel>
#include <QPushButton>
#include <QTemporaryDir>
#include <QTextBrowser>
#include <QtTest>

#include "engine/run/runner.hpp"
#include "support/isolated_settings.hpp"
#include "support/wait.hpp"
#include "ui/app/main_window.hpp"
#include "ui/core/memory_series.hpp"
#include "ui/panels/inspector.hpp"
#include "ui/panels/tour_view.hpp"
#include "ui/player/player.hpp"
#include "ui/tours/tour_runner.hpp"

using namespace ckpt;
using namespace ckpt::ui;
using test::waitFor;

namespace {

int tourIndex(const QString& id) {
  const QList<Tour>& tours = bundledTours();
  for (int i = 0; i < tours.size(); ++i)
    if (tours[i].id == id) return i;
  return -1;
}

bool waitSettled(MainWindow& w) {
  return waitFor([&] { return w.tourRunner()->settled() && !w.session()->runs()->busy(); });
}

// The step shown agrees with the engine's run: settings, modules, figures, cursor.
void checkStep(MainWindow& w) {
  TourRunner* runner = w.tourRunner();
  const TourStep& step = runner->tour()->steps[runner->stepIndex()];
  const QString where =
      QStringLiteral("%1, step %2").arg(runner->tour()->id).arg(runner->stepIndex() + 1);
  const RunRequest& config = w.session()->request();
  QVERIFY2(same_run(config, runner->expectedRequest()), qPrintable(where));
  for (const std::string& m : config.plan.modules) {
    const Module* module = findModule(w.session()->model()->root, m);
    QVERIFY2(module && module->checkpointable,
             qPrintable(where + QStringLiteral(": ") + QString::fromStdString(m)));
  }
  if (step.modules && !step.modules->count("*"))
    QVERIFY2(config.plan.modules == *step.modules, qPrintable(where));
  const QString caption = w.tourView()->captionText();
  QVERIFY2(!caption.contains(QLatin1Char('{')) && !caption.contains(QStringLiteral("…")),
           qPrintable(where + QStringLiteral(": ") + caption));
  const RunSnapshot& run = *w.session()->current();
  if (step.caption.contains(QStringLiteral("{peak}")))
    QVERIFY2(caption.contains(QString::fromStdString(formatBytes(run.summary.peak.bytes))),
             qPrintable(where + QStringLiteral(": ") + caption));
  // The run without checkpoints that a caption compares with, as the engine runs it.
  if (step.caption.contains(QStringLiteral("{baseline_peak}"))) {
    // Of the shown run's kind: a CUDA step's run is the dry run the engine kept.
    RunRequest asked = runner->expectedRequest();
    asked.settings.dry_run = run.dryRun();
    const RunResult plain = Runner(w.session()->model()).run(baseline_request(asked));
    QVERIFY(plain.ok);
    QCOMPARE(runner->baselinePeak().value_or(0), plain.trace.peak().bytes);
    QVERIFY2(caption.contains(QString::fromStdString(formatBytes(plain.trace.peak().bytes))),
             qPrintable(where + QStringLiteral(": ") + caption));
  }
  if (step.caption.contains(QStringLiteral("{peak_change}")))
    QVERIFY2(caption.contains(QStringLiteral(" less (")) ||
                 caption.contains(QStringLiteral(" more (")) ||
                 caption.contains(QStringLiteral("no change")),
             qPrintable(where + QStringLiteral(": ") + caption));
  const std::int64_t cursor = tourCursorStep(step.cursor, run);
  if (cursor >= 0) QCOMPARE(w.player()->cursor(), cursor);
}

}  // namespace

class TestTours : public QObject {
  Q_OBJECT

  QTemporaryDir home_;

 private slots:
  void initTestCase() { test::isolateSettings(home_, QStringLiteral("test_ui_tours")); }

  void theBundledLessonsCoverTheSeeds() {
    const QList<Tour>& tours = bundledTours();
    for (const char* id : {"densenet-where", "sequential-rng", "no-grad-inputs", "not-to-disk",
                           "heavy-model", "transformer-selective"})
      QVERIFY2(tourIndex(QLatin1String(id)) >= 0, id);
    for (const Tour& t : tours)
      for (const TourStep& s : t.steps)
        QVERIFY2(QFile::exists(QStringLiteral(":/samples/") + s.sample), qPrintable(s.sample));
  }

  void aBadLessonFileNamesTheLessonAndStep() {
    const QByteArray bad = R"({"format": "checkpoint-lab-tours", "tours": [
      {"id": "x", "title": "X", "steps": [
        {"sample": "mlp.json", "caption": "ok"},
        {"caption": "peak {peek}"}]}]})";
    try {
      parseTours(bad, QStringLiteral("my_tours.json"));
      QFAIL("no error");
    } catch (const std::exception& e) {
      const QString what = QString::fromUtf8(e.what());
      QVERIFY2(what.contains(QStringLiteral("my_tours.json")) &&
                   what.contains(QStringLiteral("lesson 'x', step 2")) &&
                   what.contains(QStringLiteral("{peek}")),
               qPrintable(what));
    }
  }

  void eachLessonRunsToItsEnd_data() {
    QTest::addColumn<int>("index");
    const QList<Tour>& tours = bundledTours();
    for (int i = 0; i < tours.size(); ++i) QTest::newRow(qPrintable(tours[i].id)) << i;
  }

  void eachLessonRunsToItsEnd() {
    QFETCH(int, index);
    MainWindow w;
    w.resize(1440, 900);
    w.show();
    w.startTour(index);
    auto* dock = w.findChild<QDockWidget*>(QStringLiteral("tourDock"));
    QVERIFY(dock && dock->isVisible());
    TourRunner* runner = w.tourRunner();
    QList<RunRequest> seen;
    for (int k = 0; k < runner->stepCount(); ++k) {
      QCOMPARE(runner->stepIndex(), k);
      QVERIFY2(waitSettled(w), qPrintable(QStringLiteral("step %1").arg(k + 1)));
      checkStep(w);
      if (QTest::currentTestFailed()) return;
      if (const QString shots = qEnvironmentVariable("CKPTLAB_SCREENSHOT_DIR"); !shots.isEmpty())
        QVERIFY(w.grab().save(QDir(shots).filePath(
            QStringLiteral("%1_step%2.png").arg(runner->tour()->id).arg(k + 1))));
      seen << w.session()->request();
      QCOMPARE(w.tourView()->nextButton()->isEnabled(), k + 1 < runner->stepCount());
      if (k + 1 < runner->stepCount()) w.tourView()->nextButton()->click();
    }
    // Back restores the step before, settings and all.
    if (runner->stepCount() > 1) {
      w.tourView()->backButton()->click();
      QVERIFY(waitSettled(w));
      QVERIFY(same_run(w.session()->request(), seen[seen.size() - 2]));
      checkStep(w);
    }
  }

  // What the lessons must teach is what the engine measures.
  void theLessonsTellTheTruth() {
    MainWindow w;
    w.resize(1440, 900);
    w.show();
    w.startTour(tourIndex(QStringLiteral("no-grad-inputs")));
    TourRunner* runner = w.tourRunner();
    QVERIFY(waitSettled(w));
    runner->next();
    QVERIFY(waitSettled(w));
    QVERIFY2(!w.session()->current()->summary.ok, "reentrant, no input requiring grad");
    QVERIFY2(w.tourView()->captionText().contains(QStringLiteral("the run failed")),
             qPrintable(w.tourView()->captionText()));
    runner->next();
    QVERIFY(waitSettled(w));
    QVERIFY(w.session()->current()->summary.ok);
    QVERIFY2(w.tourView()->captionText().contains(QStringLiteral("the run succeeded")),
             qPrintable(w.tourView()->captionText()));

    // checkpoint_sequential: the segments checkpoint all but the last; without the RNG state
    // the recomputed Dropout differs from the forward, which the engine reports.
    w.startTour(tourIndex(QStringLiteral("sequential-rng")));
    QVERIFY(waitSettled(w));
    QCOMPARE(w.session()->request().settings.batch, std::int64_t(512));
    runner->next();
    QVERIFY(waitSettled(w));
    QCOMPARE(w.session()->current()->summary.checkpoints, std::int64_t(1));
    QVERIFY(w.session()->current()->summary.peak.bytes < *runner->baselinePeak());
    runner->next();
    QVERIFY(waitSettled(w));
    QCOMPARE(w.session()->current()->summary.checkpoints, std::int64_t(3));
    runner->next();
    QVERIFY(waitSettled(w));
    QVERIFY(!w.session()->current()->summary.ok);
    QVERIFY2(w.tourView()->captionText().contains(QStringLiteral("differs from the original")),
             qPrintable(w.tourView()->captionText()));
    runner->next();
    QVERIFY(waitSettled(w));
    QCOMPARE(w.session()->request().settings.batch, std::int64_t(16));
    QVERIFY(w.session()->current()->summary.peak.bytes > *runner->baselinePeak());

    w.startTour(tourIndex(QStringLiteral("heavy-model")));
    QVERIFY(waitSettled(w));
    const RunSummary plain = w.session()->current()->summary;
    QCOMPARE(plain.end_of_forward[static_cast<std::size_t>(MemoryCategory::activation)],
             std::int64_t(0));
    QVERIFY2(w.tourView()->captionText().contains(QStringLiteral("<b>0 B</b> saved")),
             qPrintable(w.tourView()->captionText()));
    runner->next();
    QVERIFY(waitSettled(w));
    QCOMPARE(w.session()->request().plan.modules.size(), std::size_t(1000));
    QVERIFY(w.session()->current()->summary.peak.bytes > plain.peak.bytes);
    // With sin and no RNG state to stash, checkpointing finally pays, as the blog says.
    runner->next();
    QVERIFY(waitSettled(w));
    runner->next();
    QVERIFY(waitSettled(w));
    runner->next();
    QVERIFY(waitSettled(w));
    QVERIFY(!w.session()->request().settings.preserve_rng_state);
    QVERIFY(w.session()->current()->summary.peak.bytes * 10 < *runner->baselinePeak());
  }

  // A teacher at a projector: Page Down and Page Up (a presenter's clicker) drive the lesson,
  // Large text enlarges it, and the sample's Notes link to it.
  void keyboardOnlyAndLargeText() {
    MainWindow w;
    w.resize(1440, 900);
    w.show();
    w.openPath(QStringLiteral(":/samples/densenet_block.json"));
    QVERIFY(test::waitIdle(w));
    auto* notes = w.findChild<QTextBrowser*>();
    QVERIFY(notes);
    QVERIFY2(notes->toHtml().contains(QStringLiteral("lesson:densenet-where")),
             "the Notes link to the lesson");
    w.startTour(tourIndex(QStringLiteral("densenet-where")));
    w.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&w));
    QVERIFY(waitSettled(w));
    const int before = w.tourView()->font().pointSize();
    w.tourView()->setLargeText(true);
    QTest::keyClick(&w, Qt::Key_PageDown);
    QCOMPARE(w.tourRunner()->stepIndex(), 1);
    QVERIFY(waitSettled(w));
    QCOMPARE(w.session()->request().plan.modules, std::set<std::string>{"features.denseblock1"});
    // The step selects the block: the Inspector tells what its checkpoint stashed.
    auto* inspector = w.findChild<Inspector*>();
    QVERIFY(inspector);
    QVERIFY2(inspector->toPlainText().contains(QStringLiteral("RNG state stashed")) &&
                 inspector->toPlainText().contains(QStringLiteral("4.9 KiB")),
             qPrintable(inspector->toPlainText()));
    QTest::keyClick(&w, Qt::Key_PageDown);
    QVERIFY(waitSettled(w));
    QTest::keyClick(&w, Qt::Key_PageUp);
    QCOMPARE(w.tourRunner()->stepIndex(), 1);
    QVERIFY(waitSettled(w));
    QVERIFY(w.tourView()->largeText());
    // A click of the user's own leaves the lesson's settings: the dock says how to return.
    QVERIFY(w.session()->toggleModule(QStringLiteral("features.denseblock2")));
    QVERIFY(w.tourRunner()->deviated());
    bool says = false;
    for (QLabel* l : w.tourView()->findChildren<QLabel*>())
      says = says || l->text().contains(QStringLiteral("you changed the settings"));
    QVERIFY(says);
    QTest::keyClick(&w, Qt::Key_PageDown);
    QVERIFY(waitSettled(w));
    QVERIFY(!w.tourRunner()->deviated());
    QTest::keyClick(&w, Qt::Key_PageUp);
    QVERIFY(waitSettled(w));
    QVERIFY(w.tourView()->font().pointSize() == before);  // the caption grows, not the dock

    const QString shots = qEnvironmentVariable("CKPTLAB_SCREENSHOT_DIR");
    if (!shots.isEmpty()) {
      QTest::qWait(300);  // the graph's states follow the cursor
      QVERIFY(w.grab().save(QDir(shots).filePath(QStringLiteral("lesson.png"))));
    }
    emit w.tourView()->closeRequested();
    QVERIFY(!w.tourRunner()->active());
    QVERIFY(!w.findChild<QDockWidget*>(QStringLiteral("tourDock"))->isVisible());
  }
};

QTEST_MAIN(TestTours)
#include "test_tours.moc"
