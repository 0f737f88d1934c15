#pragma once

// The Runner: Model + RunRequest -> one forward, loss and backward (real, or dry on the meta
// device) -> Trace, outputs and gradients (DESIGN.md "run"). One run, as asked: the request's
// pipeline (dry run, memory guard, real run, baseline, report) is engine/request/execute.hpp,
// which is what the app, the CLI and the planner call.
//
// CONTRACT shared by the engine's floors above this one. Additions are fine; changing or removing
// a member needs every user updated in the same change.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/run/run_request.hpp"

namespace ckpt {

class CompiledModel;

class Runner {
 public:
  explicit Runner(std::shared_ptr<const Model> model);
  // Thread-safe for distinct Runner objects; `cancel` is polled between ops (a cancelled run
  // returns status cancelled).
  RunResult run(const RunRequest& request, const std::atomic<bool>* cancel = nullptr) const;
  const Model& model() const { return *model_; }
  const std::shared_ptr<const Model>& model_ptr() const { return model_; }

 private:
  // The Runner of the model loaded again at `batch` (a dynamic-batch ONNX file), compiled once:
  // the app runs every configuration at the Batch box's value, a dry run and then a real one.
  std::shared_ptr<const Runner> at_batch(std::int64_t batch) const;

  struct Rebatched;
  std::shared_ptr<const Model> model_;
  std::shared_ptr<const CompiledModel> compiled_;
  std::shared_ptr<Rebatched> rebatched_;
};

}  // namespace ckpt
