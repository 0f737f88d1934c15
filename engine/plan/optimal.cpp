// Planner::optimal: the least recompute whose evaluated peak fits the budget.
//
// Exact search: subsets of the candidates in increasing order of their cost-model recompute
// time (each recomputed op costs what its forward measured, so a plan's recompute is the sum of
// its candidates': nested checkpoints recompute their ops once more per level, which is what
// the evaluator counts too). The first subset whose evaluated peak fits is the optimum; no
// cheaper subset is skipped. For candidate sets too large for that (or when it runs out of
// evaluations), a knapsack over the blocks with the recompute of the largest checkpointed block
// as the backward's extra (as Rotor's chains have), then evaluated repairs and prunes.

#include <algorithm>
#include <cmath>
#include <queue>
#include <set>

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

}  // namespace

std::optional<PlanPoint> Planner::exact(std::int64_t budget) {
  const auto n = set_.items.size();
  if (static_cast<int>(n) > params_.exact_limit) return std::nullopt;
  std::vector<int> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return set_.items[static_cast<std::size_t>(a)].recompute_ns <
           set_.items[static_cast<std::size_t>(b)].recompute_ns;
  });
  auto cost_of = [&](int pos) {
    return set_.items[static_cast<std::size_t>(order[static_cast<std::size_t>(pos)])].recompute_ns;
  };
  std::priority_queue<Subset, std::vector<Subset>, std::greater<>> queue;
  queue.push(Subset{});
  std::optional<PlanPoint> best;
  int evaluations = 0;
  while (!queue.empty() && !cancelled()) {
    Subset s = queue.top();
    queue.pop();
    if (best && s.cost > best->eval.recompute_ns) {  // nothing cheaper is left
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
    if (p.fits && (!best || p.eval.recompute_ns < best->eval.recompute_ns)) best = std::move(p);
  }
  if (best) best->exact = !cancelled();
  return best;
}

PlanPoint Planner::chain_dp(std::int64_t budget) {
  // Peak model of a chain: plain peak - bytes the checkpointed blocks free + the largest
  // checkpointed block's activations, recomputed in backward. Try each largest block in turn.
  const std::int64_t plain = ev_.baseline().peak_bytes;
  std::set<std::int64_t> caps;
  for (int i : set_.blocks) caps.insert(set_.items[static_cast<std::size_t>(i)].kept_bytes);
  std::vector<std::int64_t> levels(caps.begin(), caps.end());
  if (levels.size() > 24) {  // quantiles: the DP stays fast on 1,000 blocks
    std::vector<std::int64_t> q;
    for (int k = 1; k <= 24; ++k)
      q.push_back(levels[levels.size() * static_cast<std::size_t>(k) / 24 - 1]);
    levels = q;
  }
  std::vector<int> best;
  std::int64_t best_cost = -1;
  for (std::int64_t cap : levels) {
    std::vector<int> pool;
    for (int i : set_.blocks)
      if (set_.items[static_cast<std::size_t>(i)].kept_bytes <= cap) pool.push_back(i);
    const std::int64_t need = plain - budget + cap;
    std::int64_t avail = 0;
    for (int i : pool) avail += set_.items[static_cast<std::size_t>(i)].saving();
    if (avail < need) continue;
    auto chosen = min_cost_cover(set_, pool, need);
    std::int64_t cost = 0;
    for (int i : chosen) cost += set_.items[static_cast<std::size_t>(i)].recompute_ns;
    if (best_cost < 0 || cost < best_cost) {
      best = chosen;
      best_cost = cost;
    }
  }
  if (best_cost < 0) best = set_.blocks;  // the model says nothing fits: start from all
  PlanPoint p = point(Strategy::optimal, best, budget);
  if (!p.fits && p.eval.ok) repair(p, budget);
  if (!p.fits) {  // from the lowest plan: cheaper from there if it fits, else the closest
    p = lowest();
    p.fits = p.eval.peak_bytes <= budget;
  }
  if (p.fits) prune(p, budget);
  return p;
}

PlanPoint Planner::optimal(std::int64_t budget) {
  if (auto e = exact(budget)) {
    e->detail = "exact";
    return *e;
  }
  PlanPoint p = chain_dp(budget);
  p.strategy = Strategy::optimal;
  p.detail = "search";
  p.exact = false;
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
  for (Strategy s : {Strategy::greedy, Strategy::knapsack, Strategy::optimal}) add(plan(s, budget));
  const std::int64_t top = ev_.baseline().peak_bytes;
  const std::int64_t low = lowest().eval.peak_bytes;
  add(lowest());
  for (int k = 1; k < steps && !cancelled(); ++k) {
    const auto b = top - (top - low) * k / steps;
    PlanPoint p = optimal(b);
    p.detail = "budget " + std::to_string(100 * b / std::max<std::int64_t>(1, top)) + "%";
    if (p.fits) add(std::move(p));
  }
  return points;
}

}  // namespace ckpt
