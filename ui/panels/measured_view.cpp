#include "ui/panels/measured_view.hpp"

#include <QCheckBox>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <cstdlib>

#include "ui/core/memory_series.hpp"

namespace ckpt::ui {

namespace {

QString bytes(std::int64_t b) {
  return QString::fromStdString(formatBytes(b));
}

QString signedBytes(std::int64_t v) {
  return (v > 0   ? QStringLiteral("+")
          : v < 0 ? QStringLiteral("−")
                  : QString()) +
         bytes(std::llabs(v));
}

// Shown in the list: the first frames a person reads (the engine picks them).
constexpr std::size_t kFramesShown = 6;
// Allocations listed: a peak can hold tens of thousands; the largest say where it went.
constexpr std::size_t kListed = 500;

enum Column { sizeColumn, whereColumn, moduleColumn, columnCount };

}  // namespace

MeasuredView::MeasuredView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  summary_ = new QLabel(this);
  summary_->setObjectName(QStringLiteral("measuredSummary"));
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  summary_->setText(
      tr("<i>No snapshot. File ▸ Open Memory Snapshot… reads the pickle that "
         "torch.cuda.memory._dump_snapshot() writes (or drop one here).</i>"));
  layout->addWidget(summary_);
  auto* row = new QHBoxLayout;
  alone_ = new QCheckBox(tr("Snapshot alone in the plot"), this);
  alone_->setToolTip(
      tr("Its allocated and reserved bytes over its own events, instead of its "
         "allocated bytes over the engine's prediction"));
  connect(alone_, &QCheckBox::toggled, this, &MeasuredView::aloneChanged);
  row->addWidget(alone_);
  row->addStretch(1);
  auto* close = new QPushButton(tr("Close"), this);
  close->setToolTip(tr("Close the snapshot"));
  connect(close, &QPushButton::clicked, this, &MeasuredView::closeRequested);
  row->addWidget(close);
  layout->addLayout(row);
  tree_ = new QTreeWidget(this);
  tree_->setObjectName(QStringLiteral("measuredTree"));
  tree_->setColumnCount(columnCount);
  tree_->setHeaderLabels({tr("Bytes"), tr("Allocated"), tr("Module (attributed)")});
  tree_->header()->setSectionResizeMode(QHeaderView::Interactive);
  tree_->setAlternatingRowColors(true);
  tree_->setUniformRowHeights(true);
  connect(tree_, &QTreeWidget::currentItemChanged, this, [this](QTreeWidgetItem* item) {
    while (item && item->parent()) item = item->parent();
    if (!item) return;
    const QString module = item->data(moduleColumn, Qt::UserRole).toString();
    if (item->data(moduleColumn, Qt::UserRole + 1).toBool()) emit moduleActivated(module);
  });
  layout->addWidget(tree_, 1);
}

bool MeasuredView::alone() const {
  return alone_->isChecked();
}

void MeasuredView::setSnapshot(LoadedSnapshotPtr loaded,
                               std::optional<SnapshotComparison> comparison,
                               std::shared_ptr<const SnapshotAttribution> attribution) {
  const bool sameFile = loaded && loaded_ == loaded;
  loaded_ = std::move(loaded);
  comparison_ = comparison;
  attribution_ = std::move(attribution);
  refreshSummary();
  if (!sameFile || attribution_) fillTree();
}

void MeasuredView::refreshSummary() {
  if (!loaded_) {
    summary_->setText(tr("<i>No snapshot.</i>"));
    return;
  }
  const MeasuredTimeline& t = loaded_->timeline;
  const auto& events = t.allocated.size();
  QString when = t.peak_allocated_event < 0
                     ? tr("before its first event")
                     : tr("after event %1 of %2").arg(t.peak_allocated_event).arg(events);
  if (t.peak_time_us >= 0)
    when += tr(", %1 ms in").arg(static_cast<double>(t.peak_time_us) / 1000.0, 0, 'f', 2);
  QString html = tr("<b>%1</b> (device %2)<br>"
                    "peak allocated <b>%3</b>, %4<br>"
                    "peak reserved %5 · at the start %6 allocated, so the step added <b>%7</b>")
                     .arg(QFileInfo(loaded_->path).fileName().toHtmlEscaped())
                     .arg(t.device)
                     .arg(bytes(t.peak_allocated), when, bytes(t.peak_reserved),
                          bytes(t.start_allocated), bytes(t.peak_allocated - t.start_allocated));
  if (comparison_) {
    const SnapshotComparison& c = *comparison_;
    html += tr("<br>engine's prediction (dry run) of the step <b>%1</b>: measured − predicted = "
               "<b>%2</b> "
               "(%3×)")
                .arg(bytes(c.predicted_step_peak), signedBytes(c.difference))
                .arg(c.ratio, 0, 'f', 3);
  }
  if (attribution_)
    html += tr("<br>%1 of %2 allocations attributed to the model (%3 to parameters)")
                .arg(attribution_->matched)
                .arg(attribution_->allocs)
                .arg(attribution_->parameters);
  if (!t.exact)
    html += QStringLiteral("<br><i>%1</i>").arg(QString::fromStdString(t.note).toHtmlEscaped());
  summary_->setText(html);
}

void MeasuredView::fillTree() {
  tree_->clear();
  if (!loaded_) return;
  const MemorySnapshot& s = loaded_->snapshot;
  const MeasuredTimeline& t = loaded_->timeline;
  const std::size_t n = std::min(t.live_at_peak.size(), kListed);
  QList<QTreeWidgetItem*> items;
  items.reserve(static_cast<qsizetype>(n));
  for (std::size_t i = 0; i < n; ++i) {
    const MeasuredAllocation& a = t.live_at_peak[i];
    auto* item = new QTreeWidgetItem;
    item->setText(sizeColumn, bytes(a.bytes));
    item->setTextAlignment(sizeColumn, Qt::AlignRight | Qt::AlignVCenter);
    item->setText(whereColumn,
                  a.alloc_event < 0 ? tr("before recording") : tr("event %1").arg(a.alloc_event));
    if (const AllocationOwner* o = attribution_ ? attribution_->owner(a) : nullptr) {
      const QString module = o->module.empty() ? tr("(model)") : QString::fromStdString(o->module);
      item->setText(moduleColumn, o->parameter
                                      ? tr("%1 · %2").arg(module, QString::fromStdString(o->node))
                                      : tr("%1 · step %2").arg(module).arg(o->step));
      item->setData(moduleColumn, Qt::UserRole, QString::fromStdString(o->module));
      item->setData(moduleColumn, Qt::UserRole + 1, true);
    }
    // Frames span the row: "resnet.py:165  build_model", the full path in the tooltip.
    for (const SnapshotFrame* f : s.user_frames(a.stack, kFramesShown)) {
      auto* frame = new QTreeWidgetItem(item);
      const QString file = QString::fromStdString(f->filename);
      const QString function = QString::fromStdString(f->name);
      frame->setText(
          sizeColumn,
          QStringLiteral("%1:%2  %3").arg(QFileInfo(file).fileName()).arg(f->line).arg(function));
      frame->setToolTip(sizeColumn,
                        QStringLiteral("%1:%2\n%3").arg(file).arg(f->line).arg(function));
    }
    if (item->childCount() == 0)
      new QTreeWidgetItem(item, {a.alloc_event < 0 ? tr("(made before _record_memory_history)")
                                                   : tr("(no frames recorded)")});
    items.push_back(item);
  }
  tree_->addTopLevelItems(items);
  for (QTreeWidgetItem* item : items)
    for (int k = 0; k < item->childCount(); ++k) item->child(k)->setFirstColumnSpanned(true);
  if (!items.isEmpty()) items.front()->setExpanded(true);
  const QFontMetrics fm(tree_->font());
  tree_->setColumnWidth(sizeColumn, fm.horizontalAdvance(QStringLiteral("1023.99 MiB")) + 40);
  tree_->setColumnWidth(whereColumn, fm.horizontalAdvance(tr("before recording")) + 16);
}

}  // namespace ckpt::ui
