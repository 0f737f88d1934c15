// MemoryPlotRenderer: the current run's bytes stacked by category (with the recompute spans
// shaded over them), the previous configuration's total as a dashed ghost, and the legend that
// names the categories and the ghost.

#include <QFontMetricsF>
#include <QObject>
#include <QPainter>
#include <algorithm>
#include <cmath>

#include "ui/plot/memory_plot_renderer.hpp"
#include "ui/plot/plot_scale.hpp"

namespace ckpt::ui {

using plot_scale::kLegendHeight;
using plot_scale::kRankStackOrder;
using plot_scale::kStackOrder;
using plot_scale::kTitleHeight;

void MemoryPlotRenderer::drawStack(QPainter& p, const QRectF& area,
                                   const MemoryPlotModel& m) const {
  if (!m.series || m.series->empty()) return;
  const MemorySeries& s = *m.series;
  const std::int64_t n = stepCount(m);
  const double top = static_cast<double>(yMax(m));
  // Columns for the series' own steps, on the common x scale.
  const int pixels = std::max(1, static_cast<int>(std::ceil(area.width() * s.steps() / n)));
  const auto cols = decimate(s, 0, s.steps(), pixels);
  auto xAt = [&](std::int64_t k) {
    return area.left() + static_cast<double>(k) * area.width() / static_cast<double>(n);
  };
  auto yAt = [&](double bytes) { return area.bottom() - area.height() * bytes / top; };

  // The bands: the run's categories, or one rank's when the run is sharded (FSDP2), each
  // column's breakdown at its highest step.
  const RankTimeline* rank = s.per_rank.get();
  const std::size_t bands = rank ? kRankStackOrder.size() : kStackOrder.size();
  auto bandBytes = [&](const PlotColumn& col, std::size_t l) -> std::int64_t {
    if (rank)
      return rank->by_step[static_cast<std::size_t>(col.maxStep)]
                          [static_cast<std::size_t>(kRankStackOrder[l])];
    return col.atMax[static_cast<std::size_t>(kStackOrder[l])];
  };
  auto bandShown = [&](std::size_t l) {
    return rank ? rank->max_by_category[static_cast<std::size_t>(kRankStackOrder[l])] > 0
                : s.max_by_category[static_cast<std::size_t>(kStackOrder[l])] > 0;
  };
  std::vector<double> cum(cols.size(), 0.0);
  std::vector<std::vector<double>> levels;  // cumulative top per stack level
  levels.reserve(bands);
  for (std::size_t l = 0; l < bands; ++l) {
    for (std::size_t i = 0; i < cols.size(); ++i)
      cum[i] += static_cast<double>(bandBytes(cols[i], l));
    levels.push_back(cum);
  }
  p.setPen(Qt::NoPen);
  for (std::size_t l = bands; l-- > 0;) {
    if (!bandShown(l)) continue;
    QPolygonF poly;
    poly.reserve(static_cast<qsizetype>(cols.size() * 2 + 2));
    poly << QPointF(xAt(cols.front().firstStep), area.bottom());
    for (std::size_t i = 0; i < cols.size(); ++i) {
      const double y = yAt(levels[l][i]);
      poly << QPointF(xAt(cols[i].firstStep), y) << QPointF(xAt(cols[i].lastStep + 1), y);
    }
    poly << QPointF(xAt(cols.back().lastStep + 1), area.bottom());
    p.setBrush(rank ? palette_.rankCategory(kRankStackOrder[l])
                    : palette_.category(kStackOrder[l]));
    p.drawPolygon(poly);
  }
  // Outline of the total, so the curve reads as one line over the bands.
  QPolygonF outline;
  for (const auto& c : cols) {
    const double y = yAt(static_cast<double>(c.maxTotal));
    outline << QPointF(xAt(c.firstStep), y) << QPointF(xAt(c.lastStep + 1), y);
  }
  QColor line = palette_.text;
  line.setAlphaF(0.55);
  p.setPen(QPen(line, 1.1));
  p.setBrush(Qt::NoBrush);
  p.drawPolyline(outline);

  // Recompute spans: shaded over the bands and flagged along the top edge.
  for (const auto& span : s.recomputes) {
    const QRectF r(QPointF(xAt(span.begin), area.top()), QPointF(xAt(span.end), area.bottom()));
    QColor shade = palette_.recomputeShade;
    shade.setAlphaF(0.16);
    p.fillRect(r, shade);
    QColor hatch = palette_.recomputeShade;
    hatch.setAlphaF(0.35);
    p.fillRect(r, QBrush(hatch, Qt::BDiagPattern));
    p.fillRect(QRectF(r.left(), area.top(), std::max(1.0, r.width()), 4), palette_.recomputeShade);
  }
}

void MemoryPlotRenderer::drawGhost(QPainter& p, const QRectF& area,
                                   const MemoryPlotModel& m) const {
  if (!m.ghost || m.ghost->empty()) return;
  const MemorySeries& g = *m.ghost;
  const std::int64_t n = stepCount(m);
  const double top = static_cast<double>(yMax(m));
  const int pixels = std::max(1, static_cast<int>(std::ceil(area.width() * g.steps() / n)));
  const auto cols = decimate(g, 0, g.steps(), pixels);
  auto xAt = [&](std::int64_t k) {
    return area.left() + static_cast<double>(k) * area.width() / static_cast<double>(n);
  };
  QPolygonF line;
  for (const auto& c : cols) {
    const double y = area.bottom() - area.height() * static_cast<double>(c.maxTotal) / top;
    line << QPointF(xAt(c.firstStep), y) << QPointF(xAt(c.lastStep + 1), y);
  }
  QColor ghost = palette_.ghost;
  ghost.setAlphaF(0.8);
  p.setPen(QPen(ghost, 1.6, Qt::DashLine));
  p.setBrush(Qt::NoBrush);
  p.drawPolyline(line);
}

// A caching allocator's reserved bytes (the segments it took from the card) as a line over the
// stacked allocated bytes, its peak labelled: the gap between them is what the process holds
// beyond its tensors.
void MemoryPlotRenderer::drawReserved(QPainter& p, const QRectF& area,
                                      const MemoryPlotModel& m) const {
  if (!m.series || m.series->reserved.empty()) return;
  const MemorySeries& s = *m.series;
  const std::int64_t n = std::max<std::int64_t>(1, stepCount(m));
  const double top = static_cast<double>(yMax(m));
  auto xAt = [&](std::int64_t k) {
    return area.left() + static_cast<double>(k) * area.width() / static_cast<double>(n);
  };
  auto yAt = [&](std::int64_t bytes) {
    return area.bottom() - area.height() * static_cast<double>(bytes) / top;
  };
  // One vertex pair per pixel column at most: the column's highest reserved figure.
  const auto steps = static_cast<std::int64_t>(s.reserved.size());
  const double perPixel = std::max(1.0, static_cast<double>(steps) / std::max(1.0, area.width()));
  QPolygonF line;
  for (std::int64_t k = 0; k < steps;) {
    const std::int64_t end =
        std::min(steps, static_cast<std::int64_t>(std::floor(static_cast<double>(k) + perPixel)));
    std::int64_t high = 0;
    for (std::int64_t j = k; j < std::max(end, k + 1); ++j)
      high = std::max(high, s.reserved[static_cast<std::size_t>(j)]);
    const std::int64_t last = std::max(end, k + 1);
    line << QPointF(xAt(k), yAt(high)) << QPointF(xAt(last), yAt(high));
    k = last;
  }
  p.setPen(QPen(palette_.text, 1.3, Qt::DashDotLine));
  p.setBrush(Qt::NoBrush);
  p.drawPolyline(line);
  const QString label = QObject::tr("reserved peak %1").arg(plot_scale::bytesText(s.reserved_peak));
  const QFontMetricsF fm(font_);
  const double w = fm.horizontalAdvance(label) + 6;
  // At the right end, under the line: the dry-run badge and the peak's label sit above it.
  QColor fill = palette_.background;
  fill.setAlpha(200);
  const QRectF box(area.right() - w - 4, yAt(s.reserved_peak) + 2, w, 14);
  p.fillRect(box, fill);
  p.setPen(palette_.text);
  p.drawText(box, Qt::AlignCenter, label);
}

std::vector<MemoryPlotRenderer::LegendItem> MemoryPlotRenderer::legendItems(
    const MemoryPlotModel& m) const {
  std::vector<LegendItem> items;
  auto band = [](const QColor& colour) {
    return [colour](QPainter& p, const QRectF& r) {
      p.setPen(Qt::NoPen);
      p.setBrush(colour);
      p.drawRoundedRect(r, 2, 2);
    };
  };
  if (m.series && m.series->per_rank) {
    const RankTimeline& rank = *m.series->per_rank;
    for (auto it = kRankStackOrder.rbegin(); it != kRankStackOrder.rend(); ++it)
      if (rank.max_by_category[static_cast<std::size_t>(*it)] > 0)
        items.push_back({rankCategoryLabel(*it), band(palette_.rankCategory(*it))});
  } else if (m.series) {
    for (auto it = kStackOrder.rbegin(); it != kStackOrder.rend(); ++it)
      if (m.series->max_by_category[static_cast<std::size_t>(*it)] > 0)
        items.push_back({categoryLabel(*it), band(palette_.category(*it))});
  }
  if (m.series && !m.series->recomputes.empty())
    items.push_back(
        {QObject::tr("recompute"), [shade = palette_.recomputeShade](QPainter& p, const QRectF& r) {
           QColor c = shade;
           c.setAlphaF(0.25);
           p.setPen(QPen(shade, 1));
           p.setBrush(QBrush(c));
           p.drawRect(r);
         }});
  if (m.series && !m.series->reserved.empty())
    items.push_back({QObject::tr("reserved"), [text = palette_.text](QPainter& p, const QRectF& r) {
                       p.setPen(QPen(text, 1.3, Qt::DashDotLine));
                       p.drawLine(QPointF(r.left(), r.center().y()),
                                  QPointF(r.right(), r.center().y()));
                     }});
  if (m.ghost)
    items.push_back({m.ghostLabel.isEmpty() ? QObject::tr("previous configuration")
                                            : QObject::tr("previous: %1").arg(m.ghostLabel),
                     [ghost = palette_.ghost](QPainter& p, const QRectF& r) {
                       p.setPen(QPen(ghost, 1.6, Qt::DashLine));
                       p.drawLine(QPointF(r.left(), r.center().y()),
                                  QPointF(r.right(), r.center().y()));
                     }});
  return items;
}

// The legend's items flowed left to right; a sharded run's seven bands take a second row
// where one is too narrow for them (every other legend keeps its one row, as before).
std::vector<QRectF> MemoryPlotRenderer::legendLayout(const QRectF& rect, const MemoryPlotModel& m,
                                                     const std::vector<LegendItem>& items) const {
  const QFontMetricsF fm(font_);
  const double left = rect.left() + 8;
  double x = left;
  double y = rect.top() + (m.title.isEmpty() ? 0 : kTitleHeight) + 4;
  const int rows = m.series && m.series->per_rank ? 2 : 1;
  int row = 1;
  bool full = false;
  std::vector<QRectF> boxes;
  for (const LegendItem& item : items) {
    const double w = fm.horizontalAdvance(item.text);
    if (full || x + 18 + w > rect.right() - 4) {
      if (full || row == rows || x == left) {
        full = true;
        boxes.emplace_back();  // no room: this and the rest are not drawn
        continue;
      }
      ++row;
      x = left;
      y += kLegendHeight;
    }
    boxes.emplace_back(x, y, 16 + w + 2, 20);
    x += 16 + w + 14;
  }
  return boxes;
}

double MemoryPlotRenderer::legendHeight(const QRectF& rect, const MemoryPlotModel& m) const {
  const auto boxes = legendLayout(rect, m, legendItems(m));
  double bottom = 0, top = -1;
  for (const QRectF& b : boxes) {
    if (b.isNull()) continue;
    if (top < 0) top = b.top();
    bottom = std::max(bottom, b.bottom());
  }
  return top < 0 ? kLegendHeight : std::max(kLegendHeight, bottom - top + 2);
}

void MemoryPlotRenderer::drawLegend(QPainter& p, const QRectF& rect,
                                    const MemoryPlotModel& m) const {
  const auto items = legendItems(m);
  const auto boxes = legendLayout(rect, m, items);
  for (std::size_t i = 0; i < items.size(); ++i) {
    const QRectF& b = boxes[i];
    if (b.isNull()) continue;
    items[i].swatch(p, QRectF(b.left(), b.top() + 4, 12, 12));
    p.setPen(palette_.text);
    p.drawText(QRectF(b.left() + 16, b.top(), b.width(), 20), Qt::AlignLeft | Qt::AlignVCenter,
               items[i].text);
  }
}

}  // namespace ckpt::ui
