// MemoryPlotRenderer: the plot's geometry (its area, steps and bytes to pixels), the order in
// which the static layer is drawn, and the overlays that follow the mouse and the cursor. The
// layers themselves are in memory_plot_axes.cpp, memory_plot_stack.cpp,
// memory_plot_annotations.cpp and memory_plot_pins.cpp.

#include "ui/plot/memory_plot_renderer.hpp"

#include <QFontMetricsF>
#include <QObject>
#include <QPainter>
#include <algorithm>
#include <cmath>

#include "ui/plot/plot_scale.hpp"

namespace ckpt::ui {

using plot_scale::kBottomMargin;
using plot_scale::kLegendHeight;
using plot_scale::kRightMargin;
using plot_scale::kTitleHeight;
using plot_scale::unitFor;
using plot_scale::unitName;

MemoryPlotRenderer::MemoryPlotRenderer() : palette_(Palette::light()) {
  font_.setPointSizeF(8.5);
}

std::int64_t MemoryPlotRenderer::stepCount(const MemoryPlotModel& m) const {
  if (measuredOnly(m)) return 0;  // the snapshot's events are its own axis
  std::int64_t n = m.series ? m.series->steps() : 0;
  if (m.ghost) n = std::max(n, m.ghost->steps());
  for (const PlotPin& pin : m.pins)
    if (pin.series) n = std::max(n, pin.series->steps());
  return n;
}

std::int64_t MemoryPlotRenderer::yMax(const MemoryPlotModel& m) const {
  if (measuredOnly(m))
    return std::max<std::int64_t>(
        16,
        static_cast<std::int64_t>(static_cast<double>(std::max(m.measured->allocated.peak_bytes,
                                                               m.measured->reserved.peak_bytes)) *
                                  1.12));
  std::int64_t top = m.series ? m.series->max_total() : 0;
  if (m.ghost) top = std::max(top, m.ghost->max_total());
  for (const PlotPin& pin : m.pins)
    if (pin.series) top = std::max(top, pin.series->max_total());
  if (m.measured) top = std::max(top, m.measured->allocated.peak_bytes);
  // Headroom for the peak's label.
  return std::max<std::int64_t>(16, static_cast<std::int64_t>(static_cast<double>(top) * 1.16));
}

QRectF MemoryPlotRenderer::plotArea(const QRectF& rect, const MemoryPlotModel& m) const {
  QFontMetricsF fm(font_);
  const double unit = unitFor(yMax(m));
  const QString widest = QStringLiteral("%1 %2")
                             .arg(static_cast<double>(yMax(m)) / unit, 0, 'f', 1)
                             .arg(QLatin1String(unitName(unit)));
  const double left = fm.horizontalAdvance(widest) + 14;
  const double top =
      legendHeight(rect, m) + (m.title.isEmpty() ? 0 : kTitleHeight) + pinLegendHeight(rect, m) + 6;
  return rect.adjusted(left, top, -kRightMargin, -kBottomMargin);
}

double MemoryPlotRenderer::xOfStep(std::int64_t step, const QRectF& rect,
                                   const MemoryPlotModel& m) const {
  const QRectF a = plotArea(rect, m);
  const std::int64_t n = std::max<std::int64_t>(1, stepCount(m));
  return a.left() + (static_cast<double>(step) + 0.5) * a.width() / static_cast<double>(n);
}

double MemoryPlotRenderer::yOfBytes(std::int64_t bytes, const QRectF& rect,
                                    const MemoryPlotModel& m) const {
  const QRectF a = plotArea(rect, m);
  return a.bottom() - a.height() * static_cast<double>(bytes) / static_cast<double>(yMax(m));
}

std::int64_t MemoryPlotRenderer::stepAt(double x, const QRectF& rect,
                                        const MemoryPlotModel& m) const {
  const std::int64_t n = stepCount(m);
  if (n == 0) return -1;
  const QRectF a = plotArea(rect, m);
  const double f = (x - a.left()) / std::max(1.0, a.width());
  return std::clamp<std::int64_t>(static_cast<std::int64_t>(std::floor(f * static_cast<double>(n))),
                                  0, n - 1);
}

void MemoryPlotRenderer::render(QPainter& p, const QRectF& rect, const MemoryPlotModel& m) const {
  renderStatic(p, rect, m);
  renderCursor(p, rect, m);
}

void MemoryPlotRenderer::renderStatic(QPainter& p, const QRectF& rect,
                                      const MemoryPlotModel& m) const {
  p.save();
  p.setFont(font_);
  p.fillRect(rect, palette_.background);
  p.setRenderHint(QPainter::Antialiasing, true);
  if (!m.title.isEmpty()) {
    QFont bold = font_;
    bold.setBold(true);
    p.setFont(bold);
    p.setPen(palette_.text);
    p.drawText(QRectF(rect.left() + 8, rect.top() + 2, rect.width() - 16, kTitleHeight),
               Qt::AlignLeft | Qt::AlignVCenter, m.title);
    p.setFont(font_);
  }
  const QRectF area = plotArea(rect, m);
  if (measuredOnly(m) && area.width() >= 4 && area.height() >= 4) {
    renderMeasuredOnly(p, rect, m);
    p.restore();
    return;
  }
  if (stepCount(m) == 0 || area.width() < 4 || area.height() < 4) {
    p.setPen(palette_.mutedText);
    p.drawText(rect, Qt::AlignCenter, QObject::tr("No run yet"));
    p.restore();
    return;
  }
  drawBands(p, area, m);
  drawAxes(p, area, m);
  drawStack(p, area, m);
  drawGhost(p, area, m);
  drawReserved(p, area, m);
  drawPins(p, area, m);
  drawMeasured(p, area, m);
  drawBandLabels(p, area, m);
  drawPeak(p, area, m);
  drawPinPeaks(p, area, m);
  drawRunKind(p, area, m);
  drawPinLegend(p, rect, m);
  drawLegend(p, rect, m);
  p.restore();
}

void MemoryPlotRenderer::renderCursor(QPainter& p, const QRectF& rect,
                                      const MemoryPlotModel& m) const {
  if (!m.series || measuredOnly(m) || m.cursor < 0 || m.cursor >= m.series->steps()) return;
  const QRectF area = plotArea(rect, m);
  const double x = xOfStep(m.cursor, rect, m);
  const std::int64_t total = m.series->totals[static_cast<std::size_t>(m.cursor)];
  const double y = yOfBytes(total, rect, m);
  p.save();
  p.setRenderHint(QPainter::Antialiasing, true);
  p.setFont(font_);
  p.setPen(QPen(palette_.cursor, 1.6));
  p.drawLine(QPointF(x, area.top()), QPointF(x, area.bottom()));
  p.setBrush(palette_.cursor);
  p.setPen(QPen(palette_.background, 1.2));
  p.drawEllipse(QPointF(x, y), 3.5, 3.5);
  const QString t = QString::fromStdString(formatBytes(total));
  QFontMetricsF fm(font_);
  const double w = fm.horizontalAdvance(t) + 10;
  double bx = std::clamp(x - w / 2, area.left(), area.right() - w);
  QRectF box(bx, area.bottom() - 17, w, 15);
  p.setPen(Qt::NoPen);
  p.setBrush(palette_.cursor);
  p.drawRoundedRect(box, 3, 3);
  p.setPen(Qt::white);
  p.drawText(box, Qt::AlignCenter, t);
  p.restore();
}

void MemoryPlotRenderer::renderHover(QPainter& p, const QRectF& rect, const MemoryPlotModel& m,
                                     std::int64_t step) const {
  if (step < 0 || step >= stepCount(m)) return;
  const QRectF area = plotArea(rect, m);
  const double x = xOfStep(step, rect, m);
  p.save();
  QColor c = palette_.text;
  c.setAlphaF(0.35);
  p.setPen(QPen(c, 1, Qt::DashLine));
  p.drawLine(QPointF(x, area.top()), QPointF(x, area.bottom()));
  p.restore();
}

}  // namespace ckpt::ui
