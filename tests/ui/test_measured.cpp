// A measured PyTorch memory snapshot in the app (issue 29): File ▸ Open Memory Snapshot's
// loading, the Measured dock, and the memory plot's measured curves, alone and over a run.
#include <QtTest>

#include <QCheckBox>
#include <QImage>
#include <QLabel>
#include <QPainter>
#include <QPushButton>
#include <QTemporaryDir>
#include <QTreeWidget>

#include "engine/snapshot/memory_snapshot.hpp"
#include "support/isolated_settings.hpp"
#include "support/wait.hpp"
#include "ui/app/main_window.hpp"
#include "ui/panels/measured_view.hpp"
#include "ui/plot/memory_plot.hpp"

using namespace ckpt;
using namespace ckpt::ui;
using namespace ckpt::ui::test;

namespace {

QString source(const QString& rel) {
  return qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/" + rel;
}
QString resnetSnapshot() {
  return source("tests/engine/data/snapshots/resnet__plain.pickle");
}

// Pixels of the measured curve's colour (light theme) in a render of `model`.
int measuredPixels(const MemoryPlotModel& model) {
  QImage image(900, 320, QImage::Format_RGB32);
  QPainter p(&image);
  MemoryPlotRenderer r;
  r.renderStatic(p, QRectF(0, 0, 900, 320), model);
  p.end();
  int n = 0;
  for (int y = 0; y < image.height(); ++y)
    for (int x = 0; x < image.width(); ++x)
      if (image.pixel(x, y) == qRgb(0xc2, 0x41, 0x0c)) ++n;
  return n;
}

}  // namespace

class TestMeasured : public QObject {
  Q_OBJECT
  QTemporaryDir home_;

 private slots:
  void initTestCase() { isolateSettings(home_, QStringLiteral("test_ui_measured")); }

  // Alone, the plot draws the snapshot's own allocated and reserved bytes on their own scale.
  void plotAlone() {
    const MeasuredTimeline t =
        measure_timeline(read_memory_snapshot(resnetSnapshot().toStdString()));
    auto measured = std::make_shared<MeasuredPlot>();
    measured->allocated = allocated_curve(t, CurveBase::absolute);
    measured->reserved = reserved_curve(t);
    measured->events = static_cast<std::int64_t>(t.allocated.size());
    MemoryPlotModel model;
    QCOMPARE(measuredPixels(model), 0);
    model.measured = measured;
    MemoryPlotRenderer r;
    QVERIFY(MemoryPlotRenderer::measuredOnly(model));
    QCOMPARE(r.stepCount(model), std::int64_t{0});
    QCOMPARE(r.yMax(model), static_cast<std::int64_t>(81788928 * 1.12));
    QVERIFY(measuredPixels(model) > 200);
  }

  void windowOpensASnapshot() {
    MainWindow w;
    w.resize(1400, 900);
    w.show();
    QString error;
    QVERIFY(!w.openSnapshot(source("samples/resnet.json"), &error));
    QVERIFY2(error.contains("resnet.json: byte 0"), qPrintable(error));
    QVERIFY(!w.memoryPlot()->model().measured);

    w.openPath(source("samples/resnet.json"));
    QVERIFY(waitReady(w));
    QVERIFY2(w.openSnapshot(resnetSnapshot(), &error), qPrintable(error));
    const MemoryPlotModel& m = w.memoryPlot()->model();
    QVERIFY(m.measured);
    QVERIFY(!m.measuredAlone);
    // Over the run: above the recording's start, beside the engine's peak.
    QVERIFY(m.measured->comparison);
    QCOMPARE(m.measured->comparison->measured_step_peak, std::int64_t{79668736 - 69206016});
    QCOMPARE(m.measured->comparison->predicted_peak, w.session()->current()->trace().peak().bytes);
    QCOMPARE(m.measured->allocated.peak_bytes, std::int64_t{79668736 - 69206016});
    // Placed on the run's steps by the attributed allocations: the measured peak falls in the
    // backward, as the engine's does.
    const double forwardEnd =
        (static_cast<double>(m.series->forward_end) + 0.5) / m.series->steps();
    QVERIFY2(m.measured->allocated.peak_x > forwardEnd,
             qPrintable(QString::number(m.measured->allocated.peak_x)));

    MeasuredView* view = w.measuredView();
    QVERIFY(view->isVisibleTo(&w));
    QVERIFY2(view->summary()->text().contains("75.98 MiB"), qPrintable(view->summary()->text()));
    QVERIFY(view->summary()->text().contains("attributed to the model"));
    QCOMPARE(view->tree()->topLevelItemCount(), 206);
    // An attributed allocation shows its module in the Inspector.
    QTreeWidgetItem* attributed = nullptr;
    for (int i = 0; i < view->tree()->topLevelItemCount() && !attributed; ++i)
      if (view->tree()->topLevelItem(i)->data(2, Qt::UserRole + 1).toBool())
        attributed = view->tree()->topLevelItem(i);
    QVERIFY(attributed);
    QVERIFY(attributed->childCount() > 0);  // its frames

    // Alone: the snapshot's own curves.
    view->findChild<QCheckBox*>()->setChecked(true);
    QVERIFY(w.memoryPlot()->model().measuredAlone);
    QCOMPARE(w.memoryPlot()->model().measured->allocated.peak_bytes, std::int64_t{79668736});
    QCOMPARE(w.memoryPlot()->model().measured->reserved.peak_bytes, std::int64_t{81788928});

    view->findChild<QPushButton*>()->click();  // Close
    QVERIFY(!w.memoryPlot()->model().measured);
  }
};

QTEST_MAIN(TestMeasured)
#include "test_measured.moc"
