// Planner::optimal: the least recompute whose evaluated peak fits the budget.
//
// Exact search: subsets of the candidates in increasing order of their cost-model recompute
// time (each recomputed op costs what its forward measured, so a plan's recompute is the sum of
// its candidates': nested checkpoints recompute their ops once more per level, which is what
// the evaluator counts too). The first subset whose evaluated peak fits is the optimum; no
// cheaper subset is skipped. For candidate sets too large for that (or when it runs out of
// evaluations), a search: the peak model's dynamic program proposes, a dry run verifies, and
// the model's error tightens the next proposal (a few dry runs per budget).
//
// Either way the answer is never worse than a plan evaluated before that fits the budget.

#include <algorithm>
#include <cmath>
#include <queue>
#include <set>

#include "engine/plan/chain_dp.hpp"
#include "engine/plan/planner.hpp"

namespace ckpt {

namespace {

struct Subset {
  std::int64_t cost = 0;
  std::vector<int> pos;  // positions in the cost order, increasing
  bool operator>(const Subset& o) const {
    if (cost != o.cost) return cost > o.cost;
    return pos > o.pos;
  }
};

// An evaluation whose allocated peak fits the budget.
auto within(std::int64_t budget) {
  return [budget](const Evaluation& e) { return e.peak_bytes <= budget; };
}

}  // namespace

std::optional<PlanPoint> Planner::exact(std::int64_t budget) {
  const auto n = set_.items.size();
  if (static_cast<int>(n) > params_.exact_limit) return std::nullopt;
  std::vector<int> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return set_.items[static_cast<std::size_t>(a)].cost_ns() <
           set_.items[static_cast<std::size_t>(b)].cost_ns();
  });
  auto cost_of = [&](int pos) {
    return set_.items[static_cast<std::size_t>(order[static_cast<std::size_t>(pos)])].cost_ns();
  };
  std::priority_queue<Subset, std::vector<Subset>, std::greater<>> queue;
  queue.push(Subset{});
  std::optional<PlanPoint> best;
  int evaluations = 0;
  while (!queue.empty() && !cancelled()) {
    Subset s = queue.top();
    queue.pop();
    if (best && s.cost > best->eval.cost_ns()) {  // nothing cheaper is left
      best->exact = true;
      return best;
    }
    const int last = s.pos.empty() ? -1 : s.pos.back();
    if (last + 1 < static_cast<int>(n)) {
      Subset grow = s;
      grow.pos.push_back(last + 1);
      grow.cost += cost_of(last + 1);
      queue.push(grow);
      if (last >= 0) {
        Subset shift = s;
        shift.pos.back() = last + 1;
        shift.cost += cost_of(last + 1) - cost_of(last);
        queue.push(std::move(shift));
      }
    }
    std::vector<int> chosen;
    bool valid = true;
    for (int p : s.pos) {
      const int c = order[static_cast<std::size_t>(p)];
      for (int d : chosen)
        valid = valid && compatible(set_.items[static_cast<std::size_t>(c)],
                                    set_.items[static_cast<std::size_t>(d)]);
      chosen.push_back(c);
    }
    if (!valid) continue;
    if (++evaluations > params_.max_evaluations) return std::nullopt;
    PlanPoint p = point(Strategy::optimal, chosen, budget);
    if (p.fits && (!best || p.eval.cost_ns() < best->eval.cost_ns())) best = std::move(p);
  }
  if (best) best->exact = !cancelled();
  return best;
}

PlanPoint Planner::search(std::int64_t budget) {
  // With a policy or offload offered, the plans recomputing whole are searched too: the model's
  // costs of a policy's regions and of an offload's copies are estimates, and offering a choice
  // must never give a costlier answer than not offering it (the cheaper of the two that fits).
  PlanPoint best = search(budget, true);
  const bool twins = std::any_of(set_.items.begin(), set_.items.end(),
                                 [](const Candidate& c) { return c.is_twin(); });
  if (!twins) return best;
  PlanPoint whole = search(budget, false);
  if (whole.fits && (!best.fits || whole.eval.cost_ns() < best.eval.cost_ns())) return whole;
  return best;
}

PlanPoint Planner::search(std::int64_t budget, bool twins) {
  // The peak model's cheapest plan within a target, evaluated; over budget, the target drops by
  // the overshoot (the model's error there) and the program runs again. Once a plan fits after
  // a lowered target, one more try halfway back, in case the overshoot was pessimistic.
  std::int64_t target = budget;
  bool halfway = false;
  std::optional<PlanPoint> best;
  for (int round = 0; round < kVerifyRounds && !cancelled(); ++round) {
    const ChainProposal proposal = propose(target, twins);
    if (!proposal.found) break;
    PlanPoint p = point(Strategy::optimal, proposal.chosen, budget);
    if (p.fits) {
      if (!best || p.eval.cost_ns() < best->eval.cost_ns()) best = p;
      if (halfway || target == budget) break;
      halfway = true;
      target += (budget - target) / 2;
      continue;
    }
    if (!p.eval.ok || halfway) break;  // the halfway try did not fit: keep the one that did
    target -= std::max<std::int64_t>(p.eval.peak_bytes - budget, budget / 200);
  }
  if (best) return *best;
  // Nothing the model proposed fit: the lowest plan, which may.
  PlanPoint p = lowest();
  p.fits = p.eval.peak_bytes <= budget;
  return p;
}

ChainProposal Planner::propose(std::int64_t target, bool twins) {
  // The program charges shared inputs in shares; the peak model's prediction of its plan does
  // not. Until the prediction fits, the program's target drops by the difference.
  const PeakModel& model = peak_model();
  std::int64_t aim = target;
  ChainProposal last;
  for (int round = 0; round < 8; ++round) {
    ChainProposal p = cheapest_within_model(model, aim, twins);
    if (!p.found) return last;
    if (p.predicted <= target) return p;
    aim -= std::max<std::int64_t>(p.predicted - target, target / 400);
    last = std::move(p);
  }
  return last;
}

const PlanPoint* Planner::cheapest_evaluated(
    const std::function<bool(const Evaluation&)>& fits) const {
  const PlanPoint* best = nullptr;
  for (const auto& p : evaluated_)
    if (p.eval.ok && fits(p.eval) && (!best || p.eval.cost_ns() < best->eval.cost_ns())) best = &p;
  return best;
}

PlanPoint adopt_known(const PlanPoint& asked, const PlanPoint& known) {
  PlanPoint p = known;
  p.strategy = asked.strategy;
  p.detail = asked.detail;
  p.fits = true;
  p.exact = false;  // cheaper than what the search proved: not its answer
  p.repaired = false;
  return p;
}

PlanPoint Planner::optimal(std::int64_t budget) {
  PlanPoint p;
  if (auto e = exact(budget)) {
    p = *e;
    p.detail = "exact";
  } else {
    p = search(budget);
    p.detail = "search";
    p.exact = false;
  }
  // Never worse than a plan already evaluated that fits: the evaluations are exact, whichever
  // strategy asked for them.
  p.strategy = Strategy::optimal;
  if (const PlanPoint* known = cheapest_evaluated(within(budget));
      known && (!p.fits || known->eval.cost_ns() < p.eval.cost_ns()))
    p = adopt_known(p, *known);
  return p;
}

std::vector<PlanPoint> Planner::sweep(std::int64_t budget, int steps) {
  std::vector<PlanPoint> points;
  std::set<std::string> seen;
  auto add = [&](PlanPoint p) {
    // Plans that do not run stay in the list (the user sees why), never on the frontier.
    if (seen.insert(p.plan.key() + strategy_name(p.strategy)).second)
      points.push_back(std::move(p));
  };
  for (Strategy s :
       {Strategy::none, Strategy::all, Strategy::every_k, Strategy::sqrt, Strategy::uniform})
    add(fixed(s));
  const std::int64_t top = ev_.baseline().peak_bytes;
  const std::int64_t low = lowest().eval.peak_bytes;
  std::vector<std::int64_t> budgets;
  for (int k = 1; k < steps && !cancelled(); ++k) {
    const auto b = top - (top - low) * k / steps;
    budgets.push_back(b);
    optimal(b);  // its evaluations help the budgets after it
  }
  for (Strategy s : {Strategy::greedy, Strategy::knapsack}) add(plan(s, budget));
  // Optimal last: every budget's search first, then each answer the cheapest of every plan
  // evaluated by then (no dry run after that point), so that no plan shown beats one marked
  // optimal at its budget, and a larger budget never gets a costlier plan.
  budgets.insert(budgets.begin(), budget);
  std::vector<PlanPoint> answers;
  for (std::int64_t b : budgets) answers.push_back(optimal(b));
  for (std::size_t i = 0; i < budgets.size(); ++i) {
    PlanPoint& p = answers[i];
    if (const PlanPoint* known = cheapest_evaluated(within(budgets[i]));
        known && (!p.fits || known->eval.cost_ns() < p.eval.cost_ns())) {
      PlanPoint asked = p;
      asked.strategy = Strategy::optimal;
      p = adopt_known(asked, *known);
    }
    if (i > 0)
      p.detail =
          "budget " + std::to_string(100 * budgets[i] / std::max<std::int64_t>(1, top)) + "%";
  }
  add(answers.front());
  add(lowest());
  std::set<std::string> shown;
  for (const auto& p : points) shown.insert(p.plan.key());
  for (std::size_t i = 1; i < answers.size(); ++i)
    if (answers[i].fits && shown.insert(answers[i].plan.key()).second)  // a plan once
      add(std::move(answers[i]));
  return points;
}

}  // namespace ckpt
