#include "ui/session/run_controller.hpp"

#include <QCoreApplication>
#include <QTimer>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>

#include "engine/tensor/storage_pool.hpp"
#include "ui/util/work_pool.hpp"

namespace ckpt::ui {

namespace {

// The views' data from one outcome of the engine's pipeline; null series when it was cancelled.
std::shared_ptr<RunSnapshot> snapshotOf(const RunOutcome& outcome, const RunRequest& asked,
                                        const std::shared_ptr<const Model>& model,
                                        quint64 generation) {
  auto snap = std::make_shared<RunSnapshot>();
  snap->generation = generation;
  snap->request = asked;
  snap->model = model;
  snap->result = outcome.result;
  snap->series = outcome.report.series;
  snap->summary = outcome.report.summary;
  snap->lessons = outcome.report.lessons;
  snap->timeline = outcome.report.timeline;
  snap->runnerMs = outcome.run_ms;
  snap->derivedMs = outcome.report_ms;
  snap->realRunFollows = outcome.real_run_follows;
  snap->notComputed = outcome.not_computed;
  return snap;
}

// The request as the engine runs it: the app's memory limit is the guard's, unless the request
// sets its own.
RunRequest withLimit(RunRequest request, std::int64_t limit) {
  if (request.settings.max_memory == 0) request.settings.max_memory = limit;
  return request;
}

// The whole pipeline: the dry run handed to `preview` while the real run follows (when the
// guard lets it), then the run shown.
RunSnapshotPtr runOnWorker(std::shared_ptr<const RunTarget> target, RunRequest request,
                           quint64 generation, std::shared_ptr<std::atomic<bool>> cancel,
                           std::int64_t limit, std::function<void(RunSnapshotPtr)> preview) {
  RequestOptions options;
  options.baseline = true;
  options.cancel = cancel.get();
  options.on_dry_run = [&](const RunOutcome& dry) {
    preview(snapshotOf(dry, request, target->model_ptr(), generation));
  };
  const RunOutcome outcome = execute(*target, withLimit(request, limit), options);
  return snapshotOf(outcome, request, target->model_ptr(), generation);
}

// Kept results: a few, and at most about a million steps of traces (HeavyModel's are 200,000).
constexpr std::size_t kKeptRuns = 6;
constexpr std::int64_t kKeptSteps = 1'000'000;

}  // namespace

RunController::RunController(QObject* parent) : QObject(parent) {
  connect(&watcher_, &QFutureWatcher<RunSnapshotPtr>::finished, this,
          &RunController::onJobFinished);
}

RunController::~RunController() {
  detachedCancel_->store(true);
  for (auto& f : previews_) f.waitForFinished();
  pending_.reset();
  if (running_) {
    running_->cancel->store(true);
    running_->future.waitForFinished();
  }
}

void RunController::setModel(std::shared_ptr<const Model> model) {
  cancelAll();
  // The old model's detached runs stop at their next op; new ones get a flag of their own.
  detachedCancel_->store(true);
  detachedCancel_ = std::make_shared<std::atomic<bool>>(false);
  kept_.clear();
  model_ = std::move(model);
  target_ = model_ ? std::make_shared<const RunTarget>(model_) : nullptr;
  // The storage pool keeps a step's blocks for the next one, up to the high-water mark of the
  // runs so far; another model's steps would find the old model's sizes instead.
  storage_pool::trim();
}

quint64 RunController::request(const RunRequest& request) {
  if (RunSnapshotPtr snap = kept(request)) {
    // Whatever runs is stale now; the kept result is delivered from the event loop, as a run's
    // would be, so that the caller sees the same order of signals either way.
    pending_.reset();
    if (running_) running_->cancel->store(true);
    const quint64 id = ++latest_;
    QElapsedTimer clock;
    clock.start();
    if (!busy()) emit busyChanged(true);
    delivering_ = true;
    QTimer::singleShot(0, this, [this, id, snap, clock] {
      if (id != latest_) return;  // a newer request took over (and owns the busy state)
      delivering_ = false;
      if (!running_) emit busyChanged(false);
      auto copy = std::make_shared<RunSnapshot>(*snap);
      copy->generation = id;
      copy->wallMs = clock.elapsed();
      emit finished(copy);
    });
    return id;
  }
  auto job = std::make_unique<Job>();
  job->generation = ++latest_;
  job->request = request;
  job->cancel = std::make_shared<std::atomic<bool>>(false);
  job->clock.start();
  const quint64 id = job->generation;
  if (running_) {
    running_->cancel->store(true);
    pending_ = std::move(job);  // replaces any older pending request
    startPreview(*pending_);
  } else {
    start(std::move(job));
  }
  return id;
}

void RunController::computeDetached(const RunRequest& request,
                                    std::function<void(RunSnapshotPtr)> done) {
  if (!model_) return;
  std::erase_if(previews_, [](const QFuture<void>& f) { return f.isFinished(); });
  ++detachedRunning_;
  previews_.push_back(
      QtConcurrent::run(workPool(), [this, target = target_, request, limit = memoryLimit_,
                                     cancel = detachedCancel_, done = std::move(done)] {
        auto snap = runOnWorker(target, request, 0, cancel, limit, [](const RunSnapshotPtr&) {});
        QMetaObject::invokeMethod(
            this,
            [this, snap, cancel, done] {
              --detachedRunning_;
              done(cancel->load() ? nullptr : snap);
            },
            Qt::QueuedConnection);
      }));
}

void RunController::cancelAll() {
  pending_.reset();
  if (delivering_ && !running_) emit busyChanged(false);
  delivering_ = false;
  if (running_) running_->cancel->store(true);
  ++latest_;  // whatever is running now is stale
}

void RunController::waitForIdle() {
  while (running_) {
    running_->future.waitForFinished();
    onJobFinished();
  }
  if (delivering_) QCoreApplication::processEvents();  // the kept result's queued delivery
}

void RunController::start(std::unique_ptr<Job> job) {
  if (!model_) return;
  const bool wasBusy = busy();
  delivering_ = false;  // a run requested after a kept result supersedes its delivery
  running_ = std::move(job);
  // The dry run's result comes back through the event loop, to this object's thread; the
  // context object drops it if the controller is gone.
  auto preview = [this](RunSnapshotPtr snap) {
    QMetaObject::invokeMethod(
        this, [this, snap] { onPreview(snap); }, Qt::QueuedConnection);
  };
  running_->future = QtConcurrent::run(workPool(), runOnWorker, target_, running_->request,
                                       running_->generation, running_->cancel, memoryLimit_,
                                       std::function<void(RunSnapshotPtr)>(preview));
  watcher_.setFuture(running_->future);
  if (!wasBusy) emit busyChanged(true);
}

void RunController::onJobFinished() {
  // A late signal from a future already handled by waitForIdle() finds another job (or none).
  if (!running_ || !running_->future.isFinished()) return;
  std::unique_ptr<Job> done = std::move(running_);
  RunSnapshotPtr snap = done->future.result();
  if (snap && snap->series && snap->model == model_) keep(snap);
  if (pending_) {
    start(std::move(pending_));
    return;
  }
  if (!delivering_) emit busyChanged(false);
  if (done->generation != latest_ || !snap || !snap->series) return;
  auto copy = std::make_shared<RunSnapshot>(*snap);
  copy->wallMs = done->clock.elapsed();
  emit finished(copy);
}

void RunController::setMemoryLimit(std::int64_t bytes) {
  memoryLimit_ = std::max<std::int64_t>(bytes, 0);  // 0: the default; below 0 means nothing
  // What the guard refused under the old limit may run now (and the other way round).
  std::erase_if(kept_, [](const RunSnapshotPtr& k) { return !k->notComputed.empty(); });
}

void RunController::startPreview(const Job& job) {
  if (job.request.settings.dry_run || !model_) return;
  std::erase_if(previews_, [](const QFuture<void>& f) { return f.isFinished(); });
  previews_.push_back(QtConcurrent::run(
      workPool(), [this, target = target_, request = job.request, generation = job.generation,
                   limit = memoryLimit_, cancel = job.cancel] {
        // The request's dry run alone, at once; whether its real run follows is the guard's say.
        RunRequest dry = withLimit(request, limit);
        dry.settings.dry_run = true;
        RequestOptions options;
        options.baseline = true;
        options.cancel = cancel.get();
        const RunOutcome outcome = execute(*target, dry, options);
        if (!outcome.report.series) return;
        auto snap = snapshotOf(outcome, request, target->model_ptr(), generation);
        snap->realRunFollows = outcome.guard.fits;
        QMetaObject::invokeMethod(
            this, [this, snap] { onPreview(snap); }, Qt::QueuedConnection);
      }));
}

void RunController::onPreview(const RunSnapshotPtr& preview) {
  // Only the newest request's, once, and only while its own result has not come yet.
  const bool waiting = (running_ && running_->generation == preview->generation) ||
                       (pending_ && pending_->generation == preview->generation);
  if (!waiting || preview->generation != latest_ || previewedGeneration_ == preview->generation)
    return;
  previewedGeneration_ = preview->generation;
  auto copy = std::make_shared<RunSnapshot>(*preview);
  copy->wallMs = (running_ && running_->generation == preview->generation ? running_ : pending_)
                     ->clock.elapsed();
  emit previewed(copy);
}

void RunController::keep(const RunSnapshotPtr& snap) {
  if (!snap->request.settings.inputs.empty()) return;
  std::erase_if(kept_,
                [&](const RunSnapshotPtr& k) { return same_run(k->request, snap->request); });
  kept_.push_front(snap);
  std::int64_t steps = 0;
  std::size_t n = 0;
  while (n < kept_.size() && n < kKeptRuns) {
    steps += kept_[n]->trace().step_count();
    if (n > 0 && steps > kKeptSteps) break;
    ++n;
  }
  kept_.resize(n);
}

RunSnapshotPtr RunController::kept(const RunRequest& request) const {
  for (const auto& k : kept_)
    if (k->model == model_ && same_run(k->request, request)) return k;
  return nullptr;
}

}  // namespace ckpt::ui
