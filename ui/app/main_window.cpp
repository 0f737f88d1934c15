// MainWindow: the widgets. The graph above the memory plot and the player, the docks around
// them, the run options' toolbar and its state kept in step with the Session's configuration.
// What each view is sent is in main_window_run.cpp; the other parts of the window are in
// main_window_*.cpp (layout, menus, pins, tours, the callouts over the graph).

#include "ui/app/main_window.hpp"

#include <QCheckBox>
#include <QComboBox>
#include <QDockWidget>
#include <QLabel>
#include <QSpinBox>
#include <QSplitter>
#include <QStatusBar>
#include <QTextBrowser>
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
  buildSnapshot();
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
  bar->addWidget(new QLabel(tr(" Device ")));
  device_ = new QComboBox;
  device_->setObjectName(QStringLiteral("deviceBox"));
  device_->addItem(tr("CPU"), static_cast<int>(Device::cpu));
  device_->addItem(tr("CUDA GPU"), static_cast<int>(Device::cuda));
  device_->setToolTip(
      tr("Whose memory the run shows: this engine's CPU run (PyTorch 1.13's CPU figures), or "
         "what PyTorch 2.x holds on an NVIDIA GPU — cuBLAS's workspace, 512-byte rounding, "
         "bool dropout masks, the caching allocator's reserved segments. CUDA is a dry run "
         "(exact bytes, estimated times) on any machine: the CUDA engine runs no whole model "
         "yet."));
  bar->addWidget(device_);
  buildRanksControl(bar);
  bar->addSeparator();
  bar->addWidget(new QLabel(tr(" Variant ")));
  variant_ = new QComboBox;
  variant_->addItem(tr("reentrant"), true);
  variant_->addItem(tr("non-reentrant"), false);
  variant_->setToolTip(
      tr("use_reentrant: how checkpoint() saves and recomputes (reentrant is "
         "PyTorch 1.13's default)"));
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
  // Each item's data is the policy's spelling (SelectivePolicy::parse), as in ckptlab-cli.
  // The policies by their ckptlab-cli spellings; the tooltip says what each keeps.
  for (const auto& [label, spelling] : {std::pair{tr("recompute all"), "none"},
                                        {tr("save-matmul"), "save-matmul"},
                                        {tr("save:mm"), "save:mm"},
                                        {tr("save:mm,sdpa"), "save:mm,sdpa"},
                                        {tr("save:mm/2"), "save:mm/2"}})
    policy_->addItem(label, QString::fromLatin1(spelling));
  policy_->setToolTip(
      tr("Per-op policy inside checkpointed segments (PyTorch 2.4+'s selective activation "
         "checkpointing): the outputs of the ops it names are kept instead of recomputed. "
         "recompute all: keep nothing; save-matmul: matmuls, linears, convolutions and "
         "attention; save:mm: matmuls and linears; save:mm,sdpa: those and attention; "
         "save:mm/2: every other matmul, as torchtitan does (ckptlab-cli --policy)"));
  bar->addWidget(policy_);
  bar->addSeparator();
  bar->addWidget(new QLabel(tr(" Optimizer ")));
  optimizer_ = new QComboBox;
  optimizer_->setObjectName(QStringLiteral("optimizerBox"));
  for (auto [kind, text] :
       {std::pair{OptimizerKind::none, tr("none")}, std::pair{OptimizerKind::sgd, tr("SGD")},
        std::pair{OptimizerKind::momentum, tr("SGD+momentum")},
        std::pair{OptimizerKind::adam, tr("Adam")}, std::pair{OptimizerKind::adamw, tr("AdamW")}})
    optimizer_->addItem(text, static_cast<int>(kind));
  optimizer_->setToolTip(
      tr("The training step's end: the optimizer's step after backward, computed with "
         "torch.optim's update rules. Its state (momentum buffers, Adam's two moments) is live "
         "from the start, as in steady-state training, and its step's temporaries are "
         "PyTorch's default implementation's on the device shown."));
  bar->addWidget(optimizer_);
  bar->addSeparator();
  bar->addWidget(new QLabel(tr(" Precision ")));
  precision_ = new QComboBox;
  precision_->setObjectName(QStringLiteral("precisionBox"));
  precision_->addItem(tr("float32"), static_cast<int>(AmpMode::off));
  precision_->addItem(tr("bf16"), static_cast<int>(AmpMode::bf16));
  precision_->addItem(tr("fp16"), static_cast<int>(AmpMode::fp16));
  precision_->setToolTip(
      tr("Mixed precision (--amp): the forward and the loss under torch.autocast, matmuls and "
         "convolutions in the lower precision, parameters and gradients in float32. On the CPU "
         "PyTorch 1.13's autocast knows bfloat16 only: fp16 runs float32 there, with its "
         "warning"));
  bar->addWidget(precision_);
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
  wireRunOptions();
}

void MainWindow::syncControls() {
  syncing_ = true;
  const RunRequest& c = session_->request();
  variant_->setCurrentIndex(c.settings.use_reentrant ? 0 : 1);
  preserveRng_->setChecked(c.settings.preserve_rng_state);
  const QString spelling = QString::fromStdString(c.plan.policy.spelling());
  if (policy_->findData(spelling) < 0) policy_->addItem(spelling, spelling);  // a lesson's own
  policy_->setCurrentIndex(policy_->findData(spelling));
  precision_->setCurrentIndex(precision_->findData(static_cast<int>(c.settings.amp)));
  batch_->setValue(static_cast<int>(std::max<std::int64_t>(1, session_->effectiveBatch())));
  device_->setCurrentIndex(c.settings.device == Device::cuda ? 1 : 0);
  optimizer_->setCurrentIndex(optimizer_->findData(static_cast<int>(c.settings.optimizer.kind)));
  const bool has = session_->model() != nullptr;
  for (QWidget* w : std::initializer_list<QWidget*>{device_, variant_, preserveRng_, policy_,
                                                    optimizer_, precision_, batch_})
    w->setEnabled(has);
  syncRanks();
  syncing_ = false;
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
