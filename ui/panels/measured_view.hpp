#pragma once

// The Measured dock: a PyTorch memory snapshot opened beside the model (File ▸ Open Memory
// Snapshot, or dropped on the window). Its peaks (allocated and reserved, when, from what
// start), the comparison with the engine's prediction when a run is shown, and the allocations
// live at the measured peak, largest first, each with its frames (file, line, function) and
// the module of the model it was attributed to. Every figure comes from engine/snapshot,
// engine/trace/snapshot_compare and engine/report/snapshot_attribution.

#include <QWidget>
#include <memory>
#include <optional>

#include "engine/report/snapshot_attribution.hpp"
#include "engine/snapshot/measured_timeline.hpp"
#include "engine/snapshot/memory_snapshot.hpp"
#include "engine/trace/snapshot_compare.hpp"

class QCheckBox;
class QLabel;
class QTreeWidget;
class QTreeWidgetItem;

namespace ckpt::ui {

struct LoadedSnapshot {
  QString path;
  MemorySnapshot snapshot;
  MeasuredTimeline timeline;
};
using LoadedSnapshotPtr = std::shared_ptr<const LoadedSnapshot>;

class MeasuredView : public QWidget {
  Q_OBJECT

 public:
  explicit MeasuredView(QWidget* parent = nullptr);
  // `comparison` and `attribution` are set when a run of the open model is shown beside it.
  void setSnapshot(LoadedSnapshotPtr loaded, std::optional<SnapshotComparison> comparison,
                   std::shared_ptr<const SnapshotAttribution> attribution);
  bool alone() const;
  QTreeWidget* tree() const { return tree_; }
  QLabel* summary() const { return summary_; }

 signals:
  // "Snapshot alone" toggled: the plot shows the snapshot's own curves, or over the run.
  void aloneChanged(bool alone);
  // An allocation attributed to a module was chosen.
  void moduleActivated(const QString& module);
  void closeRequested();

 private:
  void refreshSummary();
  void fillTree();
  LoadedSnapshotPtr loaded_;
  std::optional<SnapshotComparison> comparison_;
  std::shared_ptr<const SnapshotAttribution> attribution_;
  QLabel* summary_;
  QCheckBox* alone_;
  QTreeWidget* tree_;
};

}  // namespace ckpt::ui
