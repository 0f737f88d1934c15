// MainWindow: guided lessons. Help ▸ Lessons lists the bundled tours; a sample's Notes link to
// the tours that start on it; the Lesson dock (beside the Notes) shows the running one, and the
// step's highlighted module is selected in the graph, the module tree and the Inspector.

#include <QDesktopServices>
#include <QDockWidget>
#include <QFileInfo>
#include <QMenu>
#include <QPushButton>
#include <QTextBrowser>
#include <QUrl>

#include "ui/app/main_window.hpp"
#include "ui/panels/inspector.hpp"
#include "ui/panels/module_tree.hpp"
#include "ui/panels/tour_view.hpp"
#include "ui/tours/tour_runner.hpp"

namespace ckpt::ui {

namespace {
constexpr auto kTourScheme = "lesson";
}

void MainWindow::buildTours() {
  tours_ = new TourRunner(session_, player_, this);
  tourView_ = new TourView(tours_);
  auto* dock = new QDockWidget(tr("Lesson"), this);
  dock->setObjectName(QStringLiteral("tourDock"));
  dock->setWidget(tourView_);
  addDockWidget(Qt::LeftDockWidgetArea, dock);
  tabifyDockWidget(findChild<QDockWidget*>(QStringLiteral("notesDock")), dock);
  dock->hide();
  connect(tourView_, &TourView::closeRequested, tours_, &TourRunner::stop);
  connect(tours_, &TourRunner::changed, this, [this, dock] {
    if (!tours_->active()) dock->hide();
  });
  connect(tours_, &TourRunner::highlightRequested, this, [this](const QString& module) {
    inspector_->showModule(module);
    modules_->selectModule(module);
  });

  auto* lessons = new QMenu(tr("&Lessons"), helpMenu_);
  helpMenu_->insertMenu(helpMenu_->actions().value(0), lessons);
  const QList<Tour>& tours = bundledTours();
  for (int i = 0; i < tours.size(); ++i)
    lessons->addAction(tours[i].title, this, [this, i] { startTour(i); });
  if (tours.isEmpty()) lessons->setEnabled(false);

  // The Notes' "lesson:<id>" links start a lesson; other links open outside.
  notes_->setOpenLinks(false);
  connect(notes_, &QTextBrowser::anchorClicked, this, [this](const QUrl& url) {
    if (url.scheme() != QLatin1String(kTourScheme)) {
      QDesktopServices::openUrl(url);
      return;
    }
    const QList<Tour>& all = bundledTours();
    for (int i = 0; i < all.size(); ++i)
      if (all[i].id == url.path()) startTour(i);
  });
}

void MainWindow::startTour(int index) {
  const QList<Tour>& tours = bundledTours();
  if (index < 0 || index >= tours.size()) return;
  auto* dock = findChild<QDockWidget*>(QStringLiteral("tourDock"));
  dock->show();
  dock->raise();
  // The caption needs height more than the module tree does while a lesson runs.
  if (auto* modules = findChild<QDockWidget*>(QStringLiteral("modulesDock"));
      modules && dockWidgetArea(modules) == dockWidgetArea(dock) && !dock->isFloating())
    resizeDocks({modules, dock}, {2, 3}, Qt::Vertical);
  tours_->start(tours[index]);
  tourView_->nextButton()->setFocus();
}

QString MainWindow::tourLinksFor(const QString& source) const {
  QStringList links;
  for (const Tour& t : bundledTours())
    if (t.steps.value(0).sample == QFileInfo(source).fileName())
      links << QStringLiteral("[%1](%2:%3)").arg(t.title, QLatin1String(kTourScheme), t.id);
  if (links.isEmpty()) return {};
  return tr("\n\n---\n\n**Guided lesson:** %1 (or Help ▸ Lessons)")
      .arg(links.join(QStringLiteral(", ")));
}

}  // namespace ckpt::ui
