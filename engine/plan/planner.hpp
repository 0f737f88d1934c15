#pragma once

// Plans under a memory budget and the memory/recompute Pareto frontier (docs/ARCHITECTURE.md
// "plan"). Every plan is judged by the evaluator (a run today, a dry run once the meta device
// exists); the cost model only proposes.

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/plan/strategy.hpp"

namespace ckpt {

// "2GiB", "300MiB", "1.5GB", "123456" (bytes) or "60%" (of `plain_peak`). Throws
// std::invalid_argument naming the text when malformed or not positive.
std::int64_t parse_budget(const std::string& text, std::int64_t plain_peak);

class Planner {
 public:
  Planner(const PlanEvaluator& evaluator, CandidateOptions options = {}, StrategyParams params = {},
          const std::atomic<bool>* cancel = nullptr);

  // The strategy's plan for the budget. Fixed strategies (none, all, every-k, sqrt, uniform-n)
  // over budget are repaired (candidates added, cheapest bytes first, until the evaluated peak
  // fits); a plan that still does not fit has fits = false and a note naming the lowest peak
  // reached and its plan.
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
  PlanPoint point(Strategy s, std::vector<int> chosen, std::int64_t budget);

 private:
  PlanPoint greedy(std::int64_t budget);
  PlanPoint knapsack(std::int64_t budget);
  PlanPoint optimal(std::int64_t budget);
  std::optional<PlanPoint> exact(std::int64_t budget);
  PlanPoint chain_dp(std::int64_t budget);
  void repair(PlanPoint& p, std::int64_t budget);
  void prune(PlanPoint& p, std::int64_t budget);
  bool cancelled() const { return cancel_ && cancel_->load(); }

  const PlanEvaluator& ev_;
  CandidateSet set_;
  StrategyParams params_;
  const std::atomic<bool>* cancel_;
  std::optional<PlanPoint> lowest_;  // the lowest peak evaluated so far
  bool descended_ = false;
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
