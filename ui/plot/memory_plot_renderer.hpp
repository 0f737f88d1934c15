#pragma once

// Draws a run's memory over steps with QPainter: stacked by category, forward/backward bands,
// recompute spans shaded, the peak marked and labelled, the previous configuration's curve as
// a dashed ghost, and the player's cursor. Used by the MemoryPlot widget and, headless, by
// exportMemoryPlot() (the CLI's --plot). No Qt Charts: it is deprecated upstream.

#include <QColor>
#include <QFont>
#include <QRectF>
#include <QSize>
#include <QString>
#include <QStringList>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "engine/trace/snapshot_compare.hpp"
#include "ui/core/memory_series.hpp"
#include "ui/style/palette.hpp"

class QFontMetricsF;
class QPainter;

namespace ckpt::ui {

// A pinned run as the plot draws it: its total bytes as a line in its colour, its peak marked.
struct PlotPin {
  MemorySeriesPtr series;
  QColor colour;
  QString name;
};

// A measured PyTorch memory snapshot as the plot draws it, every figure derived by the engine
// (engine/trace/snapshot_compare.hpp). Without a run: allocated and reserved over the trace's
// events, absolute. Over a run: allocated above the recording's start, on the run's steps
// stretched to the same width, with the comparison of the two peaks.
struct MeasuredPlot {
  QString name;  // the file's name
  OverlayCurve allocated;
  OverlayCurve reserved;  // drawn without a run only
  std::int64_t events = 0;
  std::optional<SnapshotComparison> comparison;  // set when drawn over a run
};
using MeasuredPlotPtr = std::shared_ptr<const MeasuredPlot>;

struct MemoryPlotModel {
  MemorySeriesPtr series;      // the current run
  MemorySeriesPtr ghost;       // the previous configuration's run, may be null
  QString ghostLabel;          // what the ghost was ("no checkpoints"), may be empty
  std::vector<PlotPin> pins;   // the visible pinned runs only
  MeasuredPlotPtr measured;    // a measured snapshot, may be null
  bool measuredAlone = false;  // draw the snapshot alone, the run hidden
  std::int64_t cursor = -1;    // the player's step, -1 for none
  QString title;               // drawn above the legend when not empty
  // Names a step ("conv2d · features.conv0"), for the peak's label; may be empty.
  std::function<QString(std::int64_t step)> stepLabel;
};

// The run-kind banner's parts ("DRY RUN", "exact bytes", ...) joined by " · " into as few lines
// as fit `maxWidth`; a part wider than that on its own is elided.
QStringList bannerLines(const QStringList& parts, const QFontMetricsF& fm, double maxWidth);

class MemoryPlotRenderer {
 public:
  MemoryPlotRenderer();
  void setPalette(const Palette& palette) { palette_ = palette; }
  const Palette& palette() const { return palette_; }
  void setFont(const QFont& font) { font_ = font; }

  // Everything: static layer then overlay.
  void render(QPainter& painter, const QRectF& rect, const MemoryPlotModel& model) const;
  // What does not change when the cursor moves (the widget caches it in a pixmap).
  void renderStatic(QPainter& painter, const QRectF& rect, const MemoryPlotModel& model) const;
  // The cursor line and its value.
  void renderCursor(QPainter& painter, const QRectF& rect, const MemoryPlotModel& model) const;
  // A thin line where the mouse is.
  void renderHover(QPainter& painter, const QRectF& rect, const MemoryPlotModel& model,
                   std::int64_t step) const;

  // The data area inside `rect` (axes, legend and labels excluded).
  QRectF plotArea(const QRectF& rect, const MemoryPlotModel& model) const;
  std::int64_t stepCount(const MemoryPlotModel& model) const;
  static bool measuredOnly(const MemoryPlotModel& m) {
    return m.measured && (m.measuredAlone || !m.series);
  }
  // Step under x (clamped), -1 when there is no data.
  std::int64_t stepAt(double x, const QRectF& rect, const MemoryPlotModel& model) const;
  double xOfStep(std::int64_t step, const QRectF& rect, const MemoryPlotModel& model) const;
  double yOfBytes(std::int64_t bytes, const QRectF& rect, const MemoryPlotModel& model) const;
  std::int64_t yMax(const MemoryPlotModel& model) const;

 private:
  // memory_plot_axes.cpp
  void drawAxes(QPainter& p, const QRectF& area, const MemoryPlotModel& m) const;
  void drawBands(QPainter& p, const QRectF& area, const MemoryPlotModel& m) const;
  void drawBandLabels(QPainter& p, const QRectF& area, const MemoryPlotModel& m) const;
  // memory_plot_stack.cpp
  void drawStack(QPainter& p, const QRectF& area, const MemoryPlotModel& m) const;
  void drawGhost(QPainter& p, const QRectF& area, const MemoryPlotModel& m) const;
  void drawReserved(QPainter& p, const QRectF& area, const MemoryPlotModel& m) const;
  void drawLegend(QPainter& p, const QRectF& rect, const MemoryPlotModel& m) const;
  struct LegendItem {
    QString text;
    std::function<void(QPainter&, const QRectF&)> swatch;
  };
  std::vector<LegendItem> legendItems(const MemoryPlotModel& m) const;
  // Each item's box (a null one: no room to draw it).
  std::vector<QRectF> legendLayout(const QRectF& rect, const MemoryPlotModel& m,
                                   const std::vector<LegendItem>& items) const;
  // The category legend's rows (one, or two for a sharded run's bands).
  double legendHeight(const QRectF& rect, const MemoryPlotModel& m) const;
  // memory_plot_annotations.cpp
  void drawPeak(QPainter& p, const QRectF& area, const MemoryPlotModel& m) const;
  void drawGhostPeak(QPainter& p, const QRectF& area, const MemoryPlotModel& m) const;
  void drawRunKind(QPainter& p, const QRectF& area, const MemoryPlotModel& m) const;
  struct RunKindBanner {
    QStringList lines;  // empty: no banner
    QRectF box;
    QFont font;
  };
  RunKindBanner runKindBanner(const QRectF& area, const MemoryPlotModel& m) const;
  // memory_plot_measured.cpp
  void renderMeasuredOnly(QPainter& p, const QRectF& rect, const MemoryPlotModel& m) const;
  void drawMeasured(QPainter& p, const QRectF& area, const MemoryPlotModel& m) const;
  void drawMeasuredPeak(QPainter& p, const QRectF& area, const MemoryPlotModel& m,
                        const OverlayCurve& curve, const QColor& colour, const QString& label,
                        bool below) const;
  void drawMeasuredPath(QPainter& p, const QRectF& area, const MemoryPlotModel& m,
                        const OverlayCurve& curve, const QPen& pen, bool fill) const;
  // memory_plot_pins.cpp
  void drawPins(QPainter& p, const QRectF& area, const MemoryPlotModel& m) const;
  // Over the current run's peak label, which would hide a pinned peak near it.
  void drawPinPeaks(QPainter& p, const QRectF& area, const MemoryPlotModel& m) const;
  void drawPinLegend(QPainter& p, const QRectF& rect, const MemoryPlotModel& m) const;
  // The pins' legend entries, flowed in rows under the category legend: names as long as a
  // configuration's need room of their own, which the plot area gives up.
  struct PinLegendEntry {
    QRectF box;
    QString text;
    std::size_t pin = 0;
  };
  std::vector<PinLegendEntry> pinLegend(const QRectF& rect, const MemoryPlotModel& m) const;
  double pinLegendHeight(const QRectF& rect, const MemoryPlotModel& m) const;

  Palette palette_;
  QFont font_;
};

// Writes the plot to `path`: .png (QImage, at `size` pixels) or .svg (QSvgGenerator). Needs a
// QGuiApplication (the CLI can run one on the offscreen platform). On failure returns false
// and sets *error to a message naming the file. In memory_plot_export.cpp.
bool exportMemoryPlot(const QString& path, const MemoryPlotModel& model, QSize size = {1200, 480},
                      const Palette& palette = Palette::light(), QString* error = nullptr);
// Convenience for the CLI: the plot of `trace`, with `ghost` (may be null) as the previous run.
bool exportMemoryPlot(const QString& path, const Trace& trace, const Trace* ghost = nullptr,
                      QSize size = {1200, 480}, QString* error = nullptr);

}  // namespace ckpt::ui
