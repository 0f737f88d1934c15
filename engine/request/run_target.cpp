#include "engine/request/run_target.hpp"

#include "engine/run/runner.hpp"

namespace ckpt {

namespace {

// Baselines kept: a few settings' worth, dry and real, and at most about a million steps of
// traces in all (HeavyModel's are 200,000 steps each).
constexpr std::size_t kKeptBaselines = 4;
constexpr std::int64_t kKeptSteps = 1'000'000;

}  // namespace

RunTarget::RunTarget(std::shared_ptr<const Model> model) : model_(std::move(model)) {}

RunTarget::~RunTarget() = default;

RunResult RunTarget::run(const RunRequest& request, const std::atomic<bool>* cancel) const {
  std::call_once(compiled_, [this] { runner_ = std::make_unique<Runner>(model_); });
  return runner_->run(request, cancel);
}

std::shared_ptr<const RunResult> RunTarget::kept(const RunRequest& request) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [r, result] : kept_)
    if (same_run(r, request)) return result;
  return nullptr;
}

void RunTarget::keep(const RunRequest& request, std::shared_ptr<const RunResult> result) const {
  // A request with explicit inputs or a caller's ledger is not one another request repeats.
  if (!request.settings.inputs.empty() || request.hooks.ledger || !result || result->cancelled())
    return;
  std::lock_guard<std::mutex> lock(mutex_);
  std::erase_if(kept_, [&](const auto& k) { return same_run(k.first, request); });
  kept_.emplace_front(request, std::move(result));
  std::int64_t steps = 0;
  std::size_t n = 0;
  while (n < kept_.size() && n < kKeptBaselines) {
    steps += kept_[n].second->trace.step_count();
    if (n > 0 && steps > kKeptSteps) break;
    ++n;
  }
  kept_.resize(n);
}

}  // namespace ckpt
