#include "ui/panels/pins_view.hpp"

#include <QAction>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QKeyEvent>
#include <QMenu>
#include <QPainter>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

#include "ui/core/memory_series.hpp"

namespace ckpt::ui {

namespace {

constexpr int kPinIdRole = Qt::UserRole + 1;

QIcon swatch(const QColor& colour, bool current) {
  QPixmap pm(14, 14);
  pm.fill(Qt::transparent);
  QPainter p(&pm);
  p.setRenderHint(QPainter::Antialiasing);
  if (current) {
    // The current run is the plot's filled area, not a line: a small filled hill, nothing
    // that could pass for a checkbox.
    QColor fill = colour;
    fill.setAlphaF(0.45);
    p.setPen(QPen(colour, 1.2));
    p.setBrush(fill);
    p.drawPolygon(
        QPolygonF{QPointF(1, 13), QPointF(4, 6), QPointF(7, 9), QPointF(10, 2), QPointF(13, 13)});
  } else {
    p.setPen(Qt::NoPen);
    p.setBrush(colour);
    p.drawRoundedRect(QRectF(1, 1, 12, 12), 2, 2);
  }
  return QIcon(pm);
}

QString bytes(std::int64_t b) {
  return QString::fromStdString(formatBytes(b));
}

}  // namespace

PinsView::PinsView(QWidget* parent)
    : QWidget(parent),
      table_(new QTableWidget(0, columnCount)),
      pin_(new QPushButton(tr("Pin current"))),
      unpin_(new QPushButton(tr("Unpin"))),
      clear_(new QPushButton(tr("Clear all"))) {
  table_->setObjectName(QStringLiteral("pinsTable"));
  table_->setHorizontalHeaderLabels(
      {QString(), tr("Peak"), tr("Saved"), tr("Recomputed"), tr("Time")});
  table_->horizontalHeaderItem(peakColumn)->setToolTip(tr("Peak memory of the run"));
  table_->horizontalHeaderItem(savedColumn)
      ->setToolTip(tr("Activations saved for backward plus checkpoint inputs, live when the "
                      "forward ends"));
  table_->horizontalHeaderItem(recomputeColumn)
      ->setToolTip(tr("Op executions replayed in backward to recompute checkpointed segments "
                      "(recompute op executions)"));
  table_->horizontalHeaderItem(timeColumn)
      ->setToolTip(tr("Forward, recompute and backward; a dry run's is estimated"));
  table_->verticalHeader()->hide();
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed);
  table_->setContextMenuPolicy(Qt::CustomContextMenu);
  table_->setWordWrap(false);
  table_->setShowGrid(false);
  table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 6);
  QHeaderView* h = table_->horizontalHeader();
  h->setSectionResizeMode(QHeaderView::Stretch);
  h->setSectionResizeMode(colourColumn, QHeaderView::ResizeToContents);
  pin_->setToolTip(tr("Keep the current run's curve and figures to compare (Ctrl+P)"));
  unpin_->setToolTip(tr("Remove the selected pin (Delete)"));

  auto* buttons = new QHBoxLayout;
  buttons->addWidget(pin_);
  buttons->addWidget(unpin_);
  buttons->addStretch(1);
  buttons->addWidget(clear_);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->setSpacing(2);
  layout->addWidget(table_, 1);
  layout->addLayout(buttons);

  connect(pin_, &QPushButton::clicked, this, &PinsView::pinRequested);
  connect(unpin_, &QPushButton::clicked, this, [this] {
    if (const quint64 id = selectedPin()) emit unpinRequested(id);
  });
  connect(clear_, &QPushButton::clicked, this, &PinsView::clearRequested);
  connect(table_, &QTableWidget::itemChanged, this, &PinsView::onItemChanged);
  connect(table_, &QTableWidget::itemSelectionChanged, this, &PinsView::updateButtons);
  connect(table_, &QWidget::customContextMenuRequested, this, &PinsView::showContextMenu);
  auto* unpinKey = new QAction(this);
  unpinKey->setShortcut(QKeySequence::Delete);
  unpinKey->setShortcutContext(Qt::WidgetWithChildrenShortcut);
  connect(unpinKey, &QAction::triggered, unpin_, &QPushButton::click);
  table_->addAction(unpinKey);
  rebuild();
  // Tabbed with the Inspector, this dock's minimum becomes the right column's: the table's and
  // buttons' own would make the window too tall for a 768-pixel screen. Squeezed that far, the
  // table scrolls and the buttons are clipped; the right-click menu still does everything.
  setMinimumSize(1, 1);
}

void PinsView::setPins(const PinList* pins) {
  if (pins_) disconnect(pins_, nullptr, this, nullptr);
  pins_ = pins;
  if (pins_) connect(pins_, &PinList::changed, this, &PinsView::rebuild);
  rebuild();
}

void PinsView::setCurrent(RunSnapshotPtr snapshot) {
  current_ = std::move(snapshot);
  rebuild();
}

int PinsView::rowOf(quint64 id) const {
  for (int r = 0; r < table_->rowCount(); r += 2)
    if (table_->item(r, colourColumn)->data(kPinIdRole).toULongLong() == id && id != 0) return r;
  return -1;
}

quint64 PinsView::selectedPin() const {
  const auto rows = table_->selectionModel()->selectedRows();
  if (rows.isEmpty()) return 0;
  return table_->item(rows.first().row(), colourColumn)->data(kPinIdRole).toULongLong();
}

void PinsView::updateButtons() {
  const bool any = pins_ && !pins_->pins().empty();
  unpin_->setEnabled(selectedPin() != 0);
  clear_->setEnabled(any);
  pin_->setEnabled(current_ && current_->series);
}

// Rows 0 and 1 are the current run, then two rows per pin in the order they were pinned.
void PinsView::rebuild() {
  rebuilding_ = true;
  const quint64 selected = selectedPin();
  const std::size_t pinCount = pins_ ? pins_->pins().size() : 0;
  table_->setRowCount(2 * (static_cast<int>(pinCount) + (current_ ? 1 : 0)));
  int row = 0;
  if (current_) {
    fillRun(row, tr("current: %1").arg(runName(*current_)), pinFigures(current_->summary),
            palette().color(QPalette::Text));
    row += 2;
  }
  for (std::size_t i = 0; i < pinCount; ++i, row += 2) {
    const Pin& p = pins_->pins()[i];
    fillRun(row, p.name, p.figures, p.colour);
    for (int r : {row, row + 1}) table_->item(r, colourColumn)->setData(kPinIdRole, p.id);
    QTableWidgetItem* check = table_->item(row, colourColumn);
    check->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemIsUserCheckable);
    check->setCheckState(p.visible ? Qt::Checked : Qt::Unchecked);
    check->setToolTip(tr("Show this pin's curve in the plot"));
    table_->item(row, nameColumn)
        ->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemIsEditable);
  }
  if (const int r = rowOf(selected); r >= 0) table_->selectRow(r);
  rebuilding_ = false;
  updateButtons();
}

// Items are updated in place, never replaced: a change can come from inside the table's own
// itemChanged (a checkbox click), whose item must outlive it.
QTableWidgetItem* PinsView::cell(int row, int column) {
  QTableWidgetItem* item = table_->item(row, column);
  if (!item) {
    item = new QTableWidgetItem;
    table_->setItem(row, column, item);
  }
  item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
  item->setData(kPinIdRole, QVariant());
  item->setData(Qt::CheckStateRole, QVariant());
  item->setToolTip(QString());
  item->setIcon(QIcon());
  item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  // Every other run on a shaded ground, both of its rows: the pair reads as one entry.
  const bool shaded = (row / 2) % 2 == 1;
  item->setBackground(shaded ? palette().brush(QPalette::AlternateBase) : QBrush());
  return item;
}

void PinsView::fillRun(int row, const QString& name, const PinFigures& f, const QColor& colour) {
  const bool current = current_ && row == 0;
  QFont font = table_->font();
  font.setItalic(current);
  QTableWidgetItem* swatchItem = cell(row, colourColumn);
  swatchItem->setText(QString());
  swatchItem->setIcon(swatch(colour, current));
  table_->setSpan(row, nameColumn, 1, columnCount - nameColumn);
  QTableWidgetItem* nameItem = cell(row, nameColumn);
  nameItem->setText(name);
  nameItem->setToolTip(name);
  nameItem->setFont(font);
  nameItem->setTextAlignment(Qt::AlignLeft | Qt::AlignVCenter);
  cell(row + 1, colourColumn)->setText(QString());
  auto put = [&](int column, const QString& text) {
    QTableWidgetItem* item = cell(row + 1, column);
    item->setText(text);
    item->setFont(font);
    return item;
  };
  // A failed run's figures are its figures up to the failure, no saving.
  put(peakColumn, f.ok ? bytes(f.peakBytes) : tr("failed (%1)").arg(bytes(f.peakBytes)));
  put(savedColumn, bytes(f.savedBytes));
  put(recomputeColumn, QString::number(f.recomputeExecutions));
  put(timeColumn,
      (f.dryRun ? tr("≈%1 ms") : tr("%1 ms")).arg(f.totalMs, 0, 'f', f.totalMs < 10 ? 2 : 1))
      ->setToolTip(f.dryRun ? tr("Estimated: a dry run measures bytes, not time") : QString());
}

void PinsView::onItemChanged(QTableWidgetItem* item) {
  if (rebuilding_ || !item) return;
  const quint64 id = table_->item(item->row(), colourColumn)->data(kPinIdRole).toULongLong();
  if (id == 0) return;
  if (item->column() == colourColumn)
    emit visibilityRequested(id, item->checkState() == Qt::Checked);
  else if (item->column() == nameColumn)
    emit renameRequested(id, item->text());
}

void PinsView::showContextMenu(const QPoint& pos) {
  const int row = table_->rowAt(pos.y());
  const quint64 id = row >= 0 ? table_->item(row, colourColumn)->data(kPinIdRole).toULongLong() : 0;
  QMenu menu(this);
  menu.addAction(tr("Pin current run"), this, &PinsView::pinRequested)
      ->setEnabled(current_ && current_->series);
  if (id != 0) {
    const Pin* p = pins_ ? pins_->find(id) : nullptr;
    const bool visible = p && p->visible;
    menu.addAction(visible ? tr("Hide curve") : tr("Show curve"), this,
                   [this, id, visible] { emit visibilityRequested(id, !visible); });
    menu.addAction(tr("Unpin"), this, [this, id] { emit unpinRequested(id); });
  }
  menu.addSeparator();
  menu.addAction(tr("Clear all pins"), this, &PinsView::clearRequested)
      ->setEnabled(pins_ && !pins_->pins().empty());
  menu.exec(table_->viewport()->mapToGlobal(pos));
}

}  // namespace ckpt::ui
