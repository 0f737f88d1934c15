#pragma once

// The model a request runs on: the model, its compiled form (built by the first run that needs
// it, then shared by every later one, dry or real, on any thread), and the last few baselines —
// runs of the same settings without checkpoints — so that clicking through plans, pins and
// lessons measures each baseline once.

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <utility>

#include "engine/run/run_request.hpp"

namespace ckpt {

class Runner;

class RunTarget {
 public:
  explicit RunTarget(std::shared_ptr<const Model> model);
  ~RunTarget();
  RunTarget(const RunTarget&) = delete;
  RunTarget& operator=(const RunTarget&) = delete;

  const Model& model() const { return *model_; }
  const std::shared_ptr<const Model>& model_ptr() const { return model_; }

 private:
  friend class RequestPipeline;

  // One run of the engine, exactly as asked (dry or real, by request.settings.dry_run).
  RunResult run(const RunRequest& request, const std::atomic<bool>* cancel) const;
  // A kept result of `request` (a baseline-form request), or null.
  std::shared_ptr<const RunResult> kept(const RunRequest& request) const;
  void keep(const RunRequest& request, std::shared_ptr<const RunResult> result) const;

  std::shared_ptr<const Model> model_;
  mutable std::once_flag compiled_;
  mutable std::unique_ptr<Runner> runner_;
  mutable std::mutex mutex_;
  mutable std::deque<std::pair<RunRequest, std::shared_ptr<const RunResult>>> kept_;
};

}  // namespace ckpt
