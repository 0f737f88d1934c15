// The Ranks control (issue 39): a user picks a number of GPUs, reshard-after-forward and the
// reduce dtype beside Device; the plot's curve, its bands, the summary and the Plan dock then
// show one FSDP2 rank, with the very figures the engine's per-rank model gives for the run.

#include <QAction>
#include <QComboBox>
#include <QImage>
#include <QLineEdit>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "engine/report/fsdp_memory.hpp"
#include "engine/run/runner.hpp"
#include "support/isolated_settings.hpp"
#include "support/wait.hpp"
#include "ui/app/main_window.hpp"
#include "ui/panels/plan_view.hpp"
#include "ui/panels/summary_view.hpp"
#include "ui/plot/memory_plot.hpp"
#include "ui/plot/memory_plot_renderer.hpp"
#include "ui/session/session.hpp"

using namespace ckpt;
using namespace ckpt::ui;

namespace {

QString sample(const char* name) {
  return qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + QStringLiteral("/samples/") +
         QLatin1String(name);
}

// The current configuration's run, once it has these FSDP settings and nothing is pending.
bool waitFsdp(MainWindow& w, const FsdpSettings& fsdp) {
  return test::waitFor([&] {
    auto snap = w.session()->current();
    return snap && snap->request.settings.fsdp == fsdp && !snap->realRunFollows &&
           !w.session()->runs()->busy() && same_run(snap->request, w.session()->request());
  });
}

// Whether `colour` fills a few pixels of the plot (a band or its legend swatch).
bool plotShows(MainWindow& w, const QColor& colour) {
  const QImage img = w.memoryPlot()->grab().toImage();
  int hits = 0;
  for (int y = 0; y < img.height(); ++y)
    for (int x = 0; x < img.width(); ++x)
      if (img.pixelColor(x, y).rgb() == colour.rgb()) ++hits;
  return hits > 20;
}

}  // namespace

class TestRanks : public QObject {
  Q_OBJECT
  QTemporaryDir home_;

 private slots:
  void initTestCase() { test::isolateSettings(home_, QStringLiteral("test_ui_ranks")); }

  void ranksShowOneRank() {
    MainWindow w;
    w.resize(1366, 768);
    w.show();
    w.openPath(sample("llama_mini.json"));
    QVERIFY(test::waitIdle(w));
    QVERIFY(!w.session()->current()->summary.per_rank);
    QVERIFY(!w.memoryPlot()->model().series->per_rank);
    const Palette pal = Palette::forApplication();
    const QColor gathered = pal.rankCategory(FsdpCategory::unsharded_parameters);
    QVERIFY(!plotShows(w, gathered));

    auto* ranks = w.findChild<QComboBox*>(QStringLiteral("ranksBox"));
    QVERIFY(ranks && ranks->isEnabled() && ranks->isEditable());
    QCOMPARE(ranks->currentText(), QStringLiteral("none"));
    // A listed number: 4 GPUs.
    ranks->setCurrentIndex(ranks->findText(QStringLiteral("4")));
    FsdpSettings fsdp;
    fsdp.ranks = 4;
    QVERIFY(waitFsdp(w, fsdp));
    auto snap = w.session()->current();
    QVERIFY(snap->summary.per_rank);
    QCOMPARE(snap->summary.per_rank->ranks, 4);
    // One definition: the engine's per-rank model of the run's own trace.
    const FsdpRankMemory m =
        fsdp_rank_memory(*w.session()->model(), snap->trace(), snap->request.settings);
    QCOMPARE(snap->summary.per_rank->peak_bytes, m.peak_bytes);
    const MemorySeries& series = *w.memoryPlot()->model().series;
    QVERIFY(series.per_rank);
    QCOMPARE(series.peak_bytes, m.peak_bytes);
    QCOMPARE(series.totals, m.timeline.totals);
    // The plot draws the rank's bands (the gathered blocks' colour appears), the summary says
    // that the figures are modelled.
    QVERIFY(plotShows(w, gathered));
    const QString summary = w.findChild<SummaryView*>()->toPlainText();
    QVERIFY2(summary.contains(QStringLiteral("peak per rank")), qPrintable(summary));
    QVERIFY(summary.contains(QString::fromLatin1(kFsdpNotMeasured)));
    QVERIFY(summary.contains(QStringLiteral("gathered parameters")));
    QVERIFY(w.planView()->statusText().contains(QStringLiteral("per rank of 4")));
    const std::int64_t fourRanks = m.peak_bytes;

    // Any N, typed: 3 GPUs hold more each.
    ranks->lineEdit()->selectAll();
    QTest::keyClicks(ranks->lineEdit(), QStringLiteral("3"));
    QTest::keyClick(ranks->lineEdit(), Qt::Key_Return);
    fsdp.ranks = 3;
    QVERIFY(waitFsdp(w, fsdp));
    QCOMPARE(w.session()->current()->summary.per_rank->ranks, 3);
    QVERIFY(w.memoryPlot()->model().series->peak_bytes > fourRanks);

    // Keeping the gathered blocks to the backward costs memory; the reduce dtype is sent.
    auto* reshard = w.findChild<QAction*>(QStringLiteral("reshardAction"));
    auto* reduceBf16 = w.findChild<QAction*>(QStringLiteral("reduceBf16Action"));
    QVERIFY(reshard && reduceBf16 && reshard->isChecked() && !reduceBf16->isChecked());
    const std::int64_t resharded = w.memoryPlot()->model().series->peak_bytes;
    reshard->trigger();
    fsdp.reshard_after_forward = false;
    QVERIFY(waitFsdp(w, fsdp));
    QVERIFY(w.memoryPlot()->model().series->peak_bytes > resharded);
    reduceBf16->trigger();
    fsdp.reduce_dtype = DType::bf16;
    QVERIFY(waitFsdp(w, fsdp));
    QVERIFY(w.session()->current()->summary.per_rank->settings.reduce_dtype == DType::bf16);

    // The Plan dock plans per rank: its plain run's peak is the rank's.
    QSignalSpy planned(w.planView(), &PlanView::planningFinished);
    w.planView()->startPlanning();
    QVERIFY(planned.wait(test::kWaitTimeoutMs));
    QVERIFY(w.planView()->results() && w.planView()->results()->error.empty());
    RunRequest plain = w.session()->request();
    plain.plan = CheckpointPlan{};
    plain.settings.dry_run = true;
    const RunResult plainRun = Runner(w.session()->model()).run(plain);
    QVERIFY(plainRun.ok);
    QCOMPARE(w.planView()->results()->plain_peak,
             fsdp_rank_memory(*w.session()->model(), plainRun.trace, plain.settings).peak_bytes);

    // None: one unsharded GPU again.
    ranks->setCurrentIndex(ranks->findText(QStringLiteral("none")));
    fsdp.ranks = 0;
    QVERIFY(waitFsdp(w, fsdp));
    QVERIFY(!w.session()->current()->summary.per_rank);
    QVERIFY(!w.memoryPlot()->model().series->per_rank);
  }
};

QTEST_MAIN(TestRanks)
#include "test_ranks.moc"
