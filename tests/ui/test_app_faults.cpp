// The window survives what goes wrong outside it (issue 17): Graphviz's `dot` missing or
// killed mid-layout (the graph view says so; the plot, the player and the checkpoint toggles
// still work), a recent file that vanished, and a corrupt settings file.

#include <QDockWidget>
#include <QFile>
#include <QLabel>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>

#include "engine/run/runner.hpp"
#include "support/isolated_settings.hpp"
#include "support/test_models.hpp"
#include "support/wait.hpp"
#include "ui/app/main_window.hpp"
#include "ui/graph/graph_view.hpp"
#include "ui/panels/summary_view.hpp"
#include "ui/player/player.hpp"
#include "ui/plot/memory_plot.hpp"

using namespace ckpt;
using namespace ckpt::ui;
using test::waitFor;

namespace {

// A finished real run of the session's current configuration is on the plot.
bool waitRunShown(MainWindow& w) {
  return waitFor([&] {
    auto snap = w.session()->current();
    return snap && !snap->realRunFollows && !w.session()->runs()->busy() &&
           same_run(snap->request, w.session()->request()) && w.memoryPlot()->model().series &&
           w.memoryPlot()->model().series->steps() > 0;
  });
}

}  // namespace

class TestAppFaults : public QObject {
  Q_OBJECT

  QTemporaryDir home_;
  test::ModelFiles models_;

  // Opens the blocks model with `dot` replaced by `program`; the layout must fail with a message
  // containing `why`, and everything that does not need the layout must still work.
  void layoutFailsAndTheRestWorks(const QString& program, const QString& why) {
    MainWindow w;
    w.resize(1440, 900);
    w.show();
    w.session()->layouts()->setDotProgram(program);
    QSignalSpy failed(w.session(), &Session::layoutFailed);
    w.openPath(models_.path(QStringLiteral("blocks.json")));
    QVERIFY(failed.wait(test::kWaitTimeoutMs));
    QVERIFY2(failed.first().at(0).toString().contains(why),
             qPrintable(failed.first().at(0).toString()));
    QVERIFY2(w.graphView()->overlayText().contains(why), qPrintable(w.graphView()->overlayText()));

    // The run does not wait for the layout: its curve is drawn and the player walks it.
    QVERIFY(waitRunShown(w));
    const std::int64_t plainPeak = w.memoryPlot()->model().series->peak_bytes;
    QCOMPARE(w.player()->stepCount(), w.memoryPlot()->model().series->steps());
    w.player()->toEnd();
    QCOMPARE(w.player()->cursor(), w.player()->stepCount() - 1);
    w.player()->stepBack();
    QCOMPARE(w.player()->cursor(), w.player()->stepCount() - 2);

    // Checkpointing a block still reruns the engine: the curve is the engine's for that
    // configuration, with the block recomputed.
    QVERIFY(w.session()->toggleModule(QStringLiteral("block")));
    QVERIFY(waitRunShown(w));
    const auto snap = w.session()->current();
    QCOMPARE(snap->request.plan.modules, std::set<std::string>{"block"});
    const RunResult direct = Runner(w.session()->model()).run(snap->request);
    QVERIFY(direct.ok);
    QVERIFY(direct.trace.counts().recompute > 0);
    QCOMPARE(w.memoryPlot()->model().series->peak_bytes, direct.trace.peak().bytes);
    QVERIFY(w.memoryPlot()->model().series->peak_bytes != plainPeak);
    // With CKPTLAB_SCREENSHOT_DIR set, how the window looks without a layout.
    const QString shots = qEnvironmentVariable("CKPTLAB_SCREENSHOT_DIR");
    if (!shots.isEmpty())
      QVERIFY(w.grab().save(QDir(shots).filePath(
          QStringLiteral("layout_failed_%1.png").arg(QTest::currentTestFunction()))));
  }

 private slots:
  void initTestCase() { test::isolateSettings(home_, QStringLiteral("test_ui_app_faults")); }

  void dotMissing() {
    layoutFailsAndTheRestWorks(home_.filePath(QStringLiteral("no-such-dir/dot")),
                               QStringLiteral("could not be started"));
  }

  // A `dot` that reads part of its input and then dies by SIGKILL, as an OOM killer would.
  void dotKilledMidLayout() {
    const QString fake = home_.filePath(QStringLiteral("dot-killed"));
    QFile f(fake);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("#!/bin/sh\nhead -c 64 >/dev/null\nkill -9 $$\n");
    f.close();
    QVERIFY(f.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner));
    layoutFailsAndTheRestWorks(fake, QStringLiteral("crashed"));
  }

  // An allocation that fails in the middle of a run (the ledger told to fail its 40th): the
  // window says which op it was for, as a failed run's, and the next run works.
  void anAllocationFailureMidRunIsShownAndTheWindowGoesOn() {
    MainWindow w;
    w.resize(1440, 900);
    w.show();
    w.openPath(models_.path(QStringLiteral("blocks.json")));
    QVERIFY(test::waitIdle(w));
    const std::int64_t plainPeak = w.session()->current()->summary.peak.bytes;
    RunRequest faulty = w.session()->request();
    faulty.hooks.fail_allocation_at = 40;
    w.session()->setRequest(faulty);
    QVERIFY(waitRunShown(w));
    const RunSummary& failed = w.session()->current()->summary;
    QVERIFY(!failed.ok);
    QVERIFY2(QString::fromStdString(failed.error).contains(QStringLiteral("allocation")),
             failed.error.c_str());
    const QString summary = w.summaryView()->toPlainText();
    QVERIFY2(summary.contains(QStringLiteral("failed run")), qPrintable(summary));
    QVERIFY2(w.banner()->text().contains(QStringLiteral("allocation")),
             qPrintable(w.banner()->text()));
    RunRequest healthy = faulty;
    healthy.hooks.fail_allocation_at = 0;
    w.session()->setRequest(healthy);
    QVERIFY(waitRunShown(w));
    QVERIFY(w.session()->current()->summary.ok);
    QCOMPARE(w.session()->current()->summary.peak.bytes, plainPeak);
  }

  // A file in Open Recent that was deleted since: a message naming it, and the model that was
  // open stays open and usable.
  void aVanishedFileSaysWhyAndKeepsTheModel() {
    QTemporaryDir dir;
    const QString gone = dir.filePath(QStringLiteral("gone.json"));
    QVERIFY(QFile::copy(models_.path(QStringLiteral("blocks.json")), gone));
    MainWindow w;
    w.resize(1440, 900);
    w.show();
    w.openPath(gone);
    QVERIFY(test::waitIdle(w));
    QVERIFY(w.recentFiles().contains(QFileInfo(gone).absoluteFilePath()));
    QVERIFY(QFile::remove(gone));

    QSignalSpy failed(w.session(), &Session::openFailed);
    w.openPath(gone);
    QVERIFY(failed.wait(test::kWaitTimeoutMs));
    QVERIFY2(failed.first().at(0).toString().contains(QStringLiteral("gone.json")),
             qPrintable(failed.first().at(0).toString()));
    QVERIFY(w.session()->model());
    QVERIFY(w.session()->toggleModule(QStringLiteral("block")));
    QVERIFY(waitRunShown(w));
  }

  // Garbage where the window's settings should be: the window opens at a readable default,
  // and nonsense values (a NaN speed, a negative memory limit, a list that is a number) are
  // ignored, not used.
  void aCorruptSettingsFileIsIgnored() {
    const QString path = QSettings().fileName();
    QVERIFY(QDir().mkpath(QFileInfo(path).absolutePath()));
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    static const char kGarbage[] =
        "[window]\ngeometry=@ByteArray(\x01\x02\xff\xfe garbage)\n"
        "state=@ByteArray(\x00\x00\x00\xff\xff)\n"
        "[player]\nspeed=nan\n"
        "[run]\nmemory_limit=-12345\n"
        "[files]\nrecent=42\n"
        "[view]\ntheme=\xff\xfe\nfollow=maybe\n"
        "\x00\x01\x02 not an ini line at all [[[\n";
    f.write(kGarbage, sizeof kGarbage - 1);
    f.close();

    MainWindow w;
    w.show();
    QVERIFY(std::isfinite(w.player()->speed()));
    QCOMPARE(w.player()->speed(), 1.0);
    QVERIFY(w.session()->runs()->memoryLimit() >= 0);
    QVERIFY(w.width() >= 800 && w.height() >= 500);
    for (auto* dock : w.findChildren<QDockWidget*>()) {
      if (dock->isVisible() && !dock->isFloating() &&
          dock->allowedAreas() & (Qt::LeftDockWidgetArea | Qt::RightDockWidgetArea))
        QVERIFY2(dock->width() >= 200, qPrintable(dock->objectName()));
    }
    w.openPath(models_.path(QStringLiteral("blocks.json")));
    QVERIFY(test::waitIdle(w));
    // The player still plays: it reaches the end at a finite speed.
    w.player()->setSpeed(1000.0);
    w.player()->play();
    QVERIFY(waitFor([&] { return w.player()->cursor() == w.player()->stepCount() - 1; }, 30000));
  }
};

QTEST_MAIN(TestAppFaults)
#include "test_app_faults.moc"
