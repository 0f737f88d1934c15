// MemoryPlotRenderer: a measured PyTorch memory snapshot. Alone, its allocated bytes (filled)
// and reserved bytes (a line) over the trace's events with both peaks marked; over a run, its
// allocated bytes above the recording's start as a line across the run's width, its peak
// marked beside the run's, and the difference of the two written out.

#include <QFontMetricsF>
#include <QObject>
#include <QPainter>
#include <QPainterPath>
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "ui/plot/memory_plot_renderer.hpp"
#include "ui/plot/plot_scale.hpp"

namespace ckpt::ui {

using plot_scale::bytesText;
using plot_scale::niceStep;

namespace {

// The measured curve's own colour: apart from the categories', readable on both themes.
QColor measuredColour(const Palette& pal) {
  return pal.isDark ? QColor(0xff, 0x9e, 0x4a) : QColor(0xc2, 0x41, 0x0c);
}

QString signedBytes(std::int64_t v) {
  return (v > 0   ? QStringLiteral("+")
          : v < 0 ? QStringLiteral("−")
                  : QString()) +
         bytesText(std::llabs(v));
}

}  // namespace

// One point per pixel column at most (the column's highest value, so no peak is lost).
void MemoryPlotRenderer::drawMeasuredPath(QPainter& p, const QRectF& area, const MemoryPlotModel& m,
                                          const OverlayCurve& c, const QPen& pen, bool fill) const {
  if (c.x.empty()) return;
  const double top = static_cast<double>(yMax(m));
  auto yOf = [&](std::int64_t b) {
    return area.bottom() - area.height() * static_cast<double>(b) / top;
  };
  QPainterPath path;
  path.moveTo(area.left() + c.x.front() * area.width(), yOf(c.bytes.front()));
  int column = -1;
  std::int64_t high = 0;
  double lastY = yOf(c.bytes.front());
  for (std::size_t i = 0; i < c.x.size(); ++i) {
    const double x = area.left() + c.x[i] * area.width();
    const int col = static_cast<int>(std::floor(x));
    if (col != column && column >= 0) {
      // A step curve: the level holds until the next event.
      path.lineTo(x, lastY);
      lastY = yOf(high);
      path.lineTo(x, lastY);
      high = 0;
    }
    column = col;
    high = std::max(high, c.bytes[i]);
  }
  path.lineTo(area.right(), lastY);
  lastY = yOf(high);
  path.lineTo(area.right(), lastY);
  if (fill) {
    QPainterPath area_path = path;
    area_path.lineTo(area.right(), area.bottom());
    area_path.lineTo(area.left(), area.bottom());
    area_path.closeSubpath();
    QColor f = pen.color();
    f.setAlphaF(0.22);
    p.fillPath(area_path, f);
  }
  p.setPen(pen);
  p.setBrush(Qt::NoBrush);
  p.drawPath(path);
}

void MemoryPlotRenderer::drawMeasuredPeak(QPainter& p, const QRectF& area, const MemoryPlotModel& m,
                                          const OverlayCurve& c, const QColor& colour,
                                          const QString& label, bool below) const {
  QFontMetricsF fm(font_);
  const double x = area.left() + c.peak_x * area.width();
  const double y = area.bottom() -
                   area.height() * static_cast<double>(c.peak_bytes) / static_cast<double>(yMax(m));
  QColor level = colour;
  level.setAlphaF(0.7);
  p.setPen(QPen(level, 1, Qt::DotLine));
  p.drawLine(QPointF(area.left(), y), QPointF(area.right(), y));
  p.setPen(QPen(palette_.background, 1.5));
  p.setBrush(colour);
  p.drawRect(QRectF(x - 4, y - 4, 8, 8));
  // Over a run the engine's peak label sits where this one would; the figure is written under
  // the axis instead.
  if (label.isEmpty()) return;
  const double w = fm.horizontalAdvance(label) + 12;
  const double bx = std::clamp(x - w / 2, area.left(), area.right() - w);
  const double by = below ? std::min(y + 8, area.bottom() - 18) : std::max(area.top(), y - 24);
  const QRectF box(bx, by, w, 17);
  QColor back = palette_.background;
  back.setAlphaF(0.88);
  p.setPen(QPen(colour, 1));
  p.setBrush(back);
  p.drawRoundedRect(box, 3, 3);
  p.setPen(colour);
  p.drawText(box, Qt::AlignCenter, label);
}

void MemoryPlotRenderer::drawMeasured(QPainter& p, const QRectF& area,
                                      const MemoryPlotModel& m) const {
  if (!m.measured || !m.series) return;
  const MeasuredPlot& mp = *m.measured;
  const QColor colour = measuredColour(palette_);
  drawMeasuredPath(p, area, m, mp.allocated, QPen(colour, 1.8), false);
  drawMeasuredPeak(p, area, m, mp.allocated, colour, QString(), true);
  if (!mp.comparison) return;
  // The comparison, under the axis on the left (the axis' own title is on the right): both
  // peaks and their difference.
  const SnapshotComparison& c = *mp.comparison;
  const QString text = QObject::tr("measured %1 above start · predicted %2 · %3 (%4×)")
                           .arg(bytesText(c.measured_step_peak), bytesText(c.predicted_step_peak),
                                signedBytes(c.difference))
                           .arg(c.ratio, 0, 'f', 2);
  QFontMetricsF fm(font_);
  const QRectF box(area.left() + 22, area.bottom() + 15, std::max(40.0, area.width() - 165), 14);
  p.setPen(QPen(colour, 2));
  p.drawLine(QPointF(area.left(), box.center().y()), QPointF(area.left() + 16, box.center().y()));
  p.setPen(palette_.text);
  p.drawText(box, Qt::AlignVCenter | Qt::AlignLeft,
             fm.elidedText(text, Qt::ElideMiddle, box.width()));
}

void MemoryPlotRenderer::renderMeasuredOnly(QPainter& p, const QRectF& rect,
                                            const MemoryPlotModel& m) const {
  const MeasuredPlot& mp = *m.measured;
  const QRectF area = plotArea(rect, m);
  drawAxes(p, area, m);
  QFontMetricsF fm(font_);
  // Events along the bottom.
  const double n = static_cast<double>(std::max<std::int64_t>(1, mp.events));
  const double xstep = std::max(1.0, niceStep(n, std::max(2, int(area.width() / 90))));
  for (double e = 0; e <= n; e += xstep) {
    const double x = area.left() + e / n * area.width();
    p.setPen(QPen(palette_.grid, 1));
    p.drawLine(QPointF(x, area.bottom()), QPointF(x, area.bottom() + 4));
    p.setPen(palette_.mutedText);
    p.drawText(QRectF(x - 40, area.bottom() + 4, 80, 14), Qt::AlignHCenter | Qt::AlignTop,
               QString::number(static_cast<qint64>(e)));
  }
  p.drawText(QRectF(area.right() - 300, area.bottom() + 15, 300, 14), Qt::AlignRight | Qt::AlignTop,
             QObject::tr("event of the snapshot's trace (alloc, free, segment)"));
  const QColor colour = measuredColour(palette_);
  drawMeasuredPath(p, area, m, mp.reserved, QPen(palette_.mutedText, 1.4, Qt::DashLine), false);
  drawMeasuredPath(p, area, m, mp.allocated, QPen(colour, 1.6), true);
  drawMeasuredPeak(p, area, m, mp.reserved, palette_.mutedText,
                   QObject::tr("reserved peak %1").arg(bytesText(mp.reserved.peak_bytes)), false);
  drawMeasuredPeak(p, area, m, mp.allocated, colour,
                   QObject::tr("allocated peak %1").arg(bytesText(mp.allocated.peak_bytes)), true);
  // The legend row.
  double x = rect.left() + 10;
  const double y = rect.top() + (m.title.isEmpty() ? 0 : plot_scale::kTitleHeight) + 4;
  const auto entry = [&](const QColor& c, Qt::PenStyle style, const QString& label) {
    p.setPen(QPen(c, 2, style));
    p.drawLine(QPointF(x, y + 7), QPointF(x + 16, y + 7));
    p.setPen(palette_.text);
    p.drawText(QRectF(x + 20, y, fm.horizontalAdvance(label) + 4, 14), Qt::AlignVCenter, label);
    x += 32 + fm.horizontalAdvance(label);
  };
  entry(colour, Qt::SolidLine, QObject::tr("allocated (measured, %1)").arg(mp.name));
  entry(palette_.mutedText, Qt::DashLine, QObject::tr("reserved (the allocator's segments)"));
}

}  // namespace ckpt::ui
