#pragma once

// Runs the Runner off the UI thread. At most one run is in flight; a newer request cancels it
// (the Runner polls the flag between ops) and waits as the single pending one, so 200 rapid
// toggles cost at most two runs and only the newest configuration's result is delivered.

#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QObject>
#include <atomic>
#include <memory>

#include "engine/run/run_summary.hpp"
#include "engine/run/runner.hpp"
#include "ui/core/config_text.hpp"
#include "ui/core/lessons.hpp"
#include "ui/core/memory_series.hpp"
#include "ui/core/state_timeline.hpp"

namespace ckpt::ui {

// Everything the views need from one run, built on the worker thread.
struct RunSnapshot {
  quint64 generation = 0;
  CheckpointConfig config;
  std::shared_ptr<const Model> model;
  std::shared_ptr<const RunResult> result;
  MemorySeriesPtr series;
  RunSummary summary;
  std::vector<Lesson> lessons;
  std::shared_ptr<const StateTimeline> timeline;
  qint64 wallMs = 0;  // request to result, including superseded waiting

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
  // Starts (or queues behind the cancelled current run) a run of `config`; returns its id.
  quint64 request(const CheckpointConfig& config);
  void cancelAll();
  bool busy() const { return running_ != nullptr; }
  quint64 latestRequest() const { return latest_; }
  // Blocks until nothing runs (tests, shutdown).
  void waitForIdle();

 signals:
  void busyChanged(bool busy);
  void finished(ckpt::ui::RunSnapshotPtr snapshot);

 private:
  struct Job {
    quint64 generation;
    CheckpointConfig config;
    std::shared_ptr<std::atomic<bool>> cancel;
    QElapsedTimer clock;
    QFuture<RunSnapshotPtr> future;
  };
  void start(std::unique_ptr<Job> job);
  void onJobFinished();

  std::shared_ptr<const Model> model_;
  quint64 latest_ = 0;
  std::unique_ptr<Job> running_;
  std::unique_ptr<Job> pending_;
  QFutureWatcher<RunSnapshotPtr> watcher_;
};

}  // namespace ckpt::ui
