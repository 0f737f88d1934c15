#pragma once

// Plans under a memory budget and the memory/recompute Pareto frontier (docs/ARCHITECTURE.md
// "plan"). Every plan shown or chosen is judged by the evaluator (a dry run through the request
// pipeline); the peak model (engine/plan/peak_model.hpp) and its dynamic programs only propose.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/plan/chain_dp.hpp"
#include "engine/plan/strategy.hpp"

namespace ckpt {

// "2GiB", "300MiB", "1.5GB", "123456" (bytes) or "60%" (of `plain_peak`). Throws
// std::invalid_argument naming the text when malformed or not positive.
std::int64_t parse_budget(const std::string& text, std::int64_t plain_peak);

class Planner;

// A plan for a GPU of `card` bytes: what the process takes from the card (the allocator's
// reserved peak plus the CUDA context, figures.hpp's GpuFit) must fit, where the planner's
// budgets are allocated bytes. The allocated budget starts at the card less the context and the
// plain run's reserved-over-allocated; each round plans, reads the plan's dry run's reserved
// peak, and lowers the allocated budget by what the card was exceeded by.
struct GpuPlan {
  PlanPoint point;                    // fits: the GPU total is within the card
  std::int64_t allocated_budget = 0;  // the planner's budget of the last round
  std::int64_t context = 0;           // the CUDA context, an estimate (kCudaContextBytes)
  std::int64_t card = 0;
  int rounds = 0;
  std::int64_t reserved_peak() const { return point.eval.reserved_peak; }
  std::int64_t total() const { return reserved_peak() + context; }
};
GpuPlan plan_for_gpu(Planner& planner, Strategy s, std::int64_t card);
// `known`, an evaluated plan that fits and costs less, given as the answer `asked` was to be
// (its strategy and detail): optimal is never worse than a plan it has seen.
PlanPoint adopt_known(const PlanPoint& asked, const PlanPoint& known);
// The allocated budget plan_for_gpu starts from: the card less the context and the plain run's
// reserved-over-allocated (the planner's sweep is drawn around it).
std::int64_t allocated_budget_for_gpu(const PlanEvaluator& ev, std::int64_t card);

class Planner {
 public:
  Planner(const PlanEvaluator& evaluator, CandidateOptions options = {}, StrategyParams params = {},
          const std::atomic<bool>* cancel = nullptr);

  // The strategy's plan for the budget. Fixed strategies (none, all, every-k, sqrt, uniform-n)
  // over budget are repaired (candidates added, most bytes per recompute second first, until
  // the evaluated peak fits); a plan that still does not fit has fits = false and a note naming
  // the lowest peak reached and its plan. Optimal is never worse than a plan evaluated before
  // that fits the budget (by any strategy): it returns that plan instead.
  PlanPoint plan(Strategy s, std::int64_t budget);
  // The plan as the strategy makes it, without a budget (fixed strategies only).
  PlanPoint fixed(Strategy s);
  // Every strategy's plan plus optimal plans for a sweep of budgets between the plain peak and
  // the lowest one reached: all evaluated, deduplicated.
  std::vector<PlanPoint> sweep(std::int64_t budget, int steps = 10);
  // The lowest evaluated peak found (a greedy descent by peak), with its plan.
  const PlanPoint& lowest();

  const CandidateSet& candidates() const { return set_; }
  const PlanEvaluator& evaluator() const { return ev_; }
  // The plan of the chosen candidates, evaluated (a dry run, or the evaluator's cache).
  PlanPoint point(Strategy s, std::vector<int> chosen, std::int64_t budget);
  // The peak model over the current candidates (rebuilt when a strategy added a range).
  const PeakModel& peak_model();
  // Every plan evaluated so far that ran, in order.
  const std::vector<PlanPoint>& evaluated() const { return evaluated_; }
  // The least recompute among the evaluated plans that ran and whose evaluation `fits`, or null.
  const PlanPoint* cheapest_evaluated(const std::function<bool(const Evaluation&)>& fits) const;

 private:
  PlanPoint greedy(std::int64_t budget);
  PlanPoint knapsack(std::int64_t budget);
  PlanPoint optimal(std::int64_t budget);
  std::optional<PlanPoint> exact(std::int64_t budget);
  PlanPoint search(std::int64_t budget);
  PlanPoint search(std::int64_t budget, bool twins);
  // The peak model's cheapest plan whose prediction is within `target` (or its closest).
  ChainProposal propose(std::int64_t target, bool twins);
  // Candidates added to `chosen`, most bytes per recompute second first, while the peak model
  // says the peak drops, until it predicts `target`.
  // Without `twins`, regions recomputed whole only.
  std::vector<int> add_by_model(std::vector<int> chosen, std::int64_t target, bool twins = true);
  void repair(PlanPoint& p, std::int64_t budget);
  bool cancelled() const { return cancel_ && cancel_->load(); }

  const PlanEvaluator& ev_;
  CandidateSet set_;
  StrategyParams params_;
  const std::atomic<bool>* cancel_;
  std::optional<PlanPoint> lowest_;  // the lowest peak evaluated so far
  bool descended_ = false;
  std::unique_ptr<PeakModel> model_;
  std::size_t model_items_ = 0;  // the candidates the peak model was made for
  std::vector<PlanPoint> evaluated_;
  // Dry runs a proposal may take to fit: each one's overshoot tightens the model's target.
  static constexpr int kVerifyRounds = 4;
};

// The points no other point beats in both peak and recompute time, by increasing peak.
std::vector<PlanPoint> pareto_frontier(const std::vector<PlanPoint>& points);

// Whether `a` dominates `b`: no worse in peak and recompute, better in one.
bool dominates(const PlanPoint& a, const PlanPoint& b);

// A plan's one-line description: "b1, b3..b4" or "(nothing)".
std::string plan_text(const PlanPoint& p);

}  // namespace ckpt

namespace ckpt {

// Index into `front` (sorted by peak) of the least recompute whose peak fits `budget`, or -1.
int cheapest_within(const std::vector<PlanPoint>& front, std::int64_t budget);

}  // namespace ckpt
