#include "ui/app/main_window.hpp"

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDockWidget>
#include <QLabel>
#include <QSpinBox>
#include <QSplitter>
#include <QStatusBar>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextCursor>
#include <QToolBar>
#include <QVBoxLayout>

#include "ui/app/window_layout.hpp"
#include "ui/graph/graph_view.hpp"
#include "ui/panels/code_view.hpp"
#include "ui/panels/inspector.hpp"
#include "ui/panels/lessons_view.hpp"
#include "ui/panels/module_tree.hpp"
#include "ui/panels/pins_view.hpp"
#include "ui/panels/plan_view.hpp"
#include "ui/panels/summary_view.hpp"
#include "ui/player/player.hpp"
#include "ui/player/player_bar.hpp"
#include "ui/plot/memory_plot.hpp"

namespace ckpt::ui {

MainWindow::MainWindow(QWidget* parent, SettingsUse use)
    : QMainWindow(parent), session_(new Session(this)), player_(new Player(this)) {
  settingsUse_ = use;
  session_->setPinsPersistent(use == SettingsUse::readWrite);
  setWindowTitle(tr("Checkpoint Lab"));
  setWindowIcon(QIcon(QStringLiteral(":/icons/ckptlab.svg")));
  setAcceptDrops(true);
  setDockOptions(QMainWindow::AnimatedDocks | QMainWindow::AllowTabbedDocks);
  buildCentral();
  buildDocks();
  buildToolBar();
  buildMenus();
  buildPins();
  buildTours();
  wireSession();
  loadSettings();
  applyPalette();
  syncControls();
  statusBar()->showMessage(tr("Open a model or a sample (File ▸ Open Sample)."));
}

MainWindow::~MainWindow() = default;

void MainWindow::buildCentral() {
  graph_ = new GraphView;
  graph_->setObjectName(QStringLiteral("graphView"));
  plot_ = new MemoryPlot;
  plot_->setObjectName(QStringLiteral("memoryPlot"));
  playerBar_ = new PlayerBar(player_);
  playerBar_->setObjectName(QStringLiteral("playerBar"));
  playerBar_->setDescriber([this](std::int64_t k) { return describeStep(k, true); });

  banner_ = new QLabel;
  banner_->setObjectName(QStringLiteral("banner"));
  banner_->setWordWrap(true);
  banner_->setTextFormat(Qt::RichText);
  banner_->setOpenExternalLinks(false);
  banner_->hide();
  connect(banner_, &QLabel::linkActivated, this, [this](const QString& link) {
    player_->setCursor(link.section(QLatin1Char(':'), 1).toLongLong());
  });

  callout_ = new QLabel(graph_);
  callout_->setObjectName(QStringLiteral("callout"));
  callout_->setWordWrap(true);
  callout_->setTextFormat(Qt::RichText);
  callout_->hide();
  graph_->installEventFilter(this);

  auto* graphArea = new QWidget;
  auto* graphLayout = new QVBoxLayout(graphArea);
  graphLayout->setContentsMargins(0, 0, 0, 0);
  graphLayout->setSpacing(0);
  graphLayout->addWidget(banner_);
  graphLayout->addWidget(graph_, 1);

  auto* plotArea = new QWidget;
  auto* plotLayout = new QVBoxLayout(plotArea);
  plotLayout->setContentsMargins(0, 0, 0, 0);
  plotLayout->setSpacing(0);
  plotLayout->addWidget(plot_, 1);
  plotLayout->addWidget(playerBar_);

  auto* split = new QSplitter(Qt::Vertical);
  split->setObjectName(QStringLiteral("centralSplitter"));
  split->addWidget(graphArea);
  split->addWidget(plotArea);
  split->setStretchFactor(0, 5);
  split->setStretchFactor(1, 3);
  split->setSizes({560, 330});
  split->setChildrenCollapsible(false);
  setCentralWidget(split);
}

void MainWindow::buildDocks() {
  auto dock = [this](const QString& title, const QString& name, QWidget* w,
                     Qt::DockWidgetArea area) {
    auto* d = new QDockWidget(title, this);
    d->setObjectName(name);
    d->setWidget(w);
    addDockWidget(area, d);
    return d;
  };
  modules_ = new ModuleTree;
  notes_ = new QTextBrowser;
  notes_->setOpenExternalLinks(true);
  inspector_ = new Inspector;
  summary_ = new SummaryView;
  lessons_ = new LessonsView;
  code_ = new CodeView;
  plan_ = new PlanView;
  pinsView_ = new PinsView;
  dock(tr("Modules"), QStringLiteral("modulesDock"), modules_, Qt::LeftDockWidgetArea);
  dock(tr("Notes"), QStringLiteral("notesDock"), notes_, Qt::LeftDockWidgetArea);
  dock(tr("Run summary"), QStringLiteral("summaryDock"), summary_, Qt::RightDockWidgetArea);
  dock(tr("Inspector"), QStringLiteral("inspectorDock"), inspector_, Qt::RightDockWidgetArea);
  dock(tr("Messages and lessons"), QStringLiteral("lessonsDock"), lessons_,
       Qt::RightDockWidgetArea);
  dock(tr("PyTorch code"), QStringLiteral("codeDock"), code_, Qt::RightDockWidgetArea);
  dock(tr("Plan"), QStringLiteral("planDock"), plan_, Qt::RightDockWidgetArea);
  dock(tr("Pinned"), QStringLiteral("pinsDock"), pinsView_, Qt::RightDockWidgetArea);
  arrangeDocks(kDefaultWindowSize.width());
}

void MainWindow::buildToolBar() {
  auto* bar = addToolBar(tr("Run options"));
  bar->setObjectName(QStringLiteral("runToolBar"));
  bar->setIconSize(QSize(18, 18));
  bar->addWidget(new QLabel(tr(" Variant ")));
  variant_ = new QComboBox;
  variant_->addItem(tr("reentrant (1.13 default)"), true);
  variant_->addItem(tr("non-reentrant"), false);
  variant_->setToolTip(tr("use_reentrant: how checkpoint() saves and recomputes"));
  bar->addWidget(variant_);
  preserveRng_ = new QCheckBox(tr("preserve RNG state"));
  preserveRng_->setToolTip(
      tr("preserve_rng_state: stash the generator state in every "
         "checkpoint so that dropout recomputes the same mask"));
  bar->addSeparator();
  bar->addWidget(preserveRng_);
  bar->addSeparator();
  bar->addWidget(new QLabel(tr(" Policy ")));
  policy_ = new QComboBox;
  policy_->addItem(tr("recompute everything"), static_cast<int>(SelectivePolicy::none));
  policy_->addItem(tr("save matmuls (selective)"), static_cast<int>(SelectivePolicy::save_matmul));
  policy_->setToolTip(
      tr("Selective checkpointing: keep the outputs of matmul, linear and conv "
         "inside checkpointed segments instead of recomputing them"));
  bar->addWidget(policy_);
  bar->addSeparator();
  bar->addWidget(new QLabel(tr(" Batch ")));
  batch_ = new QSpinBox;
  batch_->setRange(1, 1 << 24);  // any batch: a dry run shows what does not fit
  batch_->setKeyboardTracking(false);
  batch_->setToolTip(tr("Batch size of the run"));
  bar->addWidget(batch_);
  bar->addSeparator();
  QAction* rerun = bar->addAction(QIcon(QStringLiteral(":/icons/rerun.svg")), tr("Run again"));
  rerun->setObjectName(QStringLiteral("rerunAction"));
  rerun->setShortcut(QKeySequence(Qt::Key_F5));
  connect(rerun, &QAction::triggered, session_, &Session::rerun);
  bar->addSeparator();
  for (auto [icon, text, slot, key] : {std::tuple{"zoom-in", tr("Zoom in"), &GraphView::zoomIn,
                                                  QKeySequence(QKeySequence::ZoomIn)},
                                       std::tuple{"zoom-out", tr("Zoom out"), &GraphView::zoomOut,
                                                  QKeySequence(QKeySequence::ZoomOut)},
                                       std::tuple{"zoom-fit", tr("Fit graph"), &GraphView::fitAll,
                                                  QKeySequence(Qt::CTRL | Qt::Key_0)}}) {
    QAction* a =
        bar->addAction(QIcon(QStringLiteral(":/icons/%1.svg").arg(QLatin1String(icon))), text);
    a->setShortcut(key);
    connect(a, &QAction::triggered, graph_, slot);
  }
  runState_ = new QLabel;
  runState_->setObjectName(QStringLiteral("runState"));
  runState_->setMinimumWidth(90);
  bar->addSeparator();
  bar->addWidget(runState_);

  connect(variant_, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (!syncing_) session_->setReentrant(variant_->itemData(i).toBool());
  });
  connect(preserveRng_, &QCheckBox::toggled, this, [this](bool on) {
    if (!syncing_) session_->setPreserveRng(on);
  });
  connect(policy_, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (!syncing_) session_->setPolicy(static_cast<SelectivePolicy>(policy_->itemData(i).toInt()));
  });
  connect(batch_, &QSpinBox::valueChanged, this, [this](int v) {
    if (!syncing_) session_->setBatch(v);
  });
}

void MainWindow::syncControls() {
  syncing_ = true;
  const CheckpointConfig& c = session_->config();
  variant_->setCurrentIndex(c.use_reentrant ? 0 : 1);
  preserveRng_->setChecked(c.preserve_rng_state);
  policy_->setCurrentIndex(c.policy == SelectivePolicy::none ? 0 : 1);
  batch_->setValue(static_cast<int>(std::max<std::int64_t>(1, session_->effectiveBatch())));
  const bool has = session_->model() != nullptr;
  for (QWidget* w : std::initializer_list<QWidget*>{variant_, preserveRng_, policy_, batch_})
    w->setEnabled(has);
  syncing_ = false;
}

void MainWindow::wireSession() {
  connect(session_, &Session::modelChanged, this, &MainWindow::onModelChanged);
  connect(plan_, &PlanView::planChosen, session_, &Session::setPlan);
  connect(session_, &Session::openFailed, this, [this](const QString& m) {
    showMessage(tr("Could not open: %1").arg(m), true);
    graph_->setOverlayText(tr("Could not open the model:\n%1").arg(m), true);
  });
  connect(session_, &Session::configChanged, this, [this] {
    modules_->setCheckpointed(session_->config().modules);
    graph_->setCheckpointed(session_->config().modules);
    code_->setConfig(session_->model(), session_->config());
    plan_->setCurrentConfig(session_->config());
    syncControls();
  });
  connect(session_, &Session::graphChanged, this, [this] {
    graph_->setGraph(session_->graph(), session_->layout());
    graph_->setCursorStep(player_->cursor());
    if (auto snap = session_->current()) graph_->setTrace(snap->tracePtr(), snap->timeline);
    graph_->setCursorStep(player_->cursor());
    graph_->setOverlayText(QString());
    checkReady();
  });
  connect(session_, &Session::layoutBusyChanged, this, [this](bool busy) {
    if (busy)
      graph_->setOverlayText(tr("Laying out the graph with Graphviz…"));
    else if (!graph_->overlayText().isEmpty() && graph_->overlayText().startsWith(tr("Laying")))
      graph_->setOverlayText(QString());
  });
  connect(session_, &Session::layoutFailed, this, [this](const QString& m) {
    graph_->setOverlayText(tr("The graph could not be laid out: %1\nThe memory plot, the player "
                              "and the Modules list (tick a module to checkpoint it) still work.")
                               .arg(m),
                           true);
    showMessage(m, true);
  });
  connect(session_, &Session::runBusyChanged, this, [this](bool busy) {
    runState_->setText(busy ? tr("⏳ running…") : QString());
    summary_->setRunning(busy);
  });
  connect(session_, &Session::runFinished, this, &MainWindow::onRunFinished);
  connect(session_, &Session::runPreviewed, this, &MainWindow::onRunFinished);
  connect(session_, &Session::message, this, [this](const QString& m) { showMessage(m, true); });

  connect(player_, &Player::cursorChanged, this, &MainWindow::onCursor);

  connect(plot_, &MemoryPlot::stepClicked, this, [this](std::int64_t k) {
    player_->pause();
    player_->setCursor(k);
  });
  connect(graph_, &GraphView::moduleToggleRequested, session_, &Session::toggleModule);
  connect(graph_, &GraphView::expandRequested, session_, &Session::expand);
  connect(graph_, &GraphView::collapseRequested, session_, &Session::collapse);
  connect(graph_, &GraphView::opSelected, inspector_, &Inspector::showOp);
  connect(graph_, &GraphView::moduleSelected, this, [this](const QString& m) {
    inspector_->showModule(m);
    modules_->selectModule(m);
  });
  connect(graph_, &GraphView::message, this, [this](const QString& m) { showMessage(m, true); });
  connect(modules_, &ModuleTree::toggleRequested, this, [this](const QString& m) {
    if (!session_->toggleModule(m)) modules_->setCheckpointed(session_->config().modules);
  });
  connect(modules_, &ModuleTree::moduleSelected, inspector_, &Inspector::showModule);
  connect(modules_, &ModuleTree::expandInGraphRequested, session_, &Session::expand);
  connect(modules_, &ModuleTree::setAllInstancesRequested, this,
          [this](const QString& definition, bool on) {
            auto modules = session_->config().modules;
            const auto all = session_->model()->instances_of(definition.toStdString());
            for (const Module* m : all) {
              if (on && m->checkpointable) modules.insert(m->path);
              if (!on) modules.erase(m->path);
            }
            session_->setModules(modules);
          });
  connect(lessons_, &LessonsView::stepRequested, player_, &Player::setCursor);
  connect(inspector_, &Inspector::stepLinkActivated, player_, &Player::setCursor);
}

void MainWindow::onModelChanged() {
  readyEmitted_ = false;
  firstRunOfModel_ = true;
  const auto model = session_->model();
  setWindowTitle(tr("%1 — Checkpoint Lab").arg(session_->displayName()));
  graph_->clearGraph();
  graph_->setTrace(nullptr);
  plot_->setSeries(nullptr, nullptr, QString());
  player_->setStepCount(0);
  modules_->setModel(model);
  plan_->setModel(model, session_->config());
  inspector_->setModel(model);
  summary_->setSnapshot(nullptr, nullptr, QString());
  lessons_->setLessons({});
  notes_->setMarkdown(QString::fromStdString(model->scenario.notes.empty()
                                                 ? "*This model has no teaching notes.*"
                                                 : model->scenario.notes) +
                      tourLinksFor(session_->source()));
  // Markdown headings come out at poster size in a narrow dock: bring them down.
  for (QTextBlock b = notes_->document()->begin(); b.isValid(); b = b.next()) {
    const int level = b.blockFormat().headingLevel();
    if (level == 0) continue;
    QTextCursor c(b);
    c.movePosition(QTextCursor::EndOfBlock, QTextCursor::KeepAnchor);
    QTextCharFormat f;
    f.setProperty(QTextFormat::FontSizeAdjustment, 0);
    f.setFontPointSize(font().pointSizeF() * (level == 1 ? 1.35 : 1.15));
    f.setFontWeight(QFont::Bold);
    c.mergeCharFormat(f);
  }
  // The code view follows configChanged(), which comes right after.
  banner_->hide();
  callout_->hide();
  syncControls();
  if (!session_->source().startsWith(QLatin1String(":/"))) addRecent(session_->source());
  showMessage(tr("Opened %1: %2 ops, %3 modules")
                  .arg(session_->displayName())
                  .arg(model->ops.size())
                  .arg(modules_->topLevelItemCount()));
}

void MainWindow::onRunFinished(RunSnapshotPtr snap) {
  plot_->setSeries(snap->series, session_->ghost(), session_->ghostLabel());
  const Trace* trace = &snap->trace();
  plot_->setStepLabel([snap, trace](std::int64_t k) {
    if (k < 0 || k >= trace->step_count()) return QString();
    const TraceStep s = trace->step(k);
    return QString::fromStdString(s.node.empty() ? s.op : s.op + " · " + s.node);
  });
  graph_->setTrace(snap->tracePtr(), snap->timeline);
  inspector_->setSnapshot(snap);
  summary_->setSnapshot(snap, session_->ghost(), session_->ghostLabel());
  lessons_->setLessons(snap->lessons);
  const std::int64_t previous = player_->cursor();
  player_->setStepCount(snap->trace().step_count());
  if (firstRunOfModel_ && snap->series->forward_end >= 0) {
    // Open at the end of the forward: every activation kept (or dropped by a checkpoint) is
    // on the graph at once.
    player_->setCursor(snap->series->forward_end);
  } else if (previous == player_->cursor()) {
    onCursor(player_->cursor());  // same index, new trace: views must still refresh
  }
  firstRunOfModel_ = false;
  updateBanner();
  const RunSummary& s = snap->summary;
  showMessage(
      s.ok && snap->dryRun()
          ? tr("Dry run: peak %1 (exact), %2 recomputed op executions, %3 ms%4")
                .arg(QString::fromStdString(formatBytes(s.peak.bytes)))
                .arg(s.executions.recompute)
                .arg(snap->wallMs)
                .arg(snap->realRunFollows ? tr("; the real run follows")
                                          : tr("; the real run would not fit the memory limit"))
      : s.ok
          ? tr("Run: peak %1, %2 recomputed op executions, %3 ms")
                .arg(QString::fromStdString(formatBytes(s.peak.bytes)))
                .arg(s.executions.recompute)
                .arg(snap->wallMs)
          : tr("Run failed (its figures are no saving): %1").arg(QString::fromStdString(s.error)),
      !s.ok);
  checkReady();
}

void MainWindow::onCursor(std::int64_t step) {
  graph_->setCursorStep(step);
  plot_->setCursorStep(step);
  inspector_->setCursorStep(step);
  // With nothing selected, the Inspector follows the op at the cursor.
  if (auto snap = session_->current(); snap && step >= 0 && step < snap->trace().step_count())
    inspector_->setFollowedOp(snap->timeline ? snap->timeline->op_at(step) : -1);
  updateCallout();
}

QString MainWindow::describeStep(std::int64_t k, bool rich) const {
  auto snap = session_->current();
  if (!snap || k < 0 || k >= snap->trace().step_count()) return {};
  const TraceStep s = snap->trace().step(k);
  QString phase = QLatin1String(phase_name(s.phase));
  if (rich && s.phase == Phase::recompute)
    phase = QStringLiteral("<span style='color:%1'><b>recompute</b></span>")
                .arg(Palette::forApplication().recomputeShade.name());
  QString text =
      phase + QStringLiteral(" · ") +
      (rich ? QStringLiteral("<b>%1</b>").arg(QString::fromStdString(s.op).toHtmlEscaped())
            : QString::fromStdString(s.op));
  if (!s.node.empty())
    text += QStringLiteral(" · ") + QString::fromStdString(s.node).toHtmlEscaped();
  if (!s.segment.empty() && s.phase == Phase::recompute)
    text += tr(" (recomputing %1)").arg(QString::fromStdString(s.segment).toHtmlEscaped());
  const std::int64_t total = snap->series->totals[static_cast<std::size_t>(k)];
  text += QStringLiteral(" · ") + QString::fromStdString(formatBytes(total));
  return text;
}

void MainWindow::updateBanner() {
  auto snap = session_->current();
  const Lesson* worst = nullptr;
  if (snap)
    for (const Lesson& l : snap->lessons)
      if (l.severity != Severity::info && (!worst || l.severity > worst->severity)) worst = &l;
  if (!worst) {
    banner_->hide();
    return;
  }
  const Palette pal = Palette::forApplication();
  const bool error = worst->severity == Severity::error;
  const QColor c = error ? pal.error : pal.warning;
  QColor bg = c;
  bg.setAlphaF(0.14);
  banner_->setStyleSheet(QStringLiteral("QLabel#banner { background: rgba(%1,%2,%3,%4); color: %5;"
                                        " border-bottom: 2px solid %6; padding: 6px 10px; }")
                             .arg(bg.red())
                             .arg(bg.green())
                             .arg(bg.blue())
                             .arg(bg.alphaF())
                             .arg(pal.text.name(), c.name()));
  QString text = QStringLiteral("<b style='color:%1'>%2</b> %3")
                     .arg(c.name(), error ? tr("Error:") : tr("Warning:"),
                          QString::fromStdString(worst->title).toHtmlEscaped());
  if (worst->step >= 0)
    text += QStringLiteral(" &nbsp;<a href='step:%1'>step %1 ▸</a>").arg(worst->step);
  if (const RunSummary& s = snap->summary; !s.ok && !s.failure.fix.empty())
    text += QStringLiteral("<br><b>%1</b> %2")
                .arg(tr("Fix:"), QString::fromStdString(s.failure.fix).toHtmlEscaped());
  banner_->setText(text);
  banner_->setToolTip(QString::fromStdString(worst->text));
  banner_->show();
}

// Lessons at the cursor's step are shown over the graph, where they happen.
void MainWindow::updateCallout() {
  auto snap = session_->current();
  QStringList parts;
  if (snap)
    for (const Lesson& l : snap->lessons)
      if (lesson_at(l, player_->cursor())) {
        QString part =
            QStringLiteral("<b>%1</b>").arg(QString::fromStdString(l.title).toHtmlEscaped());
        if (l.text != l.title)
          part += QStringLiteral("<br>") + QString::fromStdString(l.text).toHtmlEscaped();
        parts << part;
      }
  if (parts.isEmpty()) {
    callout_->hide();
    return;
  }
  const Palette pal = Palette::forApplication();
  callout_->setStyleSheet(QStringLiteral("QLabel#callout { background: %1; color: %2; border: 1px "
                                         "solid %3; border-left: 4px solid %3; border-radius: 4px;"
                                         " padding: 6px 10px; }")
                              .arg(pal.surface.name(), pal.text.name(), pal.recomputeShade.name()));
  callout_->setText(parts.join(QStringLiteral("<hr>")));
  const int w = std::min(graph_->width() - 24, 560);
  callout_->setFixedWidth(std::max(200, w));
  callout_->adjustSize();
  callout_->move(12, graph_->height() - callout_->height() - 12);
  callout_->raise();
  callout_->show();
}

bool MainWindow::eventFilter(QObject* watched, QEvent* event) {
  if (watched == graph_ && event->type() == QEvent::Resize && callout_->isVisible())
    callout_->move(12, graph_->height() - callout_->height() - 12);
  return QMainWindow::eventFilter(watched, event);
}

void MainWindow::checkReady() {
  if (readyEmitted_ || !isReady()) return;
  readyEmitted_ = true;
  emit ready();
}

bool MainWindow::isReady() const {
  return session_->model() && session_->current() && !session_->current()->realRunFollows &&
         session_->graph() && session_->layout() && graph_->graph() == session_->graph();
}

void MainWindow::showMessage(const QString& text, bool important) {
  statusBar()->showMessage(text, important ? 15000 : 6000);
}

void MainWindow::applyPalette() {
  const Palette pal = Palette::forApplication();
  graph_->setGraphPalette(pal);
  plot_->setPlotPalette(pal);
  updateBanner();
  updateCallout();
  summary_->setSnapshot(session_->current(), session_->ghost(), session_->ghostLabel());
  inspector_->setSnapshot(session_->current());
}

}  // namespace ckpt::ui
