#include <QFileInfo>
#include <QImage>
#include <QPainter>
#include <QTemporaryDir>
#include <QtTest>

#include "engine/report/run_summary.hpp"
#include "ui/plot/memory_plot_renderer.hpp"

using namespace ckpt;
using namespace ckpt::ui;

namespace {

// A hand-made series: activations grow through the forward, fall in backward; a recompute
// span in the middle of the backward.
std::shared_ptr<MemorySeries> makeSeries(std::int64_t steps, std::int64_t spikeAt = -1) {
  auto s = std::make_shared<MemorySeries>();
  const std::int64_t fwd = steps / 2;
  for (std::int64_t k = 0; k < steps; ++k) {
    CategoryBytes b{};
    b[static_cast<std::size_t>(MemoryCategory::parameter)] = 1000;
    const std::int64_t act = k <= fwd ? 100 * k : 100 * (steps - k);
    b[static_cast<std::size_t>(MemoryCategory::activation)] = act;
    if (k == spikeAt) b[static_cast<std::size_t>(MemoryCategory::temporary)] = 1'000'000;
    std::int64_t total = 0;
    for (auto v : b) total += v;
    s->bytes.push_back(b);
    s->totals.push_back(total);
    s->phases.push_back(k <= fwd ? Phase::forward : Phase::backward);
    for (std::size_t c = 0; c < kMemoryCategoryCount; ++c)
      s->max_by_category[c] = std::max(s->max_by_category[c], b[c]);
    if (total > s->peak_bytes) {
      s->peak_bytes = total;
      s->peak_step = k;
      s->peak_by_category = b;
    }
  }
  s->forward_end = fwd;
  s->recomputes.push_back({fwd + 5, fwd + 15, "block"});
  return s;
}

int differingPixels(const QImage& a, const QImage& b) {
  int n = 0;
  for (int y = 0; y < a.height(); ++y)
    for (int x = 0; x < a.width(); ++x) n += a.pixel(x, y) != b.pixel(x, y) ? 1 : 0;
  return n;
}

QImage render(const MemoryPlotModel& m, QSize size = {800, 300}) {
  QImage img(size, QImage::Format_ARGB32);
  QPainter p(&img);
  MemoryPlotRenderer r;
  r.render(p, QRectF(QPointF(0, 0), QSizeF(size)), m);
  return img;
}

}  // namespace

class TestPlot : public QObject {
  Q_OBJECT

 private slots:
  void formatsBytesAsTheCli() {
    QCOMPARE(formatBytes(96), std::string("96 B"));
    QCOMPARE(formatBytes(5056), std::string("4.9 KiB"));
    QCOMPARE(formatBytes(12 * 1024 * 1024 + 400 * 1024), std::string("12.39 MiB"));
    QCOMPARE(formatBytes(12 * 1024 * 1024 + 400 * 1024),
             format_bytes(12 * 1024 * 1024 + 400 * 1024));
  }

  void decimationKeepsEveryStepAndThePeak() {
    // A HeavyModel-sized trace: 300,000 steps into 1,000 columns, one single-step spike.
    auto s = makeSeries(300'000, 123'457);
    auto cols = decimate(*s, 0, s->steps(), 1000);
    QCOMPARE(cols.size(), std::size_t(1000));
    std::int64_t covered = 0, next = 0;
    std::int64_t best = 0;
    for (const auto& c : cols) {
      QCOMPARE(c.firstStep, next);
      next = c.lastStep + 1;
      covered += c.lastStep - c.firstStep + 1;
      QVERIFY(c.minTotal <= c.maxTotal);
      best = std::max(best, c.maxTotal);
    }
    QCOMPARE(covered, s->steps());
    QCOMPARE(best, s->peak_bytes);
    // Fewer steps than columns: one column per step.
    auto few = decimate(*makeSeries(10), 0, 10, 1000);
    QCOMPARE(few.size(), std::size_t(10));
    QCOMPARE(few[3].firstStep, few[3].lastStep);
    QVERIFY(decimate(*s, 5, 5, 100).empty());
  }

  void geometryRoundTrips() {
    MemoryPlotModel m;
    m.series = makeSeries(200);
    MemoryPlotRenderer r;
    const QRectF rect(0, 0, 900, 320);
    const QRectF area = r.plotArea(rect, m);
    QVERIFY(area.width() > 600 && area.height() > 150);
    for (std::int64_t k : {0, 1, 57, 199}) QCOMPARE(r.stepAt(r.xOfStep(k, rect, m), rect, m), k);
    QCOMPARE(r.stepAt(-100, rect, m), std::int64_t(0));
    QCOMPARE(r.stepAt(5000, rect, m), std::int64_t(199));
    QVERIFY(r.yOfBytes(m.series->peak_bytes, rect, m) > area.top());
    QCOMPARE(r.yOfBytes(0, rect, m), area.bottom());
  }

  void drawsTheCurveTheGhostAndTheCursor() {
    MemoryPlotModel m;
    m.series = makeSeries(200);
    const QImage plain = render(m);
    // The peak column is painted with the activation colour somewhere below the peak.
    MemoryPlotRenderer r;
    const QRectF rect(0, 0, 800, 300);
    const double x = r.xOfStep(m.series->peak_step, rect, m);
    const double y = (r.yOfBytes(m.series->peak_bytes, rect, m) + r.yOfBytes(1000, rect, m)) / 2;
    QCOMPARE(QColor(plain.pixel(int(x), int(y))).name(),
             Palette::light().category(MemoryCategory::activation).name());

    MemoryPlotModel withGhost = m;
    withGhost.ghost = makeSeries(150);
    QVERIFY(differingPixels(plain, render(withGhost)) > 100);
    MemoryPlotModel withCursor = m;
    withCursor.cursor = 20;
    QVERIFY(differingPixels(plain, render(withCursor)) > 50);
    // An empty model says so instead of drawing axes.
    MemoryPlotModel empty;
    QVERIFY(!render(empty).isNull());
  }

  // The CUDA device's banner is long: on a narrow plot it wraps between its parts, and no line
  // is wider than the room it is given (it was cut at the plot's right edge).
  void runKindBannerWrapsToTheRoomItHas() {
    QFont bold;
    bold.setBold(true);
    const QFontMetricsF fm(bold);
    const QStringList parts{"DRY RUN", "exact bytes", "estimated times",
                            "memory as PyTorch 2.x on an NVIDIA GPU (CUDA) holds it"};
    const QString oneLine = parts.join(QStringLiteral(" · "));
    QCOMPARE(bannerLines(parts, fm, fm.horizontalAdvance(oneLine) + 1), QStringList{oneLine});
    for (const double room : {400.0, 250.0, 120.0, 40.0}) {
      const QStringList lines = bannerLines(parts, fm, room);
      QVERIFY(lines.size() > 1);
      for (const QString& line : lines)
        QVERIFY2(fm.horizontalAdvance(line) <= room + 0.5,
                 qPrintable(QStringLiteral("%1 px wide in %2: %3")
                                .arg(fm.horizontalAdvance(line))
                                .arg(room)
                                .arg(line)));
    }
    // Wide enough for each part: every part is whole, in order, on some line.
    const QString wrapped = bannerLines(parts, fm, 600).join(QStringLiteral(" · "));
    QCOMPARE(wrapped, oneLine);
  }

  void exportsPngAndSvg() {
    QTemporaryDir dir;
    MemoryPlotModel m;
    m.series = makeSeries(500);
    m.ghost = makeSeries(300);
    m.title = QStringLiteral("test");
    QString error;
    const QString png = dir.filePath(QStringLiteral("plot.png"));
    const QString svg = dir.filePath(QStringLiteral("plot.svg"));
    QVERIFY2(exportMemoryPlot(png, m, {1000, 400}, Palette::light(), &error), qPrintable(error));
    QVERIFY2(exportMemoryPlot(svg, m, {1000, 400}, Palette::dark(), &error), qPrintable(error));
    // Keep a copy to look at: CKPTLAB_UI_ARTIFACTS=/some/dir ctest -R test_ui_plot
    if (const QString keep = qEnvironmentVariable("CKPTLAB_UI_ARTIFACTS"); !keep.isEmpty())
      exportMemoryPlot(QDir(keep).filePath(QStringLiteral("test_plot.png")), m, {1000, 400},
                       Palette::light());
    QVERIFY(QFileInfo(png).size() > 1000);
    QVERIFY(QFileInfo(svg).size() > 1000);
    QCOMPARE(QImage(png).size(), QSize(1000, 400));
    QFile f(svg);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QVERIFY(f.readAll().contains("<svg"));
    QVERIFY(!exportMemoryPlot(dir.filePath(QStringLiteral("plot.bmpx")), m, {1000, 400},
                              Palette::light(), &error));
    QVERIFY(error.contains(QStringLiteral("plot.bmpx")));
    QVERIFY(!exportMemoryPlot(QStringLiteral("/nonexistent/dir/plot.png"), m, {1000, 400},
                              Palette::light(), &error));
  }
};

QTEST_MAIN(TestPlot)
#include "test_plot.moc"
