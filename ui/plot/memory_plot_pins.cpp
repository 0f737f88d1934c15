// MemoryPlotRenderer: the pinned runs. Each is a solid line of its total bytes in its own
// colour, over its own steps on the plot's common step axis (as the ghost is), with a diamond at
// its peak; a legend under the category legend names them with their peaks.

#include <QFontMetricsF>
#include <QPainter>
#include <algorithm>
#include <cmath>

#include "ui/plot/memory_plot_renderer.hpp"

namespace ckpt::ui {

namespace {

void drawDiamond(QPainter& p, const QPointF& c, double r, const QColor& fill, const QColor& edge) {
  const QPolygonF d{QPointF(c.x(), c.y() - r), QPointF(c.x() + r, c.y()), QPointF(c.x(), c.y() + r),
                    QPointF(c.x() - r, c.y())};
  p.setPen(QPen(edge, 1.2));
  p.setBrush(fill);
  p.drawPolygon(d);
}

}  // namespace

void MemoryPlotRenderer::drawPins(QPainter& p, const QRectF& area, const MemoryPlotModel& m) const {
  const std::int64_t n = std::max<std::int64_t>(1, stepCount(m));
  const double top = static_cast<double>(yMax(m));
  auto xAt = [&](double k) { return area.left() + k * area.width() / static_cast<double>(n); };
  auto yAt = [&](std::int64_t bytes) {
    return area.bottom() - area.height() * static_cast<double>(bytes) / top;
  };
  for (const PlotPin& pin : m.pins) {
    if (!pin.series || pin.series->empty()) continue;
    const MemorySeries& s = *pin.series;
    const int pixels = std::max(1, static_cast<int>(std::ceil(area.width() * s.steps() / n)));
    QPolygonF line;
    for (const auto& c : decimate(s, 0, s.steps(), pixels))
      line << QPointF(xAt(static_cast<double>(c.firstStep)), yAt(c.maxTotal))
           << QPointF(xAt(static_cast<double>(c.lastStep + 1)), yAt(c.maxTotal));
    p.setPen(QPen(pin.colour, 1.8));
    p.setBrush(Qt::NoBrush);
    p.drawPolyline(line);
  }
}

void MemoryPlotRenderer::drawPinPeaks(QPainter& p, const QRectF& area,
                                      const MemoryPlotModel& m) const {
  const double n = static_cast<double>(std::max<std::int64_t>(1, stepCount(m)));
  const double top = static_cast<double>(yMax(m));
  for (const PlotPin& pin : m.pins) {
    if (!pin.series || pin.series->peak_step < 0) continue;
    const MemorySeries& s = *pin.series;
    const QPointF at(area.left() + (static_cast<double>(s.peak_step) + 0.5) * area.width() / n,
                     area.bottom() - area.height() * static_cast<double>(s.peak_bytes) / top);
    drawDiamond(p, at, 5, pin.colour, palette_.background);
  }
}

namespace {
constexpr double kPinRow = 17;
}

std::vector<MemoryPlotRenderer::PinLegendEntry> MemoryPlotRenderer::pinLegend(
    const QRectF& rect, const MemoryPlotModel& m) const {
  std::vector<PinLegendEntry> out;
  if (m.pins.empty()) return out;
  const QFontMetricsF fm(font_);
  // Under the title and the category legend (drawLegend's row).
  const double top = rect.top() + (m.title.isEmpty() ? 0 : 20) + legendHeight(rect, m);
  const double left = rect.left() + 8, right = rect.right() - 8;
  double x = left, y = top;
  for (std::size_t i = 0; i < m.pins.size(); ++i) {
    const PlotPin& pin = m.pins[i];
    const QString peak = pin.series ? QString::fromStdString(formatBytes(pin.series->peak_bytes))
                                    : QStringLiteral("-");
    const QString tail = QStringLiteral(" · peak ") + peak;
    const double room = std::max(40.0, right - left - 24 - fm.horizontalAdvance(tail));
    const QString text = fm.elidedText(pin.name, Qt::ElideMiddle, room) + tail;
    const double w = 24 + fm.horizontalAdvance(text) + 4;
    if (x > left && x + w > right) {
      x = left;
      y += kPinRow;
    }
    out.push_back({QRectF(x, y, w, kPinRow), text, i});
    x += w + 14;
  }
  return out;
}

double MemoryPlotRenderer::pinLegendHeight(const QRectF& rect, const MemoryPlotModel& m) const {
  const auto entries = pinLegend(rect, m);
  if (entries.empty()) return 0;
  return entries.back().box.bottom() - entries.front().box.top() + 2;
}

void MemoryPlotRenderer::drawPinLegend(QPainter& p, const QRectF& rect,
                                       const MemoryPlotModel& m) const {
  for (const PinLegendEntry& e : pinLegend(rect, m)) {
    const QColor& c = m.pins[e.pin].colour;
    const double y = e.box.center().y();
    p.setPen(QPen(c, 1.8));
    p.drawLine(QPointF(e.box.left(), y), QPointF(e.box.left() + 18, y));
    drawDiamond(p, QPointF(e.box.left() + 9, y), 3.5, c, palette_.background);
    p.setPen(palette_.text);
    p.drawText(e.box.adjusted(24, 0, 0, 0), Qt::AlignLeft | Qt::AlignVCenter, e.text);
  }
}

}  // namespace ckpt::ui
