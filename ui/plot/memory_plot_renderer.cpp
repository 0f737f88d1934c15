#include "ui/plot/memory_plot_renderer.hpp"

#include <QFileInfo>
#include <QFontMetricsF>
#include <QGuiApplication>
#include <QImage>
#include <QPainter>
#include <QPainterPath>
#include <QSvgGenerator>
#include <algorithm>
#include <array>
#include <cmath>

namespace ckpt::ui {

namespace {

// Bottom to top: what lives all run long first, the spiky temporaries last.
constexpr std::array<MemoryCategory, kMemoryCategoryCount> kStackOrder = {
    MemoryCategory::parameter,        MemoryCategory::input,      MemoryCategory::rng_state,
    MemoryCategory::checkpoint_input, MemoryCategory::activation, MemoryCategory::recomputed,
    MemoryCategory::gradient,         MemoryCategory::temporary};

constexpr double kLegendHeight = 22;
constexpr double kTitleHeight = 20;
constexpr double kBottomMargin = 30;
constexpr double kRightMargin = 18;

QString bytesText(std::int64_t b) {
  return QString::fromStdString(formatBytes(b));
}

// Tick spacing of 1, 2 or 5 times a power of ten in the unit's scale.
double niceStep(double range, int targetTicks) {
  if (range <= 0) return 1;
  const double raw = range / std::max(1, targetTicks);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

double unitFor(std::int64_t maxBytes) {
  double unit = 1;
  while (static_cast<double>(maxBytes) / unit >= 1024.0 && unit < 1024.0 * 1024 * 1024 * 1024)
    unit *= 1024;
  return unit;
}

const char* unitName(double unit) {
  if (unit >= 1024.0 * 1024 * 1024) return "GiB";
  if (unit >= 1024.0 * 1024) return "MiB";
  if (unit >= 1024.0) return "KiB";
  return "B";
}

}  // namespace

MemoryPlotRenderer::MemoryPlotRenderer() : palette_(Palette::light()) {
  font_.setPointSizeF(8.5);
}

std::int64_t MemoryPlotRenderer::stepCount(const MemoryPlotModel& m) const {
  std::int64_t n = m.series ? m.series->steps() : 0;
  if (m.ghost) n = std::max(n, m.ghost->steps());
  for (const PlotPin& pin : m.pins)
    if (pin.series) n = std::max(n, pin.series->steps());
  return n;
}

std::int64_t MemoryPlotRenderer::yMax(const MemoryPlotModel& m) const {
  std::int64_t top = m.series ? m.series->max_total() : 0;
  if (m.ghost) top = std::max(top, m.ghost->max_total());
  for (const PlotPin& pin : m.pins)
    if (pin.series) top = std::max(top, pin.series->max_total());
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
      kLegendHeight + (m.title.isEmpty() ? 0 : kTitleHeight) + pinLegendHeight(rect, m) + 6;
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
  drawPins(p, area, m);
  drawBandLabels(p, area, m);
  drawPeak(p, area, m);
  drawPinPeaks(p, area, m);
  drawRunKind(p, area, m);
  drawPinLegend(p, rect, m);
  drawLegend(p, rect, m);
  p.restore();
}

// Which run the curve is: a dry run's bytes are exact and its times estimated; a real run's
// are measured. Said on the plot itself, so that no picture of a dry run passes for a real one.
void MemoryPlotRenderer::drawRunKind(QPainter& p, const QRectF& area,
                                     const MemoryPlotModel& m) const {
  if (!m.series || !m.series->dry_run) return;
  QString t = QObject::tr("DRY RUN · exact bytes · estimated times");
  if (!m.series->not_computed.empty()) t += QObject::tr(" · real run not started: over the limit");
  QFont bold = font_;
  bold.setBold(true);
  p.setFont(bold);
  const QFontMetricsF fm(bold);
  const QRectF box(area.left() + 6, area.top() + 4, fm.horizontalAdvance(t) + 12, fm.height() + 4);
  p.setPen(Qt::NoPen);
  QColor fill = palette_.background;
  fill.setAlpha(220);
  p.setBrush(fill);
  p.drawRoundedRect(box, 3, 3);
  p.setPen(QPen(palette_.mutedText, 1.0, Qt::DashLine));
  p.setBrush(Qt::NoBrush);
  p.drawRoundedRect(box, 3, 3);
  p.setPen(palette_.text);
  p.drawText(box, Qt::AlignCenter, t);
  p.setFont(font_);
}

void MemoryPlotRenderer::drawLegend(QPainter& p, const QRectF& rect,
                                    const MemoryPlotModel& m) const {
  QFontMetricsF fm(font_);
  double x = rect.left() + 8;
  const double y = rect.top() + (m.title.isEmpty() ? 0 : kTitleHeight) + 4;
  auto item = [&](const QString& text, const std::function<void(const QRectF&)>& swatch) {
    const double w = fm.horizontalAdvance(text);
    if (x + 18 + w > rect.right() - 4) return;
    swatch(QRectF(x, y + 4, 12, 12));
    p.setPen(palette_.text);
    p.drawText(QRectF(x + 16, y, w + 2, 20), Qt::AlignLeft | Qt::AlignVCenter, text);
    x += 16 + w + 14;
  };
  if (m.series) {
    for (auto it = kStackOrder.rbegin(); it != kStackOrder.rend(); ++it) {
      const MemoryCategory c = *it;
      if (m.series->max_by_category[static_cast<std::size_t>(c)] <= 0) continue;
      item(categoryLabel(c), [&](const QRectF& r) {
        p.setPen(Qt::NoPen);
        p.setBrush(palette_.category(c));
        p.drawRoundedRect(r, 2, 2);
      });
    }
    if (!m.series->recomputes.empty())
      item(QObject::tr("recompute"), [&](const QRectF& r) {
        QColor c = palette_.recomputeShade;
        c.setAlphaF(0.25);
        p.setPen(QPen(palette_.recomputeShade, 1));
        p.setBrush(QBrush(c));
        p.drawRect(r);
      });
  }
  if (m.ghost)
    item(m.ghostLabel.isEmpty() ? QObject::tr("previous configuration")
                                : QObject::tr("previous: %1").arg(m.ghostLabel),
         [&](const QRectF& r) {
           p.setPen(QPen(palette_.ghost, 1.6, Qt::DashLine));
           p.drawLine(QPointF(r.left(), r.center().y()), QPointF(r.right(), r.center().y()));
         });
}

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

  std::vector<double> cum(cols.size(), 0.0);
  std::vector<std::vector<double>> levels;  // cumulative top per stack level
  levels.reserve(kStackOrder.size());
  for (MemoryCategory c : kStackOrder) {
    for (std::size_t i = 0; i < cols.size(); ++i)
      cum[i] += static_cast<double>(cols[i].atMax[static_cast<std::size_t>(c)]);
    levels.push_back(cum);
  }
  p.setPen(Qt::NoPen);
  for (std::size_t l = kStackOrder.size(); l-- > 0;) {
    if (s.max_by_category[static_cast<std::size_t>(kStackOrder[l])] <= 0) continue;
    QPolygonF poly;
    poly.reserve(static_cast<qsizetype>(cols.size() * 2 + 2));
    poly << QPointF(xAt(cols.front().firstStep), area.bottom());
    for (std::size_t i = 0; i < cols.size(); ++i) {
      const double y = yAt(levels[l][i]);
      poly << QPointF(xAt(cols[i].firstStep), y) << QPointF(xAt(cols[i].lastStep + 1), y);
    }
    poly << QPointF(xAt(cols.back().lastStep + 1), area.bottom());
    p.setBrush(palette_.category(kStackOrder[l]));
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

void MemoryPlotRenderer::drawPeak(QPainter& p, const QRectF& area, const MemoryPlotModel& m) const {
  if (!m.series || m.series->peak_step < 0) return;
  QFontMetricsF fm(font_);
  const MemorySeries& s = *m.series;
  const std::int64_t n = stepCount(m);
  const double top = static_cast<double>(yMax(m));
  auto yAt = [&](std::int64_t b) {
    return area.bottom() - area.height() * static_cast<double>(b) / top;
  };
  const double x = area.left() +
                   (static_cast<double>(s.peak_step) + 0.5) * area.width() / static_cast<double>(n);
  const double y = yAt(s.peak_bytes);

  if (m.ghost && m.ghost->peak_bytes > 0 && m.ghost->peak_bytes != s.peak_bytes) {
    const double gy = yAt(m.ghost->peak_bytes);
    QColor ghost = palette_.ghost;
    ghost.setAlphaF(0.6);
    p.setPen(QPen(ghost, 1, Qt::DotLine));
    p.drawLine(QPointF(area.left(), gy), QPointF(area.right(), gy));
    const QString t = QObject::tr("previous peak %1").arg(bytesText(m.ghost->peak_bytes));
    p.setPen(palette_.mutedText);
    p.drawText(QRectF(area.right() - fm.horizontalAdvance(t) - 6, gy - 16,
                      fm.horizontalAdvance(t) + 4, 14),
               Qt::AlignRight | Qt::AlignVCenter, t);
  }

  QColor mark = palette_.text;
  p.setPen(QPen(mark, 1, Qt::DotLine));
  p.drawLine(QPointF(area.left(), y), QPointF(area.right(), y));
  p.setPen(QPen(palette_.background, 1.5));
  p.setBrush(palette_.highlight);
  p.drawEllipse(QPointF(x, y), 4.5, 4.5);

  QString label = QObject::tr("peak %1").arg(bytesText(s.peak_bytes));
  if (s.failed) {
    label = QObject::tr("run failed at step %1 (peak so far %2)")
                .arg(s.steps() - 1)
                .arg(bytesText(s.peak_bytes));
  } else if (m.ghost && m.ghost->peak_bytes > 0) {
    const std::int64_t delta = s.peak_bytes - m.ghost->peak_bytes;
    const double pct =
        100.0 * static_cast<double>(delta) / static_cast<double>(m.ghost->peak_bytes);
    if (delta != 0)
      label += QObject::tr("  (%1%2, %3%4%)")
                   .arg(delta > 0 ? QStringLiteral("+") : QStringLiteral("−"))
                   .arg(bytesText(std::llabs(delta)))
                   .arg(delta > 0 ? QStringLiteral("+") : QStringLiteral("−"))
                   .arg(std::fabs(pct), 0, 'f', 1);
    else
      label += QObject::tr("  (unchanged)");
  }
  QString detail = QObject::tr("step %1").arg(s.peak_step);
  // A reentrant checkpoint whose inputs need no grad "saves" memory by skipping gradients.
  if (s.warned && !s.failed) label += QObject::tr("  ⚠ the run warned");
  if (m.stepLabel) {
    const QString what = m.stepLabel(s.peak_step);
    if (!what.isEmpty()) detail += QStringLiteral(" · ") + what;
  }
  QFont bold = font_;
  bold.setBold(true);
  const QFontMetricsF bfm(bold);
  const double w = std::max(bfm.horizontalAdvance(label), fm.horizontalAdvance(detail)) + 12;
  const double h = 34;
  double bx = x + 10;
  if (bx + w > area.right()) bx = x - 10 - w;
  bx = std::max(bx, area.left() + 2);
  // Below the band labels along the top edge.
  double by = std::max(area.top() + 22, y - h - 6);
  QRectF box(bx, by, w, h);
  QColor bg = palette_.background;
  bg.setAlphaF(0.9);
  p.setPen(QPen(palette_.highlight, 1));
  p.setBrush(bg);
  p.drawRoundedRect(box, 4, 4);
  p.setFont(bold);
  p.setPen(palette_.text);
  p.drawText(box.adjusted(6, 2, -6, -h / 2), Qt::AlignLeft | Qt::AlignVCenter, label);
  p.setFont(font_);
  p.setPen(palette_.mutedText);
  p.drawText(box.adjusted(6, h / 2 - 2, -6, -2), Qt::AlignLeft | Qt::AlignVCenter,
             fm.elidedText(detail, Qt::ElideRight, w - 12));
}

void MemoryPlotRenderer::renderCursor(QPainter& p, const QRectF& rect,
                                      const MemoryPlotModel& m) const {
  if (!m.series || m.cursor < 0 || m.cursor >= m.series->steps()) return;
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

bool exportMemoryPlot(const QString& path, const MemoryPlotModel& model, QSize size,
                      const Palette& palette, QString* error) {
  auto failWith = [&](const QString& message) {
    if (error) *error = message;
    return false;
  };
  if (!qobject_cast<QGuiApplication*>(QCoreApplication::instance()))
    return failWith(QObject::tr("%1: exporting a plot needs a QGuiApplication").arg(path));
  if (size.width() < 64 || size.height() < 64)
    return failWith(QObject::tr("%1: plot size %2x%3 is too small")
                        .arg(path)
                        .arg(size.width())
                        .arg(size.height()));
  MemoryPlotRenderer renderer;
  renderer.setPalette(palette);
  const QString suffix = QFileInfo(path).suffix().toLower();
  const QRectF rect(QPointF(0, 0), QSizeF(size));
  if (suffix == QLatin1String("svg")) {
    QSvgGenerator svg;
    svg.setFileName(path);
    svg.setSize(size);
    svg.setViewBox(rect);
    svg.setTitle(model.title.isEmpty() ? QStringLiteral("Memory") : model.title);
    svg.setDescription(QStringLiteral("Checkpoint Lab memory plot"));
    QPainter p;
    if (!p.begin(&svg)) return failWith(QObject::tr("%1: cannot write SVG").arg(path));
    renderer.render(p, rect, model);
    p.end();
  } else if (suffix == QLatin1String("png")) {
    QImage image(size, QImage::Format_ARGB32_Premultiplied);
    image.fill(palette.background);
    QPainter p(&image);
    renderer.render(p, rect, model);
    p.end();
    if (!image.save(path, "PNG")) return failWith(QObject::tr("%1: cannot write PNG").arg(path));
  } else {
    return failWith(
        QObject::tr("%1: unknown plot format '%2' (use .png or .svg)").arg(path, suffix));
  }
  QFileInfo written(path);
  if (!written.exists() || written.size() == 0)
    return failWith(QObject::tr("%1: nothing was written").arg(path));
  return true;
}

}  // namespace ckpt::ui
