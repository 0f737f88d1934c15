#pragma once

// The run summary dock: peak (and how it moved against the previous configuration), bytes by
// category at the peak, op executions per phase and the recompute overhead, checkpoints and
// RNG state, times — the figures the CLI prints.

#include <QTextBrowser>

#include "ui/session/run_controller.hpp"

namespace ckpt::ui {

struct Palette;

class SummaryView : public QTextBrowser {
  Q_OBJECT

 public:
  explicit SummaryView(QWidget* parent = nullptr);
  void setSnapshot(RunSnapshotPtr snapshot, MemorySeriesPtr ghost, const QString& ghostLabel);
  void setRunning(bool running);

 private:
  void refresh();
  // The table's rows, in three groups.
  QString statusRows(const Palette& pal) const;
  QString peakRows(const Palette& pal) const;
  QString rankRows(const Palette& pal) const;
  QString costRows() const;
  RunSnapshotPtr snapshot_;
  MemorySeriesPtr ghost_;
  QString ghostLabel_;
  bool running_ = false;
};

}  // namespace ckpt::ui
