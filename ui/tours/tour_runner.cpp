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

RunRequest TourRunner::expectedRequest() const {
  if (!tour_ || !session_->model()) return {};
  const TourStep& step = tour_->steps[index_];
  const RunRequest defaults = scenario_request(*session_->model());
  RunRequest c = session_->request();
  c.plan.modules = step.modules.value_or(defaults.plan.modules);
  if (c.plan.modules.erase("*")) {  // every top-level checkpointable module
    for (const auto& child : session_->model()->root.children)
      if (child->checkpointable) c.plan.modules.insert(child->path);
  }
  c.plan.ranges.clear();
  c.plan.segments = step.segments.value_or(defaults.plan.segments);
  c.settings.batch = step.batch && *step.batch > 0 ? *step.batch : defaults.settings.batch;
  c.settings.use_reentrant = step.reentrant.value_or(defaults.settings.use_reentrant);
  c.settings.preserve_rng_state = step.preserveRng.value_or(defaults.settings.preserve_rng_state);
  c.plan.policy = step.policy.value_or(SelectivePolicy{});
  c.settings.device = step.device.value_or(Device::cpu);
  return c;
}

void TourRunner::configure() {
  if (!tour_ || !session_->model()) return;
  session_->setRequest(expectedRequest());
  // The run may be shown already (a step that only moves the cursor, or a run kept from before).
  QMetaObject::invokeMethod(this, &TourRunner::onRunShown, Qt::QueuedConnection);
}

// The peak of the step's settings without checkpoints, as the engine ran it beside the step's
// own run (every run the app shows carries that comparison); empty when it did not run.
std::optional<std::int64_t> TourRunner::baselinePeak() const {
  if (!runMatches()) return std::nullopt;
  const auto& baseline = session_->current()->summary.baseline;
  return baseline ? std::optional<std::int64_t>(baseline->peak_bytes) : std::nullopt;
}

bool TourRunner::deviated() const {
  return tour_ && !awaitingModel_ && session_->model() &&
         !same_run(session_->request(), expectedRequest());
}

bool TourRunner::settled() const {
  return placed_ && runMatches();
}

bool TourRunner::runMatches() const {
  if (!tour_ || awaitingModel_ || !session_->model()) return false;
  const auto run = session_->current();
  // A real run, or a dry run the engine kept as final (no real run follows: CUDA's).
  return run && run->result && (!run->dryRun() || !run->notComputed.empty()) &&
         !run->realRunFollows && same_run(run->request, session_->request()) &&
         same_run(session_->request(), expectedRequest());
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
