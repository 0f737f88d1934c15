#include "ui/session/run_controller.hpp"

#include <QCoreApplication>
#include <QTimer>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>

#include "engine/run/memory_guard.hpp"
#include "engine/tensor/storage_pool.hpp"
#include "ui/util/work_pool.hpp"

namespace ckpt::ui {

namespace {

// One run of `config` (dry or real, as config.dry_run says) and the views' data derived from it.
std::shared_ptr<RunSnapshot> runAndDerive(const Runner& runner, const CheckpointConfig& config,
                                          quint64 generation,
                                          const std::shared_ptr<std::atomic<bool>>& cancel) {
  const std::shared_ptr<const Model>& model = runner.model_ptr();
  auto snap = std::make_shared<RunSnapshot>();
  snap->generation = generation;
  snap->config = config;
  snap->config.dry_run = false;  // the request's configuration; the result says which run
  snap->model = model;
  auto result = std::make_shared<RunResult>();
  QElapsedTimer clock;
  clock.start();
  try {
    *result = runner.run(config, cancel.get());
  } catch (const std::exception& e) {
    // The Runner reports failures in RunResult; anything thrown is still shown, never lost.
    result->set_status(RunStatus::failed, e.what());
  }
  snap->result = result;
  snap->runnerMs = static_cast<double>(clock.nsecsElapsed()) / 1e6;
  if (!(cancel->load() && result->cancelled())) {
    RunReport report = report_run(*model, config, *result);
    snap->series = std::move(report.series);
    snap->summary = std::move(report.summary);
    snap->lessons = std::move(report.lessons);
    snap->timeline = std::move(report.timeline);
  }
  snap->derivedMs = static_cast<double>(clock.nsecsElapsed()) / 1e6 - snap->runnerMs;
  return snap;
}

// The dry run first, handed to `preview` while the real run follows when it fits `limit`.
RunSnapshotPtr runOnWorker(std::shared_ptr<SharedRunner> shared, CheckpointConfig config,
                           quint64 generation, std::shared_ptr<std::atomic<bool>> cancel,
                           std::int64_t limit, std::function<void(RunSnapshotPtr)> preview) {
  const Runner& runner = shared->get();
  const std::shared_ptr<const Model>& model = runner.model_ptr();
  const bool dryOnly = config.dry_run;
  config.dry_run = true;
  auto dry = runAndDerive(runner, config, generation, cancel);
  if (dryOnly || !dry->series) return dry;
  const GuardVerdict verdict = judge_memory(*model, *dry->result, limit);
  if (!verdict.fits) {
    dry->notComputed = verdict.message;
    auto series = std::make_shared<MemorySeries>(*dry->series);
    series->not_computed = verdict.message;
    dry->series = std::move(series);
    return dry;
  }
  dry->realRunFollows = true;
  preview(dry);
  if (cancel->load()) return dry;
  config.dry_run = false;
  return runAndDerive(runner, config, generation, cancel);
}

// Kept results: a few, and at most about a million steps of traces (HeavyModel's are 200,000).
constexpr std::size_t kKeptRuns = 6;
constexpr std::int64_t kKeptSteps = 1'000'000;

}  // namespace

const Runner& SharedRunner::get() {
  std::call_once(compiled_, [this] { runner_.emplace(model_); });
  return *runner_;
}

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
  runner_ = model_ ? std::make_shared<SharedRunner>(model_) : nullptr;
  // The storage pool keeps a step's blocks for the next one, up to the high-water mark of the
  // runs so far; another model's steps would find the old model's sizes instead.
  storage_pool::trim();
}

quint64 RunController::request(const CheckpointConfig& config) {
  if (RunSnapshotPtr snap = kept(config)) {
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
  job->config = config;
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

void RunController::computeDetached(const CheckpointConfig& config,
                                    std::function<void(RunSnapshotPtr)> done) {
  if (!model_) return;
  std::erase_if(previews_, [](const QFuture<void>& f) { return f.isFinished(); });
  ++detachedRunning_;
  previews_.push_back(
      QtConcurrent::run(workPool(), [this, shared = runner_, config, limit = memoryLimit_,
                                     cancel = detachedCancel_, done = std::move(done)] {
        auto snap = runOnWorker(shared, config, 0, cancel, limit, [](const RunSnapshotPtr&) {});
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
  running_->future = QtConcurrent::run(workPool(), runOnWorker, runner_, running_->config,
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
  if (job.config.dry_run || !model_) return;
  std::erase_if(previews_, [](const QFuture<void>& f) { return f.isFinished(); });
  auto model = model_;
  auto shared = runner_;
  const CheckpointConfig config = job.config;
  const quint64 generation = job.generation;
  const std::int64_t limit = memoryLimit_;
  auto cancel = job.cancel;
  previews_.push_back(
      QtConcurrent::run(workPool(), [this, model, shared, config, generation, limit, cancel] {
        CheckpointConfig dry = config;
        dry.dry_run = true;
        auto snap = runAndDerive(shared->get(), dry, generation, cancel);
        if (!snap->series) return;
        snap->realRunFollows = judge_memory(*model, *snap->result, limit).fits;
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
  if (!snap->config.inputs.empty()) return;
  std::erase_if(kept_, [&](const RunSnapshotPtr& k) { return k->config == snap->config; });
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

RunSnapshotPtr RunController::kept(const CheckpointConfig& config) const {
  for (const auto& k : kept_)
    if (k->model == model_ && k->config == config) return k;
  return nullptr;
}

}  // namespace ckpt::ui
