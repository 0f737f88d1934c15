// MainWindow: the run wiring. The Session's signals (a model opened, a layout or a run done or
// failed) sent to the views, the views' requests (toggle, expand, select, seek) sent back to
// the Session and the Player, the run options sent to the Session, and what the status bar and
// the player bar say about a run and a step.

#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QSpinBox>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextCursor>

#include "ui/app/main_window.hpp"

#include "engine/model/load_notes.hpp"
#include "ui/graph/graph_view.hpp"
#include "ui/panels/code_view.hpp"
#include "ui/panels/inspector.hpp"
#include "ui/panels/lessons_view.hpp"
#include "ui/panels/module_tree.hpp"
#include "ui/panels/plan_view.hpp"
#include "ui/panels/summary_view.hpp"
#include "ui/player/player.hpp"
#include "ui/plot/memory_plot.hpp"

namespace ckpt::ui {

// The toolbar's run options; syncControls() sets them from the Session without sending back.
void MainWindow::wireRunOptions() {
  connect(variant_, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (!syncing_) session_->setReentrant(variant_->itemData(i).toBool());
  });
  connect(preserveRng_, &QCheckBox::toggled, this, [this](bool on) {
    if (!syncing_) session_->setPreserveRng(on);
  });
  connect(policy_, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (!syncing_)
      session_->setPolicy(SelectivePolicy::parse(policy_->itemData(i).toString().toStdString()));
  });
  connect(device_, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (!syncing_) session_->setDevice(static_cast<Device>(device_->itemData(i).toInt()));
  });
  connect(optimizer_, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (!syncing_)
      session_->setOptimizer(static_cast<OptimizerKind>(optimizer_->itemData(i).toInt()));
  });
  connect(precision_, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (!syncing_) session_->setPrecision(static_cast<AmpMode>(precision_->itemData(i).toInt()));
  });
  connect(batch_, &QSpinBox::valueChanged, this, [this](int v) {
    if (!syncing_) session_->setBatch(v);
  });
}

void MainWindow::wireSession() {
  connect(session_, &Session::modelChanged, this, &MainWindow::onModelChanged);
  connect(plan_, &PlanView::planChosen, session_, &Session::setPlan);
  connect(session_, &Session::openFailed, this, [this](const QString& m) {
    showMessage(tr("Could not open: %1").arg(m), true);
    graph_->setOverlayText(tr("Could not open the model:\n%1").arg(m), true);
  });
  connect(session_, &Session::configChanged, this, [this] {
    modules_->setCheckpointed(session_->request().plan.modules);
    modules_->setOffloaded(session_->request().plan.offload);
    graph_->setCheckpointed(session_->request().plan.modules);
    code_->setRequest(session_->model(), session_->request());
    plan_->setCurrentRequest(session_->request());
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
    runState_->setText(busy ? tr("running…") : QString());
    summary_->setRunning(busy);
  });
  connect(session_, &Session::runFinished, this, &MainWindow::onRunFinished);
  connect(session_, &Session::runPreviewed, this, &MainWindow::onRunFinished);
  connect(session_, &Session::message, this, [this](const QString& m) { showMessage(m, true); });

  connect(player_, &Player::cursorChanged, this, &MainWindow::onCursor);
  wireViews();
}

// The views' requests: a step clicked on the plot, a module toggled or expanded, an op or a
// module selected, a step link followed.
void MainWindow::wireViews() {
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
    if (!session_->toggleModule(m)) modules_->setCheckpointed(session_->request().plan.modules);
  });
  connect(modules_, &ModuleTree::offloadToggleRequested, session_, &Session::toggleOffload);
  connect(modules_, &ModuleTree::freezeToggleRequested, session_, &Session::toggleFrozen);
  connect(modules_, &ModuleTree::moduleSelected, inspector_, &Inspector::showModule);
  connect(modules_, &ModuleTree::expandInGraphRequested, session_, &Session::expand);
  connect(modules_, &ModuleTree::setAllInstancesRequested, this,
          [this](const QString& definition, bool on) {
            auto modules = session_->request().plan.modules;
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
  modules_->setFrozen(session_->frozen());
  plan_->setModel(model, session_->request());
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
  // What the loader decided that the file does not say (which initializers are trained):
  // in the status bar, and whole in the Notes.
  const std::vector<std::string> load = load_summary_lines(*model);
  QString loaded;
  const bool made_up = !model->load_notes.weights_absent.empty();
  if (model->format == "onnx" || !model->load_notes.frozen.empty()) {
    notes_->append(tr("\nParameters, as loaded:"));
    for (const std::string& line : load_summary_lines(*model, true))
      notes_->append(QStringLiteral("- ") + QString::fromStdString(line));
    loaded = QStringLiteral("; ") + QString::fromStdString(load.front());
    // Weights the file lacks are made up for a real run: said first, never silently.
    if (made_up)
      loaded = tr("; its weights are absent (%1): dry runs are exact, real runs use torch.nn's "
                  "default initialisation")
                   .arg(QString::fromStdString(model->load_notes.weights_absent));
    if (load.size() > 1) loaded += tr(" (more in Notes)");
  }
  showMessage(tr("Opened %1: %2 ops, %3 modules%4")
                  .arg(session_->displayName())
                  .arg(model->ops.size())
                  .arg(modules_->topLevelItemCount())
                  .arg(loaded),
              !model->load_notes.warnings.empty() || made_up);
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
  // Sharded, the figure that decides is one rank's (the plot's curve): said first.
  const QString perRank =
      s.ok && s.per_rank ? tr("One rank of %1 (FSDP2, modelled): peak %2; ")
                               .arg(s.per_rank->ranks)
                               .arg(QString::fromStdString(formatBytes(s.per_rank->peak_bytes)))
                         : QString();
  showMessage(
      perRank + (s.ok && snap->dryRun()
                     ? (s.per_rank ? tr("dry run of the whole model on one GPU, unsharded: "
                                        "peak %1 (exact), %2 recomputed op executions, %3 ms%4")
                                   : tr("Dry run: peak %1 (exact), %2 recomputed op executions, "
                                        "%3 ms%4"))
                           .arg(QString::fromStdString(formatBytes(s.peak.bytes)))
                           .arg(s.executions.recompute)
                           .arg(snap->wallMs)
                           .arg(snap->realRunFollows ? tr("; the real run follows")
                                : snap->notComputed.empty()
                                    ? QString()
                                    : tr("; %1").arg(QString::fromStdString(snap->notComputed)))
                 : s.ok ? tr("Run: peak %1, %2 recomputed op executions, %3 ms")
                              .arg(QString::fromStdString(formatBytes(s.peak.bytes)))
                              .arg(s.executions.recompute)
                              .arg(snap->wallMs)
                        : tr("Run failed (its figures are no saving): %1")
                              .arg(QString::fromStdString(s.error))),
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

}  // namespace ckpt::ui
