#include "ui/session/run_controller.hpp"

#include <QtConcurrent/QtConcurrentRun>

#include "ui/util/work_pool.hpp"

namespace ckpt::ui {

namespace {

RunSnapshotPtr runOnWorker(std::shared_ptr<const Model> model, CheckpointConfig config,
                           quint64 generation, std::shared_ptr<std::atomic<bool>> cancel) {
  auto snap = std::make_shared<RunSnapshot>();
  snap->generation = generation;
  snap->config = config;
  snap->model = model;
  auto result = std::make_shared<RunResult>();
  try {
    Runner runner(model);
    *result = runner.run(config, cancel.get());
  } catch (const std::exception& e) {
    // The Runner reports failures in RunResult; anything thrown is still shown, never lost.
    result->ok = false;
    result->error = e.what();
  }
  snap->result = result;
  if (!(cancel->load() && result->error == "cancelled")) {
    auto series = std::make_shared<MemorySeries>(memorySeriesFromTrace(result->trace));
    series->failed = !result->ok;
    for (const auto& m : result->trace.messages())
      if (m.severity == Severity::warning) series->warned = true;
    snap->series = std::move(series);
    snap->summary = summarize(*model, *result, describeConfig(config));
    snap->lessons = lessonsOf(*model, config, *result);
    snap->timeline =
        std::make_shared<const StateTimeline>(buildStateTimeline(*model, result->trace));
  }
  return snap;
}

}  // namespace

RunController::RunController(QObject* parent) : QObject(parent) {
  connect(&watcher_, &QFutureWatcher<RunSnapshotPtr>::finished, this,
          &RunController::onJobFinished);
}

RunController::~RunController() {
  pending_.reset();
  if (running_) {
    running_->cancel->store(true);
    running_->future.waitForFinished();
  }
}

void RunController::setModel(std::shared_ptr<const Model> model) {
  cancelAll();
  model_ = std::move(model);
}

quint64 RunController::request(const CheckpointConfig& config) {
  auto job = std::make_unique<Job>();
  job->generation = ++latest_;
  job->config = config;
  job->cancel = std::make_shared<std::atomic<bool>>(false);
  job->clock.start();
  const quint64 id = job->generation;
  if (running_) {
    running_->cancel->store(true);
    pending_ = std::move(job);  // replaces any older pending request
  } else {
    start(std::move(job));
  }
  return id;
}

void RunController::cancelAll() {
  pending_.reset();
  if (running_) running_->cancel->store(true);
  ++latest_;  // whatever is running now is stale
}

void RunController::waitForIdle() {
  while (running_) {
    running_->future.waitForFinished();
    onJobFinished();
  }
}

void RunController::start(std::unique_ptr<Job> job) {
  if (!model_) return;
  const bool wasBusy = busy();
  running_ = std::move(job);
  running_->future = QtConcurrent::run(workPool(), runOnWorker, model_, running_->config,
                                       running_->generation, running_->cancel);
  watcher_.setFuture(running_->future);
  if (!wasBusy) emit busyChanged(true);
}

void RunController::onJobFinished() {
  // A late signal from a future already handled by waitForIdle() finds another job (or none).
  if (!running_ || !running_->future.isFinished()) return;
  std::unique_ptr<Job> done = std::move(running_);
  RunSnapshotPtr snap = done->future.result();
  if (pending_) {
    start(std::move(pending_));
    return;
  }
  emit busyChanged(false);
  if (done->generation != latest_ || !snap || !snap->series) return;
  auto copy = std::make_shared<RunSnapshot>(*snap);
  copy->wallMs = done->clock.elapsed();
  emit finished(copy);
}

}  // namespace ckpt::ui
