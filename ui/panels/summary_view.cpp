#include "ui/panels/summary_view.hpp"

#include <cmath>

#include "engine/report/figures.hpp"
#include "ui/core/memory_series.hpp"
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
// " (−2.99 MiB, −9.4%)", green when the peak is lower, red when it is higher.
QString changeText(const PeakChange& c, const Palette& pal) {
  const QString sign = c.bytes < 0 ? QStringLiteral("−") : QStringLiteral("+");
  return QStringLiteral(" <span style='color:%1'>(%2%3, %4%5%)</span>")
      .arg((c.bytes <= 0 ? pal.category(MemoryCategory::gradient) : pal.error).name(), sign,
           fmt(std::llabs(c.bytes)), sign)
      .arg(std::fabs(c.percent), 0, 'f', 1);
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
  const Palette pal = Palette::forApplication();
  QString html = QStringLiteral("<table>");
  html += statusRows(pal);
  html += peakRows(pal);
  html += costRows();
  html += QStringLiteral("</table>");
  setHtml(html);
}

// What ran and how it ended: the configuration, real or dry run, ok or the failure and its fix.
QString SummaryView::statusRows(const Palette& pal) const {
  const RunSummary& s = snapshot_->summary;
  QString html;
  html += row(tr("configuration"), QString::fromStdString(s.label).toHtmlEscaped());
  html += row(tr("memory of"), QString::fromStdString(s.memory_of).toHtmlEscaped());
  // Sharded, one rank's figures are what decides: they come first.
  if (s.per_rank) html += rankRows(pal);
  if (!snapshot_->dryRun()) {
    html += row(tr("run"), tr("real run: bytes the allocator held, times measured"));
  } else if (!snapshot_->notComputed.empty()) {
    html +=
        row(tr("run"), QStringLiteral("<b>%1</b> %2")
                           .arg(tr("dry run only:"),
                                QString::fromStdString(snapshot_->notComputed).toHtmlEscaped()));
  } else {
    html +=
        row(tr("run"), tr("<b>dry run</b>: exact bytes, estimated times, no values") +
                           (snapshot_->realRunFollows ? tr("; the real run follows…") : QString()));
  }
  html += row(tr("status"),
              s.ok ? tr("ok") + (running_ ? tr(" (re-running…)") : QString())
                   : QStringLiteral("<span style='color:%1'><b>%2</b></span>")
                         .arg(pal.error.name(), QString::fromStdString(s.error).toHtmlEscaped()));
  if (!s.ok && !s.failure.why.empty()) {
    html += row(tr("why"), QString::fromStdString(s.failure.why).toHtmlEscaped());
    if (!s.failure.fix.empty())
      html += row(
          tr("fix"),
          QStringLiteral("<b>%1</b>").arg(QString::fromStdString(s.failure.fix).toHtmlEscaped()));
  }
  if (!s.ok)
    html += row(tr("figures"),
                QStringLiteral("<span style='color:%1'>%2</span>")
                    .arg(pal.error.name(), tr("of the <b>failed run</b>, up to the failure: "
                                              "not a measurement of this configuration, and no "
                                              "saving")));
  return html;
}

// The peak, its change from the previous configuration's, where it is and what it holds.
QString SummaryView::peakRows(const Palette& pal) const {
  const RunSummary& s = snapshot_->summary;
  QString html;
  QString peak = QStringLiteral("<b>%1</b>").arg(fmt(s.peak.bytes));
  // Sharded, the plot's curve and the previous configuration's are per rank: the comparison
  // is made there (rankRows), not with the run's own peak.
  if (ghost_ && ghost_->peak_bytes > 0 && s.ok && !s.per_rank) {
    peak += changeText(peak_change(s.peak.bytes, ghost_->peak_bytes), pal);
    peak += tr("<br><span style='color:gray'>vs %1: %2</span>")
                .arg(ghostLabel_.toHtmlEscaped(), fmt(ghost_->peak_bytes));
  }
  html += row(s.per_rank ? tr("unsharded run")
              : s.ok     ? tr("peak memory")
                         : tr("peak (failed run)"),
              peak);
  // Against the same settings without checkpoints, as `ckptlab-cli run` compares (the line
  // above compares with the previous configuration, whatever it was).
  if (const auto plain = s.ok ? against_plain(s) : std::nullopt) {
    html +=
        row(tr("vs plain run"),
            tr("peak %1 → %2").arg(fmt(s.baseline->peak_bytes), fmt(s.peak.bytes)) +
                changeText(plain->peak, pal) +
                tr("<br>%1 op executions (%2%3)")
                    .arg(s.baseline->executions)
                    .arg(plain->extra_executions >= 0 ? QStringLiteral("+") : QStringLiteral("−"))
                    .arg(std::llabs(plain->extra_executions)));
  }
  QString at = QString::fromStdString(s.peak_op).toHtmlEscaped();
  if (!s.peak_node.empty())
    at += QStringLiteral(" (%1)").arg(QString::fromStdString(s.peak_node).toHtmlEscaped());
  html += row(
      tr("peak at"),
      tr("step %1, %2 %3").arg(s.peak.step).arg(QLatin1String(phase_name(s.peak_phase))).arg(at));
  for (std::size_t c = 0; c < kMemoryCategoryCount; ++c) {
    if (s.peak.by_category[c] == 0) continue;
    html += row(QStringLiteral("&nbsp;&nbsp;<span style='color:%1'>■</span> %2")
                    .arg(pal.categories[c].name(), categoryLabel(static_cast<MemoryCategory>(c))),
                fmt(s.peak.by_category[c]));
  }
  if (const auto& o = s.offload)
    html += row(tr("offloaded"),
                tr("host memory <b>%1</b> at most; %2 to the host and back, ~%3 ms at %4 GB/s "
                   "(estimate)")
                    .arg(fmt(o->host_peak_bytes), fmt(o->to_host_bytes))
                    .arg(o->copy_ms, 0, 'f', 1)
                    .arg(o->pcie_gb_per_s, 0, 'f', 0));
  // The training step's phases, as torch.cuda.max_memory_allocated() reads them around each.
  if (const StepPhases& p = s.step_phases; p.has_optimizer_step)
    html +=
        row(tr("training step"), tr("start %1 · forward+backward peak %2<br>after backward %3 · "
                                    "optimizer step peak <b>%4</b>")
                                     .arg(fmt(p.start), fmt(p.peak_forward_backward),
                                          fmt(p.after_backward), fmt(p.peak_optimizer_step)));
  return html;
}

// One FSDP2 rank (fsdp_memory.hpp): its peak, what it holds there, and that it is modelled.
QString SummaryView::rankRows(const Palette& pal) const {
  const FsdpSummary& r = *snapshot_->summary.per_rank;
  QString peak = QStringLiteral("<b>%1</b>").arg(fmt(r.peak_bytes));
  if (ghost_ && ghost_->peak_bytes > 0 && snapshot_->summary.ok) {
    peak += changeText(peak_change(r.peak_bytes, ghost_->peak_bytes), pal);
    peak += tr("<br><span style='color:gray'>vs %1: %2%3</span>")
                .arg(ghostLabel_.toHtmlEscaped(), fmt(ghost_->peak_bytes),
                     ghost_->per_rank ? tr(" per rank") : tr(", unsharded"));
  }
  peak += tr("<br>step %1, %2%3")
              .arg(r.peak_step)
              .arg(QString::fromStdString(r.peak_phase))
              .arg(r.peak_node.empty() ? QString()
                                       : QStringLiteral(" (%1)").arg(
                                             QString::fromStdString(r.peak_node).toHtmlEscaped()));
  QString html = row(tr("peak per rank"), peak);
  html +=
      row(tr("sharding"), tr("FSDP2 on <b>%1</b> rank%2: fully_shard on %3 blocks and the root; "
                             "param_dtype %4, reduce_dtype %5, reshard_after_forward %6")
                              .arg(r.ranks)
                              .arg(r.ranks == 1 ? QString() : QStringLiteral("s"))
                              .arg(r.blocks)
                              .arg(QLatin1String(dtype_name(r.param_dtype)),
                                   QLatin1String(dtype_name(r.settings.reduce_dtype)),
                                   r.settings.reshard_after_forward ? QStringLiteral("true")
                                                                    : QStringLiteral("false")));
  for (std::size_t c = 0; c < kFsdpCategoryCount; ++c) {
    if (r.at_peak[c] == 0) continue;
    html +=
        row(QStringLiteral("&nbsp;&nbsp;<span style='color:%1'>■</span> %2")
                .arg(pal.rankCategories[c].name(), rankCategoryLabel(static_cast<FsdpCategory>(c))),
            fmt(r.at_peak[c]));
  }
  html += row(tr("per-rank figures"),
              QStringLiteral("<span style='color:%1'>%2</span>")
                  .arg(pal.warning.name(), QString::fromLatin1(kFsdpNotMeasured)));
  return html;
}

// What the checkpoints cost: op executions, recomputes, RNG state, time, and the trace itself.
QString SummaryView::costRows() const {
  const RunSummary& s = snapshot_->summary;
  const Trace& trace = snapshot_->trace();
  QString html;
  if (s.reserved)
    html += row(tr("reserved"),
                tr("<b>%1</b> at step %2, %3 segments; %4 beyond the tensors at the peak")
                    .arg(fmt(s.reserved->peak_bytes))
                    .arg(s.reserved->peak_step)
                    .arg(s.reserved->segments)
                    .arg(fmt(s.reserved->fragmentation_at_peak)));
  if (s.gpu)
    html += row(s.per_rank ? tr("unsharded, on one GPU") : tr("on the GPU"),
                tr("reserved %1 + CUDA context ~%2 (estimate) = <b>%3</b> of %4: %5")
                    .arg(fmt(s.gpu->reserved_peak), fmt(s.gpu->context), fmt(s.gpu->total()),
                         fmt(s.gpu->capacity))
                    .arg(s.gpu->fits() ? tr("fits") : tr("<b>does not fit</b>")));
  html += row(tr("end of forward"), tr("%1 live").arg(fmt(s.end_of_forward_total)));
  html += row(tr("op executions"), tr("forward %1 · recompute %2 · backward %3 (total %4)")
                                       .arg(s.executions.forward)
                                       .arg(s.executions.recompute)
                                       .arg(s.executions.backward)
                                       .arg(s.total_executions()));
  const double overhead = recompute_overhead_percent(s.executions);
  html += row(tr("recompute overhead"), tr("<b>+%1</b> op executions (%2% of the forward)")
                                            .arg(s.executions.recompute)
                                            .arg(overhead, 0, 'f', 1));
  html += row(tr("checkpoints"),
              tr("%1 segments, %2 recomputed").arg(s.checkpoints).arg(trace.recomputes().size()));
  const auto rng = static_cast<std::size_t>(MemoryCategory::rng_state);
  if (snapshot_->series && snapshot_->series->max_by_category[rng] > 0)
    html +=
        row(tr("RNG state held"), tr("up to %1").arg(fmt(snapshot_->series->max_by_category[rng])));
  html += row(snapshot_->dryRun() ? tr("est. time") : tr("wall time"),
              tr("forward %1 ms · backward %2 ms (recompute %3 ms)")
                  .arg(s.times.forward_ms, 0, 'f', 1)
                  .arg(s.times.backward_ms, 0, 'f', 1)
                  .arg(s.times.recompute_ms, 0, 'f', 1));
  html +=
      row(tr("trace"),
          tr("%1 steps, %2 in memory").arg(trace.step_count()).arg(fmt(trace.memory_footprint())));
  return html;
}

}  // namespace ckpt::ui
