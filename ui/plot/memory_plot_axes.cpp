// MemoryPlotRenderer: the axes (bytes up the left in a unit that suits the peak, steps along
// the bottom, both on ticks of 1, 2 or 5 times a power of ten), and the forward and backward
// bands behind the curve with their labels.

#include <QFontMetricsF>
#include <QObject>
#include <QPainter>
#include <algorithm>

#include "ui/plot/memory_plot_renderer.hpp"
#include "ui/plot/plot_scale.hpp"

namespace ckpt::ui {

using plot_scale::niceStep;
using plot_scale::unitFor;
using plot_scale::unitName;

void MemoryPlotRenderer::drawAxes(QPainter& p, const QRectF& area, const MemoryPlotModel& m) const {
  QFontMetricsF fm(font_);
  const std::int64_t top = yMax(m);
  const double unit = unitFor(top);
  const double step =
      niceStep(static_cast<double>(top) / unit, std::max(2, int(area.height() / 42)));
  p.setPen(QPen(palette_.grid, 1));
  for (double v = 0; v * unit <= static_cast<double>(top) + 0.5; v += step) {
    const double y = area.bottom() - area.height() * v * unit / static_cast<double>(top);
    p.setPen(QPen(palette_.grid, 1));
    p.drawLine(QPointF(area.left(), y), QPointF(area.right(), y));
    const int decimals = step < 1 ? (step < 0.1 ? 2 : 1) : 0;
    const QString label =
        v == 0
            ? QStringLiteral("0")
            : QStringLiteral("%1 %2").arg(v, 0, 'f', decimals).arg(QLatin1String(unitName(unit)));
    p.setPen(palette_.mutedText);
    p.drawText(QRectF(area.left() - fm.horizontalAdvance(label) - 8, y - 8,
                      fm.horizontalAdvance(label) + 4, 16),
               Qt::AlignRight | Qt::AlignVCenter, label);
  }
  const std::int64_t n = stepCount(m);
  if (n == 0) return;  // a measured snapshot alone labels its own axis (events)
  const double xstep =
      std::max(1.0, niceStep(static_cast<double>(n), std::max(2, int(area.width() / 90))));
  p.setPen(palette_.mutedText);
  for (double s = 0; s < static_cast<double>(n); s += xstep) {
    const double x = area.left() + (s + 0.5) * area.width() / static_cast<double>(n);
    p.setPen(QPen(palette_.grid, 1));
    p.drawLine(QPointF(x, area.bottom()), QPointF(x, area.bottom() + 4));
    p.setPen(palette_.mutedText);
    p.drawText(QRectF(x - 40, area.bottom() + 4, 80, 14), Qt::AlignHCenter | Qt::AlignTop,
               QString::number(static_cast<qint64>(s)));
  }
  p.drawText(QRectF(area.right() - 200, area.bottom() + 15, 200, 14), Qt::AlignRight | Qt::AlignTop,
             QObject::tr("step (one op execution)"));
  p.setPen(QPen(palette_.mutedText, 1));
  p.drawLine(area.bottomLeft(), area.bottomRight());
}

void MemoryPlotRenderer::drawBands(QPainter& p, const QRectF& area,
                                   const MemoryPlotModel& m) const {
  if (!m.series) return;
  const std::int64_t n = stepCount(m);
  auto xAt = [&](std::int64_t k) {
    return area.left() + static_cast<double>(k) * area.width() / static_cast<double>(n);
  };
  const std::int64_t fwdEnd = m.series->forward_end;
  const double split = fwdEnd >= 0 ? xAt(fwdEnd + 1) : area.left();
  p.fillRect(QRectF(QPointF(area.left(), area.top()), QPointF(split, area.bottom())),
             palette_.forwardBand);
  p.fillRect(QRectF(QPointF(split, area.top()), QPointF(xAt(m.series->steps()), area.bottom())),
             palette_.backwardBand);
}

void MemoryPlotRenderer::drawBandLabels(QPainter& p, const QRectF& area,
                                        const MemoryPlotModel& m) const {
  if (!m.series) return;
  QFontMetricsF fm(font_);
  const std::int64_t n = stepCount(m);
  auto xAt = [&](std::int64_t k) {
    return area.left() + static_cast<double>(k) * area.width() / static_cast<double>(n);
  };
  const std::int64_t fwdEnd = m.series->forward_end;
  const double split = fwdEnd >= 0 ? xAt(fwdEnd + 1) : area.left();
  const double end = xAt(m.series->steps());
  auto label = [&](double x0, double x1, const QString& text, const QColor& colour) {
    if (x1 - x0 < fm.horizontalAdvance(text) + 10) return;
    p.setPen(colour);
    p.drawText(QRectF(x0 + 5, area.top() + 6, x1 - x0 - 10, 14), Qt::AlignLeft | Qt::AlignTop,
               text);
  };
  label(area.left(), split, QObject::tr("forward ▸"), palette_.mutedText);
  // The backward label goes after the first recompute span when one starts right away.
  double backwardFrom = split;
  for (const auto& span : m.series->recomputes)
    if (xAt(span.begin) - backwardFrom < 80 && xAt(span.end) > backwardFrom)
      backwardFrom = xAt(span.end);
  label(backwardFrom, end, QObject::tr("backward ▸"), palette_.mutedText);
  for (const auto& span : m.series->recomputes)
    label(xAt(span.begin), xAt(span.end),
          QObject::tr("recompute %1").arg(QString::fromStdString(span.label)),
          palette_.recomputeShade);
}

}  // namespace ckpt::ui
