#include "ui/tours/tour_runner.hpp"

#include <QRegularExpression>

#include "ui/player/player.hpp"
#include "ui/session/session.hpp"

namespace ckpt::ui {

TourRunner::TourRunner(Session* session, Player* player, QObject* parent)
    : QObject(parent), session_(session), player_(player) {
  connect(session_, &Session::modelChanged, this, [this] {
    if (!awaitingModel_) return;
    awaitingModel_ = false;
    configure();
  });
  connect(session_, &Session::openFailed, this, [this] {
    if (awaitingModel_) stop();
  });
  // Queued: the window's own handlers of the run (the player's step count and cursor) go first,
  // then the step's cursor.
  connect(session_, &Session::runFinished, this, &TourRunner::onRunShown, Qt::QueuedConnection);
  connect(session_, &Session::configChanged, this, [this] {
    if (tour_) emit changed();
  });
}

void TourRunner::start(const Tour& tour) {
  tour_ = tour;
  index_ = 0;
  apply();
}

void TourRunner::stop() {
  tour_.reset();
  awaitingModel_ = false;
  emit changed();
}

void TourRunner::next() {
  if (!canGoNext()) return;
  ++index_;
  apply();
}

void TourRunner::back() {
  if (!canGoBack()) return;
  --index_;
  apply();
}

void TourRunner::apply() {
  placed_ = false;
  const TourStep& step = tour_->steps[index_];
  const QString path = QStringLiteral(":/samples/") + step.sample;
  if (session_->source() != path || !session_->model()) {
    awaitingModel_ = true;
    session_->openFile(path);
  } else {
    configure();
  }
  emit changed();
}

CheckpointConfig TourRunner::expectedConfig() const {
  if (!tour_ || !session_->model()) return {};
  const TourStep& step = tour_->steps[index_];
  const CheckpointConfig defaults = scenario_config(*session_->model());
  CheckpointConfig c = session_->config();
  c.modules = step.modules.value_or(defaults.modules);
  if (c.modules.erase("*")) {  // every top-level checkpointable module
    for (const auto& child : session_->model()->root.children)
      if (child->checkpointable) c.modules.insert(child->path);
  }
  c.ranges.clear();
  c.segments = step.segments.value_or(defaults.segments);
  c.batch = step.batch && *step.batch > 0 ? *step.batch : defaults.batch;
  c.use_reentrant = step.reentrant.value_or(defaults.use_reentrant);
  c.preserve_rng_state = step.preserveRng.value_or(defaults.preserve_rng_state);
  c.policy = step.policy.value_or(SelectivePolicy::none);
  return c;
}

void TourRunner::configure() {
  if (!tour_ || !session_->model()) return;
  session_->setConfig(expectedConfig());
  // The run may be shown already (a step that only moves the cursor, or a run kept from before).
  QMetaObject::invokeMethod(this, &TourRunner::onRunShown, Qt::QueuedConnection);
}

// What the step is compared against: the same settings without any checkpoint.
CheckpointConfig TourRunner::baselineConfig() const {
  CheckpointConfig c = expectedConfig();
  c.modules.clear();
  c.ranges.clear();
  c.segments = 0;
  c.policy = SelectivePolicy::none;
  return c;
}

std::optional<std::int64_t> TourRunner::baselinePeak() const {
  if (!tour_ || !session_->model()) return std::nullopt;
  const auto it = baselines_.find(baselineKey(baselineConfig()));
  return it == baselines_.end() ? std::nullopt : std::optional<std::int64_t>(it->second);
}

QString TourRunner::baselineKey(const CheckpointConfig& c) const {
  return QStringLiteral("%1|%2|%3|%4")
      .arg(session_->source())
      .arg(c.batch)
      .arg(c.use_reentrant)
      .arg(c.preserve_rng_state);
}

// The step's caption quotes the run without checkpoints: that run, once per settings, beside the
// step's own (the app's own summary compares with the previous configuration, not this one).
bool TourRunner::needsBaseline() const {
  const QString& caption = tour_->steps[index_].caption;
  return (caption.contains(QStringLiteral("{baseline_peak}")) ||
          caption.contains(QStringLiteral("{peak_change}"))) &&
         !baselinePeak();
}

void TourRunner::requestBaseline() {
  const CheckpointConfig base = baselineConfig();
  const QString key = baselineKey(base);
  if (baselineRequested_.contains(key)) return;
  baselineRequested_.insert(key);
  session_->runs()->computeDetached(base, [this, key](RunSnapshotPtr snap) {
    baselineRequested_.remove(key);
    if (!snap) return;  // the model changed meanwhile
    // A baseline that could not run is quoted as "—" rather than waited for.
    const bool ok = snap->result && snap->notComputed.empty() && snap->summary.ok;
    baselines_[key] = ok ? snap->summary.peak.bytes : -1;
    onRunShown();
  });
}

bool TourRunner::deviated() const {
  return tour_ && !awaitingModel_ && session_->model() && session_->config() != expectedConfig();
}

bool TourRunner::settled() const {
  return placed_ && runMatches() && !needsBaseline();
}

bool TourRunner::runMatches() const {
  if (!tour_ || awaitingModel_ || !session_->model()) return false;
  const auto run = session_->current();
  return run && run->result && !run->dryRun() && !run->realRunFollows &&
         run->config == session_->config() && session_->config() == expectedConfig();
}

void TourRunner::onRunShown() {
  if (!runMatches()) return;
  if (needsBaseline()) {
    // The run without checkpoints may be this very run.
    const auto run = session_->current();
    if (run->config == baselineConfig() && run->summary.ok)
      baselines_[baselineKey(baselineConfig())] = run->summary.peak.bytes;
    else
      requestBaseline();
  }
  if (!placed_) {
    placed_ = true;
    const TourStep& step = tour_->steps[index_];
    const std::int64_t k = tourCursorStep(step.cursor, *session_->current());
    if (k >= 0) {
      player_->pause();
      player_->setCursor(k);
    }
    if (!step.highlight.isEmpty()) emit highlightRequested(step.highlight);
  }
  emit changed();
}

QString TourRunner::caption() const {
  if (!tour_) return {};
  const QString& text = tour_->steps[index_].caption;
  if (settled()) return fillCaption(text, *session_->current(), baselinePeak());
  static const QRegularExpression placeholder(QStringLiteral("\\{[a-z_]+\\}"));
  return QString(text).replace(placeholder, QStringLiteral("…"));
}

}  // namespace ckpt::ui
