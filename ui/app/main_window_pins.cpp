// MainWindow: pinned comparisons. The Pin action (toolbar, Run menu, Ctrl+P), the Pinned dock's
// requests sent to the Session's PinList, and the plot's pinned curves kept in step with it.

#include <QAction>
#include <QDockWidget>
#include <QMenu>
#include <QToolBar>

#include "ui/app/main_window.hpp"
#include "ui/panels/pins_view.hpp"
#include "ui/plot/memory_plot.hpp"

namespace ckpt::ui {

void MainWindow::buildPins() {
  pinAction_ = new QAction(QIcon(QStringLiteral(":/icons/pin.svg")), tr("&Pin"), this);
  pinAction_->setObjectName(QStringLiteral("pinAction"));
  pinAction_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_P));
  pinAction_->setToolTip(
      tr("Pin this run: keep its curve and figures to compare with the next ones (Ctrl+P)"));
  // Right after Run again: both act on the run shown.
  if (auto* bar = findChild<QToolBar*>(QStringLiteral("runToolBar"))) {
    const QList<QAction*> actions = bar->actions();
    const auto rerun = actions.indexOf(findChild<QAction*>(QStringLiteral("rerunAction")));
    bar->insertAction(rerun >= 0 ? actions.value(rerun + 1) : nullptr, pinAction_);
  }
  if (runMenu_) {
    runMenu_->insertAction(runMenu_->actions().value(0), pinAction_);
    QAction* clear = new QAction(tr("Clear Pins"), this);
    connect(clear, &QAction::triggered, session_->pins(), &PinList::clear);
    runMenu_->insertAction(runMenu_->actions().value(1), clear);
    runMenu_->insertSeparator(runMenu_->actions().value(2));
  }
  auto* dock = findChild<QDockWidget*>(QStringLiteral("pinsDock"));
  connect(pinAction_, &QAction::triggered, this, [this, dock] {
    if (!session_->pinCurrent()) return;
    dock->show();
    dock->raise();
  });

  PinList* pins = session_->pins();
  pinsView_->setPins(pins);
  connect(pinsView_, &PinsView::pinRequested, pinAction_, &QAction::trigger);
  connect(pinsView_, &PinsView::unpinRequested, pins, &PinList::remove);
  connect(pinsView_, &PinsView::clearRequested, pins, &PinList::clear);
  connect(pinsView_, &PinsView::visibilityRequested, pins, &PinList::setVisible);
  connect(pinsView_, &PinsView::renameRequested, pins, &PinList::rename);
  connect(pins, &PinList::changed, this, &MainWindow::updatePlotPins);
  connect(session_, &Session::runFinished, pinsView_, &PinsView::setCurrent);
  connect(session_, &Session::runPreviewed, pinsView_, &PinsView::setCurrent);
  connect(session_, &Session::modelChanged, pinsView_, [this] { pinsView_->setCurrent(nullptr); });
}

void MainWindow::updatePlotPins() {
  std::vector<PlotPin> visible;
  for (const Pin& p : session_->pins()->pins())
    if (p.visible) visible.push_back({p.series, p.colour, p.name});
  plot_->setPins(std::move(visible));
}

}  // namespace ckpt::ui
