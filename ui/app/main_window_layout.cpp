// MainWindow: the window's geometry and dock layout. Defaults that suit the screen, repair of a
// restored layout that does not (a render's or another screen's), View ▸ Reset Layout, and side
// docks that take their share when the window grows.

#include <QDockWidget>
#include <QResizeEvent>
#include <QScreen>
#include <QSettings>
#include <QSplitter>
#include <QStatusBar>
#include <QTimer>
#include <QToolBar>
#include <cmath>

#include "ui/app/main_window.hpp"
#include "ui/app/window_layout.hpp"
#include "ui/tours/tour_runner.hpp"

namespace ckpt::ui {

namespace {

QRect availableFor(const QWidget* w) {
  const QScreen* s = w->screen();
  return s ? s->availableGeometry() : QRect();
}

}  // namespace

QList<QDockWidget*> MainWindow::sideDocks() const {
  QList<QDockWidget*> out;
  for (QDockWidget* d : findChildren<QDockWidget*>()) {
    const Qt::DockWidgetArea area = dockWidgetArea(d);
    if (d->isVisible() && !d->isFloating() &&
        (area == Qt::LeftDockWidgetArea || area == Qt::RightDockWidgetArea))
      out << d;
  }
  return out;
}

void MainWindow::arrangeDocks(int windowWidth) {
  const auto dock = [this](const char* name) {
    return findChild<QDockWidget*>(QLatin1String(name), Qt::FindDirectChildrenOnly);
  };
  QDockWidget *modules = dock("modulesDock"), *notes = dock("notesDock"),
              *summary = dock("summaryDock"), *inspector = dock("inspectorDock"),
              *lessons = dock("lessonsDock"), *code = dock("codeDock"), *plan = dock("planDock"),
              *pins = dock("pinsDock");
  for (QDockWidget* d : {modules, notes, summary, inspector, lessons, code, plan}) {
    d->setFloating(false);
    addDockWidget(d == modules || d == notes ? Qt::LeftDockWidgetArea : Qt::RightDockWidgetArea, d);
    d->setMinimumWidth(kMinSideDockWidth);
    d->show();
  }
  splitDockWidget(modules, notes, Qt::Vertical);
  splitDockWidget(summary, inspector, Qt::Vertical);
  tabifyDockWidget(summary, code);
  tabifyDockWidget(summary, plan);
  tabifyDockWidget(inspector, lessons);
  // Beside the plot (the lower right column), where a comparison is read against the curves;
  // shown once there is a pin (the Pin action raises it). Shown among the defaults, it made a
  // reset window on a 768-pixel screen 16 px taller than the default (test_ui_first_window).
  pins->setFloating(false);
  pins->setMinimumWidth(kMinSideDockWidth);
  tabifyDockWidget(inspector, pins);
  pins->setVisible(!session_->pins()->pins().empty());
  // The Measured dock shares the Inspector's place while a snapshot is open
  // (main_window_snapshot.cpp).
  if (QDockWidget* measured = dock("measuredDock")) {
    measured->setFloating(false);
    measured->setMinimumWidth(kMinSideDockWidth);
    tabifyDockWidget(inspector, measured);
    measured->setVisible(snapshot_ != nullptr);
  }
  // The Lesson dock shares the Notes' place while a lesson runs (main_window_tours.cpp).
  if (QDockWidget* tour = dock("tourDock")) {
    tour->setFloating(false);
    tour->setMinimumWidth(kMinSideDockWidth);
    tabifyDockWidget(notes, tour);
    tour->setVisible(tours_ && tours_->active());
    if (tour->isVisible()) tour->raise();
  }
  summary->raise();
  inspector->raise();
  const SideDockWidths w = defaultSideDockWidths(windowWidth);
  resizeDocks({modules, summary}, {w.left, w.right}, Qt::Horizontal);
  resizeDocks({modules, notes}, {420, 300}, Qt::Vertical);
  resizeDocks({summary, inspector}, {420, 300}, Qt::Vertical);
}

void MainWindow::applyDefaultLayout(const QRect& geometry) {
  setWindowState(windowState() & ~(Qt::WindowMaximized | Qt::WindowFullScreen));
  // A shown window on X11 is resized when the server says so: the docks are sized for the
  // new width again then (resizeEvent), not scaled from the old one.
  pendingDefaultSize_ = geometry.size() == size() ? QSize() : geometry.size();
  // Docks and toolbar first: where they were can make the window's minimum larger than the
  // default size.
  if (auto* bar = findChild<QToolBar*>(QStringLiteral("runToolBar"))) {
    addToolBar(Qt::TopToolBarArea, bar);
    bar->show();
  }
  arrangeDocks(geometry.width());
  if (auto* split = findChild<QSplitter*>(QStringLiteral("centralSplitter")))
    split->setSizes({560, 330});
  setGeometry(geometry);
}

void MainWindow::resetLayout() {
  applyDefaultLayout(defaultWindowGeometry(availableFor(this)));
}

// Restores the saved window only where it suits this screen; a saved dock layout belongs to its
// window size, so a window that is repaired gets the default docks as well.
void MainWindow::restoreWindowLayout(const QSettings& s) {
  const QRect available = availableFor(this);
  const bool restored = restoreGeometry(s.value(QStringLiteral("window/geometry")).toByteArray());
  const bool whole = isMaximized() || isFullScreen();
  // On a screen narrower than the window's minimum (about 1200 px), a window at its minimum is
  // the best there is: not a fault to repair on every start.
  const QRect room(available.topLeft(), available.size().expandedTo(minimumSizeHint()));
  const QString problem = !restored ? QStringLiteral("first start")
                          : whole   ? QString()
                                    : geometryProblem(size(), room);
  if (problem.isEmpty() && restoreState(s.value(QStringLiteral("window/state")).toByteArray()))
    return;
  applyDefaultLayout(defaultWindowGeometry(available));
  if (restored && !problem.isEmpty())
    statusBar()->showMessage(
        tr("The saved window (%1) did not suit this screen: default layout.").arg(problem), 15000);
}

// A saved state can hold docks narrower than their minimum from before there was one, or a
// column squeezed by a window too small for it: measured once the shown window is laid out.
void MainWindow::repairUnreadableDocks() {
  for (QDockWidget* d : sideDocks()) {
    if (d->width() >= kMinSideDockWidth) continue;
    arrangeDocks(width());
    statusBar()->showMessage(tr("The docks were too narrow to read (%1: %2 px): default layout.")
                                 .arg(d->windowTitle())
                                 .arg(d->width()),
                             15000);
    return;
  }
}

// Each side column grows and shrinks with the window, as the graph does; Qt alone would give
// every new pixel to the central widget.
void MainWindow::scaleSideDocks(double factor) {
  QList<QDockWidget*> docks;
  QList<int> widths;
  for (Qt::DockWidgetArea area : {Qt::LeftDockWidgetArea, Qt::RightDockWidgetArea})
    for (QDockWidget* d : sideDocks())
      if (dockWidgetArea(d) == area) {
        docks << d;
        widths << std::max(kMinSideDockWidth, static_cast<int>(std::lround(d->width() * factor)));
        break;
      }
  if (!docks.isEmpty()) resizeDocks(docks, widths, Qt::Horizontal);
}

void MainWindow::showEvent(QShowEvent* event) {
  QMainWindow::showEvent(event);
  if (layoutSettled_) return;
  QTimer::singleShot(0, this, [this] {
    repairUnreadableDocks();
    layoutSettled_ = true;
  });
}

void MainWindow::resizeEvent(QResizeEvent* event) {
  QMainWindow::resizeEvent(event);
  if (pendingDefaultSize_.isValid() && event->size() == pendingDefaultSize_) {
    pendingDefaultSize_ = QSize();
    arrangeDocks(event->size().width());
    return;
  }
  const int before = event->oldSize().width(), after = event->size().width();
  if (!layoutSettled_ || before <= 0 || after == before) return;
  scaleSideDocks(static_cast<double>(after) / before);
}

}  // namespace ckpt::ui
