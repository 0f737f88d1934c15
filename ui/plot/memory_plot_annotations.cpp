// MemoryPlotRenderer: what is written over the curve. The peak, marked and labelled with its
// change from the previous configuration's, and the previous peak as a dotted line; and, for a
// dry run, a badge that says so.

#include <QFontMetricsF>
#include <QObject>
#include <QPainter>
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "engine/report/figures.hpp"
#include "engine/report/fsdp_memory.hpp"
#include "ui/plot/memory_plot_renderer.hpp"
#include "ui/plot/plot_scale.hpp"

namespace ckpt::ui {

using plot_scale::bytesText;

namespace {

// "peak 12.4 MiB  (−3.1 MiB, −20.0%)": the current peak and its change from the previous
// configuration's, or where a failed run stopped.
QString peakLabel(const MemoryPlotModel& m) {
  const MemorySeries& s = *m.series;
  QString label = QObject::tr("peak %1").arg(bytesText(s.peak_bytes));
  if (s.failed) {
    label = QObject::tr("run failed at step %1 (peak so far %2)")
                .arg(s.steps() - 1)
                .arg(bytesText(s.peak_bytes));
  } else if (m.ghost && m.ghost->peak_bytes > 0) {
    const PeakChange change = peak_change(s.peak_bytes, m.ghost->peak_bytes);
    if (change.bytes != 0)
      label += QObject::tr("  (%1%2, %3%4%)")
                   .arg(change.bytes > 0 ? QStringLiteral("+") : QStringLiteral("−"))
                   .arg(bytesText(std::llabs(change.bytes)))
                   .arg(change.bytes > 0 ? QStringLiteral("+") : QStringLiteral("−"))
                   .arg(std::fabs(change.percent), 0, 'f', 1);
    else
      label += QObject::tr("  (unchanged)");
  }
  // A reentrant checkpoint whose inputs need no grad "saves" memory by skipping gradients.
  if (s.warned && !s.failed) label += QObject::tr("  ⚠ the run warned");
  return label;
}

// "step 812 · conv2d · features.conv0": where the peak is.
QString peakDetail(const MemoryPlotModel& m) {
  const MemorySeries& s = *m.series;
  QString detail = QObject::tr("step %1").arg(s.peak_step);
  if (m.stepLabel) {
    const QString what = m.stepLabel(s.peak_step);
    if (!what.isEmpty()) detail += QStringLiteral(" · ") + what;
  }
  return detail;
}

}  // namespace

void MemoryPlotRenderer::drawPeak(QPainter& p, const QRectF& area, const MemoryPlotModel& m) const {
  if (!m.series || m.series->peak_step < 0) return;
  QFontMetricsF fm(font_);
  const MemorySeries& s = *m.series;
  const std::int64_t n = stepCount(m);
  const double top = static_cast<double>(yMax(m));
  const double x = area.left() +
                   (static_cast<double>(s.peak_step) + 0.5) * area.width() / static_cast<double>(n);
  const double y = area.bottom() - area.height() * static_cast<double>(s.peak_bytes) / top;

  drawGhostPeak(p, area, m);

  QColor mark = palette_.text;
  p.setPen(QPen(mark, 1, Qt::DotLine));
  p.drawLine(QPointF(area.left(), y), QPointF(area.right(), y));
  p.setPen(QPen(palette_.background, 1.5));
  p.setBrush(palette_.highlight);
  p.drawEllipse(QPointF(x, y), 4.5, 4.5);

  const QString label = peakLabel(m);
  const QString detail = peakDetail(m);
  QFont bold = font_;
  bold.setBold(true);
  const QFontMetricsF bfm(bold);
  const double w = std::max(bfm.horizontalAdvance(label), fm.horizontalAdvance(detail)) + 12;
  const double h = 34;
  double bx = x + 10;
  if (bx + w > area.right()) bx = x - 10 - w;
  bx = std::max(bx, area.left() + 2);
  // Below the band labels along the top edge, and below the run-kind banner where it would
  // cover it (a wrapped CUDA banner reaches down to the label).
  double by = std::max(area.top() + 22, y - h - 6);
  QRectF box(bx, by, w, h);
  if (const RunKindBanner banner = runKindBanner(area, m);
      !banner.lines.isEmpty() && box.intersects(banner.box) &&
      banner.box.bottom() + 4 + h <= area.bottom())
    box.moveTop(banner.box.bottom() + 4);
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

// The previous configuration's peak, when it differs: a dotted line with its figure.
void MemoryPlotRenderer::drawGhostPeak(QPainter& p, const QRectF& area,
                                       const MemoryPlotModel& m) const {
  if (!m.ghost || m.ghost->peak_bytes <= 0 || m.ghost->peak_bytes == m.series->peak_bytes) return;
  QFontMetricsF fm(font_);
  const double top = static_cast<double>(yMax(m));
  const double gy = area.bottom() - area.height() * static_cast<double>(m.ghost->peak_bytes) / top;
  QColor ghost = palette_.ghost;
  ghost.setAlphaF(0.6);
  p.setPen(QPen(ghost, 1, Qt::DotLine));
  p.drawLine(QPointF(area.left(), gy), QPointF(area.right(), gy));
  const QString t = QObject::tr("previous peak %1").arg(bytesText(m.ghost->peak_bytes));
  p.setPen(palette_.mutedText);
  p.drawText(
      QRectF(area.right() - fm.horizontalAdvance(t) - 6, gy - 16, fm.horizontalAdvance(t) + 4, 14),
      Qt::AlignRight | Qt::AlignVCenter, t);
}

QStringList bannerLines(const QStringList& parts, const QFontMetricsF& fm, double maxWidth) {
  static const QString separator = QStringLiteral(" · ");
  QStringList lines;
  for (const QString& part : parts) {
    const QString joined = lines.isEmpty() ? part : lines.back() + separator + part;
    if (!lines.isEmpty() && fm.horizontalAdvance(joined) <= maxWidth)
      lines.back() = joined;
    else
      lines << fm.elidedText(part, Qt::ElideRight, std::max(maxWidth, 1.0));
  }
  return lines;
}

// Which run the curve is: a dry run's bytes are exact and its times estimated; a real run's
// are measured. Said on the plot itself, so that no picture of a dry run passes for a real one.
// Empty lines when the curve is this engine's own real CPU run, which needs no banner.
MemoryPlotRenderer::RunKindBanner MemoryPlotRenderer::runKindBanner(
    const QRectF& area, const MemoryPlotModel& m) const {
  RunKindBanner banner;
  banner.font = font_;
  banner.font.setBold(true);
  if (!m.series) return banner;
  // Whose memory the curve is, when it is not this engine's own CPU run: the device decides it.
  const RankTimeline* rank = m.series->per_rank.get();
  const bool otherDevice = (!m.series->reserved.empty() || rank) && !m.series->memory_of.empty();
  if (!m.series->dry_run && !otherDevice) return banner;
  QStringList parts{m.series->dry_run ? QObject::tr("DRY RUN") : QObject::tr("REAL RUN")};
  // A sharded run's curve is one rank's, modelled over the run's own bytes: said first.
  if (rank)
    parts << QObject::tr("ONE RANK OF %1 (FSDP2)").arg(rank->ranks)
          << QString::fromLatin1(kFsdpNotMeasured);
  if (m.series->dry_run) parts << QObject::tr("exact bytes") << QObject::tr("estimated times");
  if (otherDevice)
    parts << QObject::tr("memory as %1 holds it").arg(QString::fromStdString(m.series->memory_of));
  if (!m.series->not_computed.empty())
    parts << QObject::tr("real run not started (the run summary says why)");
  const QFontMetricsF fm(banner.font);
  // On the CUDA device the banner is longer than a narrow plot: it wraps between its parts
  // instead of running off the right edge.
  banner.lines = bannerLines(parts, fm, area.width() - 24);
  double widest = 0;
  for (const QString& line : banner.lines) widest = std::max(widest, fm.horizontalAdvance(line));
  banner.box = QRectF(area.left() + 6, area.top() + 4, widest + 12,
                      fm.height() * static_cast<double>(banner.lines.size()) + 4);
  return banner;
}

void MemoryPlotRenderer::drawRunKind(QPainter& p, const QRectF& area,
                                     const MemoryPlotModel& m) const {
  const RunKindBanner banner = runKindBanner(area, m);
  if (banner.lines.isEmpty()) return;
  p.setFont(banner.font);
  p.setPen(Qt::NoPen);
  QColor fill = palette_.background;
  fill.setAlpha(220);
  p.setBrush(fill);
  p.drawRoundedRect(banner.box, 3, 3);
  p.setPen(QPen(palette_.mutedText, 1.0, Qt::DashLine));
  p.setBrush(Qt::NoBrush);
  p.drawRoundedRect(banner.box, 3, 3);
  p.setPen(palette_.text);
  p.drawText(banner.box, Qt::AlignCenter, banner.lines.join('\n'));
  p.setFont(font_);
}

}  // namespace ckpt::ui
