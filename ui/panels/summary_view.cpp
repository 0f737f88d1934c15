#include "ui/panels/summary_view.hpp"

#include "ui/style/palette.hpp"

namespace ckpt::ui {

namespace {
QString fmt(std::int64_t b) {
  return QString::fromStdString(formatBytes(b));
}
QString row(const QString& k, const QString& v) {
  return QStringLiteral("<tr><td style='padding-right:12px;color:gray'>%1</td><td>%2</td></tr>")
      .arg(k, v);
}
}  // namespace

SummaryView::SummaryView(QWidget* parent) : QTextBrowser(parent) {
  refresh();
}

void SummaryView::setSnapshot(RunSnapshotPtr snapshot, MemorySeriesPtr ghost,
                              const QString& ghostLabel) {
  snapshot_ = std::move(snapshot);
  ghost_ = std::move(ghost);
  ghostLabel_ = ghostLabel;
  refresh();
}

void SummaryView::setRunning(bool running) {
  running_ = running;
  refresh();
}

void SummaryView::refresh() {
  if (!snapshot_) {
    setHtml(running_ ? tr("<p><i>Running…</i></p>") : tr("<p><i>No run yet.</i></p>"));
    return;
  }
  const RunSummary& s = snapshot_->summary;
  const Palette pal = Palette::forApplication();
  QString html = QStringLiteral("<table>");
  html += row(tr("configuration"),
              QString::fromStdString(describeConfig(snapshot_->config)).toHtmlEscaped());
  html += row(tr("status"),
              s.ok ? tr("ok") + (running_ ? tr(" (re-running…)") : QString())
                   : QStringLiteral("<span style='color:%1'><b>%2</b></span>")
                         .arg(pal.error.name(), QString::fromStdString(s.error).toHtmlEscaped()));
  QString peak = QStringLiteral("<b>%1</b>").arg(fmt(s.peakBytes));
  if (ghost_ && ghost_->peakBytes > 0 && s.ok) {
    const std::int64_t d = s.peakBytes - ghost_->peakBytes;
    const double pct = 100.0 * static_cast<double>(d) / static_cast<double>(ghost_->peakBytes);
    peak += QStringLiteral(" <span style='color:%1'>(%2%3, %4%5%)</span>")
                .arg((d <= 0 ? pal.category(MemoryCategory::gradient) : pal.error).name(),
                     d < 0 ? QStringLiteral("−") : QStringLiteral("+"), fmt(std::llabs(d)),
                     d < 0 ? QStringLiteral("−") : QStringLiteral("+"))
                .arg(std::fabs(pct), 0, 'f', 1);
    peak += tr("<br><span style='color:gray'>vs %1: %2</span>")
                .arg(ghostLabel_.toHtmlEscaped(), fmt(ghost_->peakBytes));
  }
  html += row(tr("peak memory"), peak);
  html += row(tr("peak at"), tr("step %1 (%2) %3")
                                 .arg(s.peakStep)
                                 .arg(QLatin1String(phase_name(s.peakPhase)))
                                 .arg(QString::fromStdString(s.peakOp).toHtmlEscaped()));
  for (std::size_t c = 0; c < kMemoryCategoryCount; ++c) {
    if (s.peakByCategory[c] == 0) continue;
    html += row(QStringLiteral("&nbsp;&nbsp;<span style='color:%1'>■</span> %2")
                    .arg(pal.categories[c].name(), categoryLabel(static_cast<MemoryCategory>(c))),
                fmt(s.peakByCategory[c]));
  }
  html += row(tr("live after forward"), fmt(s.forwardEndBytes));
  html += row(tr("op executions"), tr("forward %1 · recompute %2 · backward %3")
                                       .arg(s.counts.forward)
                                       .arg(s.counts.recompute)
                                       .arg(s.counts.backward));
  html +=
      row(tr("recompute overhead"),
          tr("<b>%1%</b> more forward op executions").arg(100 * s.recomputeOverhead, 0, 'f', 1));
  html += row(
      tr("checkpoints"),
      tr("%1 segment forwards, %2 recomputes").arg(s.checkpointSegments).arg(s.recomputeSegments));
  if (s.rngStateBytesMax > 0) html += row(tr("RNG state held"), fmt(s.rngStateBytesMax));
  html += row(tr("time"), tr("forward %1 ms · backward %2 ms (recompute %3 ms)")
                              .arg(s.times.forward_ms, 0, 'f', 1)
                              .arg(s.times.backward_ms, 0, 'f', 1)
                              .arg(s.times.recompute_ms, 0, 'f', 1));
  html += row(
      tr("trace"),
      tr("%1 steps, %2 in memory").arg(snapshot_->trace().step_count()).arg(fmt(s.traceFootprint)));
  html += QStringLiteral("</table>");
  setHtml(html);
}

}  // namespace ckpt::ui
