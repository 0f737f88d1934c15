#pragma once

// Runs the engine's request pipeline (engine/request/execute.hpp) off the UI thread. Each
// request's dry run (the meta device: the exact curve in a few percent of the time) is delivered
// at once; then, when the engine's memory guard lets the real run start, the real run, delivered
// when done and replacing it. A configuration that would not fit is delivered as its dry run
// only, saying why. Every run carries the comparison with the same settings without checkpoints
// (the engine runs and keeps that baseline once per settings).
// At most one run is in flight; a newer request cancels it
// (the Runner polls the flag between ops) and waits as the single pending one, so 200 rapid
// toggles cost at most two runs and only the newest configuration's result is delivered.
// Runs are deterministic (same model, request and seed give the same trace), so the last few
// results are kept: clicking a block off again, or undoing a variant change, answers from
// there instead of running again.

#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QObject>
#include <atomic>
#include <deque>
#include <functional>
#include <memory>

#include "engine/report/run_report.hpp"
#include "engine/request/execute.hpp"
#include "engine/run/run_request.hpp"

namespace ckpt::ui {

// Everything the views need from one run, built on the worker thread.
struct RunSnapshot {
  quint64 generation = 0;
  RunRequest request;  // as the session asked it (the result says whether it ran dry)
  std::shared_ptr<const Model> model;
  std::shared_ptr<const RunResult> result;
  MemorySeriesPtr series;
  RunSummary summary;  // with the comparison with the plain run (summary.baseline)
  std::vector<Lesson> lessons;
  std::shared_ptr<const StateTimeline> timeline;
  qint64 wallMs = 0;  // request to result, including superseded waiting
  // On the worker: the engine's run of the result shown, then its report.
  double runnerMs = 0;
  double derivedMs = 0;
  // A dry run's snapshot (exact bytes, estimated times, no values); `realRunFollows` while the
  // real run of the same request is under way, `notComputed` when the guard refused it.
  bool dryRun() const { return result && result->dry_run; }
  bool realRunFollows = false;
  std::string notComputed;

  const Trace& trace() const { return result->trace; }
  std::shared_ptr<const Trace> tracePtr() const {
    return std::shared_ptr<const Trace>(result, &result->trace);
  }
};
using RunSnapshotPtr = std::shared_ptr<const RunSnapshot>;

class RunController : public QObject {
  Q_OBJECT

 public:
  explicit RunController(QObject* parent = nullptr);
  ~RunController() override;

  void setModel(std::shared_ptr<const Model> model);
  // Starts (or queues behind the cancelled current run) a run of `request`; returns its id.
  quint64 request(const RunRequest& request);
  void cancelAll();
  // The memory a real run may use (0: the engine's default share of available memory).
  void setMemoryLimit(std::int64_t bytes);
  std::int64_t memoryLimit() const { return memoryLimit_; }
  // A request answered from the kept results is delivered from the event loop, not at once.
  bool busy() const { return running_ != nullptr || delivering_; }
  quint64 latestRequest() const { return latest_; }
  // Blocks until nothing runs (tests, shutdown).
  void waitForIdle();
  // A run of `request` beside the requested ones (restoring a saved pin): it never becomes the
  // current run; `done` gets it on this object's thread, or null when the model changed first.
  void computeDetached(const RunRequest& request, std::function<void(RunSnapshotPtr)> done);
  int detachedRunning() const { return detachedRunning_; }

 signals:
  void busyChanged(bool busy);
  void finished(ckpt::ui::RunSnapshotPtr snapshot);
  // The dry run of the newest request, while its real run is still under way (then finished()
  // brings the real one; a configuration over the memory limit comes by finished() as a dry run).
  void previewed(ckpt::ui::RunSnapshotPtr snapshot);

 private:
  struct Job {
    quint64 generation;
    RunRequest request;
    std::shared_ptr<std::atomic<bool>> cancel;
    QElapsedTimer clock;
    QFuture<RunSnapshotPtr> future;
  };
  void start(std::unique_ptr<Job> job);
  void onJobFinished();
  void onPreview(const RunSnapshotPtr& preview);
  // The dry run of a request that waits behind a cancelled run, at once: a cancelled run stops
  // at its next op, which at a large batch can be a few hundred milliseconds away.
  void startPreview(const Job& job);
  void keep(const RunSnapshotPtr& snap);
  RunSnapshotPtr kept(const RunRequest& request) const;

  std::shared_ptr<const Model> model_;
  std::shared_ptr<const RunTarget> target_;
  quint64 latest_ = 0;
  std::unique_ptr<Job> running_;
  std::unique_ptr<Job> pending_;
  QFutureWatcher<RunSnapshotPtr> watcher_;
  std::deque<RunSnapshotPtr> kept_;  // most recent first
  bool delivering_ = false;
  std::int64_t memoryLimit_ = 0;
  quint64 previewedGeneration_ = 0;      // the newest request whose dry run was shown
  std::vector<QFuture<void>> previews_;  // startPreview's, waited for by the destructor
  std::shared_ptr<std::atomic<bool>> detachedCancel_ = std::make_shared<std::atomic<bool>>(false);
  int detachedRunning_ = 0;
};

}  // namespace ckpt::ui
