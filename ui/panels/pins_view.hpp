#pragma once

// The Pinned dock: a comparison table of the current run and every pinned one — colour and
// visible checkbox, name, peak, bytes saved for backward, recompute op executions and time,
// the figures `ckptlab-cli compare` prints. It reads the Session's PinList and asks for every
// change through signals; the list, not the table, is the truth.

#include <QPointer>
#include <QWidget>

#include "ui/session/pins.hpp"

class QPushButton;
class QTableWidget;
class QTableWidgetItem;

namespace ckpt::ui {

class PinsView : public QWidget {
  Q_OBJECT

 public:
  // Each run takes two rows, so that names stay readable in a narrow dock: its name (spanning
  // the figures' columns) with the colour and visible checkbox, then its figures.
  enum Column { colourColumn, peakColumn, savedColumn, recomputeColumn, timeColumn, columnCount };
  static constexpr int nameColumn = peakColumn;

  explicit PinsView(QWidget* parent = nullptr);
  void setPins(const PinList* pins);
  void setCurrent(RunSnapshotPtr snapshot);
  QTableWidget* table() const { return table_; }
  // The name row of pin `id` (its figures are on the next row; rows 0 and 1 are the current
  // run's), -1 when none shows it.
  int rowOf(quint64 id) const;

 signals:
  void pinRequested();
  void unpinRequested(quint64 id);
  void clearRequested();
  void visibilityRequested(quint64 id, bool visible);
  void renameRequested(quint64 id, const QString& name);

 private:
  void rebuild();
  void fillRun(int row, const QString& name, const PinFigures& f, const QColor& colour);
  QTableWidgetItem* cell(int row, int column);
  void onItemChanged(QTableWidgetItem* item);
  void showContextMenu(const QPoint& pos);
  quint64 selectedPin() const;
  void updateButtons();

  QTableWidget* table_;
  QPushButton* pin_;
  QPushButton* unpin_;
  QPushButton* clear_;
  QPointer<const PinList> pins_;
  RunSnapshotPtr current_;
  bool rebuilding_ = false;
};

}  // namespace ckpt::ui
