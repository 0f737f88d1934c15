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
  c.segments = 0;
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

bool TourRunner::settled() const {
  return placed_ && runMatches();
}

bool TourRunner::runMatches() const {
  if (!tour_ || awaitingModel_ || !session_->model()) return false;
  const auto run = session_->current();
  return run && run->result && !run->dryRun() && !run->realRunFollows &&
         run->config == session_->config() && session_->config() == expectedConfig();
}

void TourRunner::onRunShown() {
  if (!runMatches()) return;
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
  if (settled()) return fillCaption(text, *session_->current());
  static const QRegularExpression placeholder(QStringLiteral("\\{[a-z_]+\\}"));
  return QString(text).replace(placeholder, QStringLiteral("…"));
}

}  // namespace ckpt::ui
