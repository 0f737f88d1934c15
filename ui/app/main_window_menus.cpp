// MainWindow: menus, files (open, recent, samples, drag and drop), export, theme, settings.

#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QInputDialog>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QSettings>
#include <QStatusBar>

#include "engine/report/run_summary.hpp"
#include "engine/request/memory_guard.hpp"
#include "ui/app/main_window.hpp"
#include "ui/app/sample_catalog.hpp"
#include "ui/graph/graph_view.hpp"
#include "ui/player/player.hpp"
#include "ui/player/player_bar.hpp"
#include "ui/plot/memory_plot.hpp"

namespace ckpt::ui {

namespace {
constexpr int kMaxRecent = 10;
}

void MainWindow::buildMenus() {
  buildFileMenu();
  buildEditMenu();
  buildViewMenu();

  QMenu* play = menuBar()->addMenu(tr("&Player"));
  play->addActions(playerBar_->playerActions());

  QMenu* run = menuBar()->addMenu(tr("&Run"));
  runMenu_ = run;
  run->addAction(tr("&Memory Limit for Real Runs…"), this, [this] {
    // Every click is a dry run first; the real run follows only when its predicted memory
    // fits this limit (0: three quarters of the memory available when it starts).
    RunController* runs = session_->runs();
    bool ok = false;
    const double gib = QInputDialog::getDouble(
        this, tr("Memory limit"),
        tr("Real runs whose dry run predicts more than this are not started; the dry run's "
           "exact curve is shown instead.\nGiB (0: %1 % of the memory available, now %2):")
            .arg(static_cast<int>(kDefaultMemoryShare * 100))
            .arg(QString::fromStdString(format_bytes(default_memory_limit()))),
        static_cast<double>(runs->memoryLimit()) / (1024.0 * 1024 * 1024), 0, 1 << 20, 2, &ok);
    if (!ok) return;
    runs->setMemoryLimit(static_cast<std::int64_t>(gib * 1024.0 * 1024 * 1024));
    saveSettings();
    session_->rerun();
  });
  // What the Modules tree's right-click cannot reach (a rotary table the model's root uses):
  // any name, module path or pattern, as ckptlab-cli's --frozen.
  run->addAction(tr("&Freeze Parameters…"), this, [this] {
    if (!session_->model()) return;
    QString current;
    for (const std::string& p : session_->frozen())
      current += (current.isEmpty() ? "" : " ") + QString::fromStdString(p);
    bool ok = false;
    const QString text = QInputDialog::getText(
        this, tr("Freeze parameters"),
        tr("Parameters to take as not trainable (buffers, requires_grad=False), as --frozen: "
           "names or module paths, * one path segment ('rotary', '*_cached'), separated by "
           "spaces. A pattern given again is no longer frozen."),
        QLineEdit::Normal, current, &ok);
    if (!ok) return;
    std::vector<std::string> wanted;
    for (const QString& p : text.split(QLatin1Char(' '), Qt::SkipEmptyParts))
      wanted.push_back(p.toStdString());
    session_->setFrozen(wanted);
  });
  QMenu* help = menuBar()->addMenu(tr("&Help"));
  helpMenu_ = help;
  help->addAction(tr("&About Checkpoint Lab"), this, [this] {
    QMessageBox::about(
        this, tr("About Checkpoint Lab"),
        tr("<h3>Checkpoint Lab %1</h3><p>Activation checkpointing, made visible: a real autograd "
           "engine runs the forward and backward of the model; every byte in the plot is memory "
           "its allocator held. PyTorch 1.13's torch.utils.checkpoint semantics.</p>")
            .arg(QApplication::applicationVersion()));
  });
  rebuildRecentMenu();
}

// File: open (a file, a recent one, a bundled sample), export, quit.
void MainWindow::buildFileMenu() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  QAction* open = file->addAction(QIcon(QStringLiteral(":/icons/open.svg")), tr("&Open…"));
  open->setShortcut(QKeySequence::Open);
  connect(open, &QAction::triggered, this, [this] {
    const QString path = QFileDialog::getOpenFileName(
        this, tr("Open a model"), QString(),
        tr("Models (*.json *.onnx);;Captures of ckptlab_capture (*.capture.json);;Native JSON "
           "(*.json);;ONNX (*.onnx);;All files (*)"));
    if (!path.isEmpty()) openPath(path);
  });
  QAction* snapshot = file->addAction(tr("Open &Memory Snapshot…"));
  snapshot->setToolTip(
      tr("A PyTorch CUDA memory snapshot (torch.cuda.memory._dump_snapshot), "
         "shown beside the engine's prediction"));
  connect(snapshot, &QAction::triggered, this, &MainWindow::openSnapshotDialog);
  recentMenu_ = file->addMenu(tr("Open &Recent"));
  sampleMenu_ = file->addMenu(tr("Open &Sample"));
  const auto samples = bundledSamples();
  for (const SampleEntry& s : samples) {
    QAction* a = sampleMenu_->addAction(s.title);
    a->setToolTip(s.path);
    a->setData(s.path);
    connect(a, &QAction::triggered, this, [this, path = s.path] { openPath(path); });
  }
  if (samples.isEmpty()) sampleMenu_->addAction(tr("(no sample bundled)"))->setEnabled(false);
  file->addSeparator();
  QAction* exportGraphAction =
      file->addAction(QIcon(QStringLiteral(":/icons/export.svg")), tr("Export &Graph…"));
  connect(exportGraphAction, &QAction::triggered, this, [this] { exportDialog(true); });
  QAction* exportPlotAction = file->addAction(tr("Export &Plot…"));
  connect(exportPlotAction, &QAction::triggered, this, [this] { exportDialog(false); });
  file->addSeparator();
  QAction* quit = file->addAction(tr("&Quit"));
  quit->setShortcut(QKeySequence::Quit);
  connect(quit, &QAction::triggered, this, &QWidget::close);
}

// View: theme, following the cursor, the docks, and the default layout.
// Undo and redo of checkpoint configurations: a click on a block, a variant, a plan applied.
void MainWindow::buildEditMenu() {
  QMenu* edit = menuBar()->addMenu(tr("&Edit"));
  undoAction_ = edit->addAction(tr("&Undo"), session_, &Session::undo);
  undoAction_->setShortcut(QKeySequence::Undo);
  redoAction_ = edit->addAction(tr("&Redo"), session_, &Session::redo);
  redoAction_->setShortcut(QKeySequence::Redo);
  const auto refresh = [this] {
    undoAction_->setEnabled(session_->canUndo());
    redoAction_->setEnabled(session_->canRedo());
  };
  connect(session_, &Session::historyChanged, this, refresh);
  refresh();
}

void MainWindow::buildViewMenu() {
  viewMenu_ = menuBar()->addMenu(tr("&View"));
  QMenu* theme = viewMenu_->addMenu(tr("&Theme"));
  themeGroup_ = new QActionGroup(this);
  for (ThemeMode m : {ThemeMode::system, ThemeMode::light, ThemeMode::dark}) {
    const QString label = m == ThemeMode::system  ? tr("&System")
                          : m == ThemeMode::light ? tr("&Light")
                                                  : tr("&Dark");
    QAction* a = theme->addAction(label);
    a->setCheckable(true);
    a->setData(themeName(m));
    themeGroup_->addAction(a);
    connect(a, &QAction::triggered, this, [this, m] { setTheme(m); });
  }
  viewMenu_->addSeparator();
  followAction_ = viewMenu_->addAction(tr("&Follow the op while playing"));
  followAction_->setCheckable(true);
  followAction_->setChecked(true);
  followAction_->setToolTip(tr("Keep the op at the cursor in view when it moves"));
  connect(followAction_, &QAction::toggled, graph_, &GraphView::setFollowCursor);
  viewMenu_->addSeparator();
  for (QDockWidget* d : findChildren<QDockWidget*>()) viewMenu_->addAction(d->toggleViewAction());
  viewMenu_->addSeparator();
  QAction* reset = viewMenu_->addAction(tr("&Reset Layout"), this, &MainWindow::resetLayout);
  reset->setObjectName(QStringLiteral("resetLayoutAction"));
  reset->setToolTip(tr("The default window size for this screen and the default docks"));
}

void MainWindow::openPath(const QString& path) {
  graph_->setOverlayText(tr("Opening %1…").arg(QFileInfo(path).fileName()));
  showMessage(tr("Opening %1…").arg(path));
  session_->openFile(path);
}

void MainWindow::openDefaultSample() {
  const QString path = defaultSamplePath();
  if (path.isEmpty()) {
    graph_->setOverlayText(
        tr("No sample is bundled with this build: open a model with File ▸ Open."), true);
    return;
  }
  openPath(path);
}

void MainWindow::addRecent(const QString& path) {
  const QString abs = QFileInfo(path).absoluteFilePath();
  recent_.removeAll(abs);
  recent_.prepend(abs);
  while (recent_.size() > kMaxRecent) recent_.removeLast();
  rebuildRecentMenu();
  saveSettings();
}

void MainWindow::rebuildRecentMenu() {
  if (!recentMenu_) return;
  recentMenu_->clear();
  for (const QString& path : recent_) {
    QAction* a = recentMenu_->addAction(QFileInfo(path).fileName());
    a->setToolTip(path);
    a->setStatusTip(path);
    connect(a, &QAction::triggered, this, [this, path] { openPath(path); });
  }
  if (recent_.isEmpty())
    recentMenu_->addAction(tr("(none)"))->setEnabled(false);
  else {
    recentMenu_->addSeparator();
    recentMenu_->addAction(tr("Clear"), this, [this] {
      recent_.clear();
      rebuildRecentMenu();
      saveSettings();
    });
  }
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  if (event->mimeData()->hasUrls()) {
    for (const QUrl& url : event->mimeData()->urls())
      if (url.isLocalFile()) {
        event->acceptProposedAction();
        return;
      }
  }
}

void MainWindow::dropEvent(QDropEvent* event) {
  for (const QUrl& url : event->mimeData()->urls()) {
    if (!url.isLocalFile()) continue;
    const QString path = url.toLocalFile();
    if (path.endsWith(QLatin1String(".pickle")) || path.endsWith(QLatin1String(".pkl")))
      openSnapshot(path);  // a memory snapshot goes beside the model, not in its place
    else
      openPath(path);
    event->acceptProposedAction();
    return;
  }
}

bool MainWindow::exportGraph(const QString& path, QString* error) const {
  return graph_->exportImage(path, error);
}

bool MainWindow::exportPlot(const QString& path, QString* error) const {
  return plot_->exportImage(path, error);
}

void MainWindow::exportDialog(bool graph) {
  const QString base = QFileInfo(session_->source()).completeBaseName();
  const QString suggested = (base.isEmpty() ? QStringLiteral("ckptlab") : base) +
                            (graph ? QStringLiteral("-graph.png") : QStringLiteral("-memory.png"));
  const QString path = QFileDialog::getSaveFileName(
      this, graph ? tr("Export the graph") : tr("Export the memory plot"), suggested,
      tr("PNG image (*.png);;SVG drawing (*.svg)"));
  if (path.isEmpty()) return;
  QString error;
  const bool ok = graph ? exportGraph(path, &error) : exportPlot(path, &error);
  if (ok)
    showMessage(tr("Wrote %1").arg(path));
  else
    QMessageBox::warning(this, tr("Export failed"), error);
}

void MainWindow::setTheme(ThemeMode mode) {
  theme_ = mode;
  applyTheme(mode);
  if (themeGroup_)
    for (QAction* a : themeGroup_->actions())
      a->setChecked(a->data().toString() == themeName(mode));
  applyPalette();
  saveSettings();
}

void MainWindow::loadSettings() {
  QSettings s;
  restoreWindowLayout(s);
  recent_ = s.value(QStringLiteral("files/recent")).toStringList();
  rebuildRecentMenu();
  const double speed = s.value(QStringLiteral("player/speed"), 1.0).toDouble();
  player_->setSpeed(speed);
  followAction_->setChecked(s.value(QStringLiteral("view/follow"), true).toBool());
  graph_->setFollowCursor(followAction_->isChecked());
  session_->runs()->setMemoryLimit(s.value(QStringLiteral("run/memory_limit")).toLongLong());
  theme_ = themeFromName(s.value(QStringLiteral("view/theme")).toString());
  applyTheme(theme_);
  for (QAction* a : themeGroup_->actions())
    a->setChecked(a->data().toString() == themeName(theme_));
}

void MainWindow::saveSettings() const {
  if (settingsUse_ == SettingsUse::readOnly) return;
  QSettings s;
  s.setValue(QStringLiteral("window/geometry"), saveGeometry());
  s.setValue(QStringLiteral("window/state"), saveState());
  s.setValue(QStringLiteral("files/recent"), recent_);
  s.setValue(QStringLiteral("player/speed"), player_->speed());
  s.setValue(QStringLiteral("view/follow"), followAction_->isChecked());
  s.setValue(QStringLiteral("view/theme"), themeName(theme_));
  s.setValue(QStringLiteral("run/memory_limit"),
             static_cast<qlonglong>(session_->runs()->memoryLimit()));
}

void MainWindow::closeEvent(QCloseEvent* event) {
  saveSettings();
  session_->runs()->cancelAll();
  QMainWindow::closeEvent(event);
}

}  // namespace ckpt::ui
