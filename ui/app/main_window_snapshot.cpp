// MainWindow: a measured PyTorch memory snapshot beside the model. File ▸ Open Memory
// Snapshot (or a .pickle dropped on the window, or --snapshot) reads it with the engine; the
// Measured dock lists its peak and what was live then; the memory plot draws it over the
// engine's current prediction (or alone), and an allocation attributed to a module shows that
// module in the Inspector and the module tree. Every figure is the engine's: this file only
// asks for them when the snapshot or the run changes.

#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMessageBox>

#include "engine/report/snapshot_attribution.hpp"
#include "engine/trace/snapshot_compare.hpp"
#include "ui/app/main_window.hpp"
#include "ui/panels/inspector.hpp"
#include "ui/panels/measured_view.hpp"
#include "ui/panels/module_tree.hpp"
#include "ui/plot/memory_plot.hpp"

namespace ckpt::ui {

void MainWindow::buildSnapshot() {
  measured_ = new MeasuredView;
  measuredDock_ = new QDockWidget(tr("Measured"), this);
  measuredDock_->setObjectName(QStringLiteral("measuredDock"));
  measuredDock_->setWidget(measured_);
  addDockWidget(Qt::RightDockWidgetArea, measuredDock_);
  tabifyDockWidget(findChild<QDockWidget*>(QStringLiteral("inspectorDock")), measuredDock_);
  measuredDock_->hide();
  viewMenu_->insertAction(viewMenu_->actions().value(viewMenu_->actions().size() - 2),
                          measuredDock_->toggleViewAction());
  connect(measured_, &MeasuredView::aloneChanged, this, [this] { refreshMeasured(); });
  connect(measured_, &MeasuredView::closeRequested, this, [this] {
    snapshot_.reset();
    measuredDock_->hide();
    refreshMeasured();
  });
  connect(measured_, &MeasuredView::moduleActivated, this, [this](const QString& module) {
    inspector_->showModule(module);
    modules_->selectModule(module);
  });
  // After the plot has the new run (MainWindow::onRunFinished is connected first).
  connect(session_, &Session::runFinished, this, [this] { refreshMeasured(); });
  connect(session_, &Session::runPreviewed, this, [this] { refreshMeasured(); });
}

bool MainWindow::openSnapshot(const QString& path, QString* error) {
  auto loaded = std::make_shared<LoadedSnapshot>();
  try {
    loaded->path = path;
    loaded->snapshot = read_memory_snapshot(path.toStdString());
    loaded->timeline = measure_timeline(loaded->snapshot);
  } catch (const std::exception& e) {
    const QString message = QString::fromStdString(e.what());
    if (error) *error = message;
    showMessage(tr("Cannot open the snapshot: %1").arg(message), true);
    return false;
  }
  snapshot_ = std::move(loaded);
  measuredDock_->show();
  measuredDock_->raise();
  refreshMeasured();
  showMessage(tr("Opened the memory snapshot %1").arg(QFileInfo(path).fileName()));
  return true;
}

void MainWindow::openSnapshotDialog() {
  const QString path =
      QFileDialog::getOpenFileName(this, tr("Open a PyTorch memory snapshot"), QString(),
                                   tr("Memory snapshots (*.pickle *.pkl);;All files (*)"));
  if (path.isEmpty()) return;
  QString error;
  if (!openSnapshot(path, &error))
    QMessageBox::warning(this, tr("Cannot open the snapshot"), error);
}

void MainWindow::refreshMeasured() {
  if (!snapshot_) {
    plot_->setMeasured(nullptr, false);
    measured_->setSnapshot(nullptr, std::nullopt, nullptr);
    return;
  }
  const MeasuredTimeline& t = snapshot_->timeline;
  const RunSnapshotPtr run = session_->current();
  const bool overRun = run && run->result && !measured_->alone();
  auto plot = std::make_shared<MeasuredPlot>();
  plot->name = QFileInfo(snapshot_->path).fileName();
  plot->events = static_cast<std::int64_t>(t.allocated.size());
  plot->allocated = allocated_curve(t, overRun ? CurveBase::above_start : CurveBase::absolute);
  plot->reserved = reserved_curve(t);
  std::optional<SnapshotComparison> comparison;
  std::shared_ptr<const SnapshotAttribution> attribution;
  if (run && run->result) {
    comparison = compare_snapshot(t, run->trace());
    if (overRun) plot->comparison = comparison;
    if (run->model)
      attribution = std::make_shared<const SnapshotAttribution>(
          attribute_snapshot(snapshot_->snapshot, t, run->trace(), *run->model));
    // On the run's steps where the attribution found twins, not merely stretched.
    if (overRun && attribution)
      plot->allocated = allocated_curve_on_steps(t, *attribution, run->trace());
  }
  plot_->setMeasured(plot, !overRun);
  measured_->setSnapshot(snapshot_, comparison, attribution);
}

}  // namespace ckpt::ui
