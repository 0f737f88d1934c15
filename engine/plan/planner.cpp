#include "engine/plan/planner.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <stdexcept>

#include "engine/model/module_range.hpp"
#include "engine/plan/chain_dp.hpp"
#include "engine/report/figures.hpp"
#include "engine/report/run_summary.hpp"

namespace ckpt {

std::int64_t parse_budget(const std::string& text, std::int64_t plain_peak) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = text.substr(used);
  const std::map<std::string, double> units{
      {"", 1},          {"B", 1},    {"KiB", 1024.0}, {"MiB", 1024.0 * 1024},
      {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6},     {"GB", 1e9},
      {"%", -1}};
  auto it = units.find(unit);
  if (used == 0 || it == units.end() || !(value > 0) || !std::isfinite(value))
    throw std::invalid_argument("budget '" + text +
                                "': expected a positive size such as 2GiB, 300MiB, 1.5GB or "
                                "123456 (bytes), or a share of the unplanned peak such as 60%");
  const double bytes =
      it->second < 0 ? value / 100.0 * static_cast<double>(plain_peak) : value * it->second;
  if (bytes > 9e18) throw std::invalid_argument("budget '" + text + "': more bytes than exist");
  return static_cast<std::int64_t>(std::floor(bytes));
}

Planner::Planner(const PlanEvaluator& evaluator, CandidateOptions options, StrategyParams params,
                 const std::atomic<bool>* cancel)
    : ev_(evaluator), set_(find_candidates(evaluator, options)), params_(params), cancel_(cancel) {}

PlanPoint Planner::point(Strategy s, std::vector<int> chosen, std::int64_t budget) {
  std::sort(chosen.begin(), chosen.end());
  chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
  PlanPoint p;
  p.strategy = s;
  p.chosen = std::move(chosen);
  p.plan = plan_config(set_, p.chosen);
  p.eval = ev_.evaluate(p.plan);
  p.fits = p.eval.ok && p.eval.peak_bytes <= budget;
  // The lowest peak, the cheapest of equal ones.
  if (p.eval.ok && (!lowest_ || p.eval.peak_bytes < lowest_->eval.peak_bytes ||
                    (p.eval.peak_bytes == lowest_->eval.peak_bytes &&
                     p.eval.cost_ns() < lowest_->eval.cost_ns())))
    lowest_ = p;
  if (p.eval.ok) evaluated_.push_back(p);
  return p;
}

const PeakModel& Planner::peak_model() {
  if (!model_ || model_items_ != set_.items.size()) {
    model_ = std::make_unique<PeakModel>(ev_, set_);
    model_items_ = set_.items.size();
  }
  return *model_;
}

PlanPoint Planner::fixed(Strategy s) {
  // Under an offered policy the fixed strategies give it to every region they choose (as
  // torchtitan's selective checkpointing does to every block).
  const std::size_t before = set_.items.size();
  std::vector<int> chosen = fixed_plan(s, set_, params_);
  add_policy_twins(ev_, set_, before);
  for (int& c : chosen)
    if (const Candidate& x = set_.items[static_cast<std::size_t>(c)]; !x.with_policy && x.twin >= 0)
      c = x.twin;
  PlanPoint p = point(s, std::move(chosen), INT64_MAX);
  if (s == Strategy::every_k) p.detail = "k=" + std::to_string(params_.k);
  if (s == Strategy::uniform) p.detail = "n=" + std::to_string(params_.n);
  return p;
}

namespace {

bool usable(const CandidateSet& set, const std::vector<int>& chosen, int extra) {
  if (set.items[static_cast<std::size_t>(extra)].cuts_gradients) return false;
  if (std::find(chosen.begin(), chosen.end(), extra) != chosen.end()) return false;
  for (int c : chosen)
    if (!compatible(set.items[static_cast<std::size_t>(c)],
                    set.items[static_cast<std::size_t>(extra)]))
      return false;
  return true;
}

// Bytes saved per nanosecond of recompute, the best first.
std::vector<int> by_ratio(const CandidateSet& set, std::vector<int> pool) {
  auto ratio = [&](int i) {
    const Candidate& c = set.items[static_cast<std::size_t>(i)];
    return static_cast<double>(c.saving()) /
           static_cast<double>(std::max<std::int64_t>(1, c.cost_ns()));
  };
  std::stable_sort(pool.begin(), pool.end(), [&](int a, int b) { return ratio(a) > ratio(b); });
  return pool;
}

}  // namespace

std::vector<int> Planner::add_by_model(std::vector<int> chosen, std::int64_t target, bool twins) {
  const PeakModel& model = peak_model();
  std::int64_t predicted = model.predict(chosen);
  // A candidate must buy a visible drop (half a percent of the plain peak): nested ranges each
  // shaving a few bytes off the model's peak would otherwise pile up recompute for nothing.
  const std::int64_t worth = model.plain_peak() / 200;
  std::vector<int> all(set_.items.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  for (int c : by_ratio(set_, all)) {
    if (predicted <= target) break;
    if (!usable(set_, chosen, c)) continue;
    if (!twins && set_.items[static_cast<std::size_t>(c)].is_twin()) continue;
    chosen.push_back(c);
    const std::int64_t q = model.predict(chosen);
    if (q < predicted - worth) {
      predicted = q;
    } else {
      chosen.pop_back();
    }
  }
  return chosen;
}

void Planner::repair(PlanPoint& p, std::int64_t budget) {
  // Candidates added while the peak model says the peak drops, until it predicts the budget;
  // then a dry run. The model's error on this plan tightens the next target.
  std::int64_t target = budget;
  for (int round = 0; round < kVerifyRounds && !p.fits && !cancelled(); ++round) {
    const auto chosen = add_by_model(p.chosen, target);
    if (chosen.size() == p.chosen.size()) break;  // the model sees nothing more to add
    PlanPoint q = point(p.strategy, chosen, budget);
    if (!q.eval.ok) break;
    target -= std::max<std::int64_t>(q.eval.peak_bytes - budget, budget / 200);
    if (q.eval.peak_bytes >= p.eval.peak_bytes) continue;
    q.detail = p.detail;
    q.repaired = true;
    p = std::move(q);
  }
}

PlanPoint Planner::greedy(std::int64_t budget) {
  // Candidates by bytes saved per nanosecond of recompute, each one kept if the peak model
  // says the peak drops, until it predicts the budget; the plan is then evaluated, and added
  // to (by the same rule) while its evaluated peak is over.
  PlanPoint p = point(Strategy::greedy, add_by_model({}, budget), budget);
  if (!p.fits && p.eval.ok) {
    const bool was = p.repaired;
    repair(p, budget);
    p.repaired = was;
  }
  return p;
}

PlanPoint Planner::knapsack(std::int64_t budget) {
  // torch.compile's activation_memory_budget: the share of the plain run's saved bytes that
  // may stay saved; the knapsack picks the blocks to recompute.
  const Evaluation& b = ev_.baseline();
  const double saved = static_cast<double>(std::max<std::int64_t>(1, b.saved_bytes));
  double fraction =
      std::clamp(static_cast<double>(budget - (b.peak_bytes - b.saved_bytes)) / saved, 0.0, 1.0);
  std::int64_t kept_total = 0;
  for (int i : set_.blocks) kept_total += set_.items[static_cast<std::size_t>(i)].kept_bytes;
  PlanPoint p;
  std::int64_t extra = 0;
  for (int attempt = 0; attempt < 4; ++attempt) {
    const auto need =
        static_cast<std::int64_t>(static_cast<double>(kept_total) * (1.0 - fraction)) + extra;
    p = point(Strategy::knapsack, min_cost_cover(set_, set_.blocks, need), budget);
    char buf[48];
    std::snprintf(buf, sizeof buf, "activation_memory_budget=%.2f", fraction);
    p.detail = buf;
    if (p.fits || !p.eval.ok) break;
    extra += p.eval.peak_bytes - budget;  // over by this much: ask the cover for it too
  }
  return p;
}

PlanPoint Planner::plan(Strategy s, std::int64_t budget) {
  PlanPoint p;
  switch (s) {
    case Strategy::greedy:
      p = greedy(budget);
      break;
    case Strategy::knapsack:
      p = knapsack(budget);
      break;
    case Strategy::optimal:
      p = optimal(budget);
      break;
    default:
      p = fixed(s);
      p.fits = p.eval.ok && p.eval.peak_bytes <= budget;
  }
  if (!p.fits && p.eval.ok && s != Strategy::optimal) repair(p, budget);
  if (!p.eval.ok) {
    p.note = "the plan of " + std::string(strategy_name(s)) + " does not run: " + p.eval.error;
  } else if (!p.fits) {
    const PlanPoint& low = lowest();
    p.note = "no plan of " + std::string(strategy_name(s)) + " fits " + format_bytes(budget) +
             "; the lowest peak reached is " + format_bytes(low.eval.peak_bytes) + ", by " +
             plan_text(low);
  }
  return p;
}

const PlanPoint& Planner::lowest() {
  if (descended_) return *lowest_;
  descended_ = true;
  point(Strategy::optimal, {}, INT64_MAX);
  if (static_cast<int>(set_.items.size()) <= params_.exact_limit) {
    // Few candidates: a descent by evaluated peak, adding the candidate that lowers it most.
    PlanPoint cur = *lowest_;
    for (bool improved = true; improved && !cancelled();) {
      improved = false;
      PlanPoint best = cur;
      for (std::size_t c = 0; c < set_.items.size(); ++c) {
        if (!usable(set_, cur.chosen, static_cast<int>(c))) continue;
        auto chosen = cur.chosen;
        chosen.push_back(static_cast<int>(c));
        PlanPoint q = point(Strategy::optimal, chosen, INT64_MAX);
        if (q.eval.ok && q.eval.peak_bytes < best.eval.peak_bytes) best = std::move(q);
      }
      if (best.eval.peak_bytes < cur.eval.peak_bytes) {
        cur = std::move(best);
        improved = true;
      }
    }
  } else {
    // The peak model's lowest plan of disjoint candidates, then nested ones added while the
    // model says the peak drops: each evaluated, the lowest evaluated peak wins. Regions
    // recomputed whole only: a policy keeps more, and the model's ties would hide it (offload
    // twins are left out too: the plans they make are searched at each budget).
    const ChainProposal low = lowest_in_model(peak_model(), false);
    if (low.found && !cancelled()) {
      point(Strategy::optimal, low.chosen, INT64_MAX);
      const auto deeper = add_by_model(low.chosen, 0, false);
      if (deeper != low.chosen && !cancelled()) point(Strategy::optimal, deeper, INT64_MAX);
    }
  }
  lowest_->strategy = Strategy::optimal;
  lowest_->detail = "lowest peak";
  return *lowest_;
}

bool dominates(const PlanPoint& a, const PlanPoint& b) {
  if (!a.eval.ok || !b.eval.ok) return false;
  return a.eval.peak_bytes <= b.eval.peak_bytes && a.eval.cost_ns() <= b.eval.cost_ns() &&
         (a.eval.peak_bytes < b.eval.peak_bytes || a.eval.cost_ns() < b.eval.cost_ns());
}

std::vector<PlanPoint> pareto_frontier(const std::vector<PlanPoint>& points) {
  std::vector<PlanPoint> out;
  for (const auto& p : points) {
    if (!p.eval.ok) continue;
    bool beaten = false;
    for (const auto& q : points)
      if (q.eval.ok && dominates(q, p)) beaten = true;
    for (const auto& q : out)  // equal figures: one point
      if (q.eval.peak_bytes == p.eval.peak_bytes && q.eval.cost_ns() == p.eval.cost_ns())
        beaten = true;
    if (!beaten) out.push_back(p);
  }
  std::sort(out.begin(), out.end(), [](const PlanPoint& a, const PlanPoint& b) {
    return a.eval.peak_bytes < b.eval.peak_bytes;
  });
  return out;
}

std::string plan_text(const PlanPoint& p) {
  // A region under a per-op policy: "h.3 [save:mm]".
  auto region = [&](const std::string& label) {
    const SelectivePolicy& own = p.plan.policy_for(label);
    return own.empty() ? label : label + " [" + own.spelling() + "]";
  };
  std::string s;
  for (const auto& m : p.plan.modules) s += (s.empty() ? "" : ", ") + region(m);
  for (const auto& [a, b] : p.plan.ranges) s += (s.empty() ? "" : ", ") + region(range_label(a, b));
  // An offloaded module: "h.5 [offload]".
  for (const auto& m : p.plan.offload) s += (s.empty() ? "" : ", ") + m + " [offload]";
  return s.empty() ? "(nothing)" : s;
}

}  // namespace ckpt

namespace ckpt {

int cheapest_within(const std::vector<PlanPoint>& front, std::int64_t budget) {
  int best = -1;
  for (std::size_t i = 0; i < front.size(); ++i) {
    const auto& p = front[i];
    if (!p.eval.ok || p.eval.peak_bytes > budget) continue;
    if (best < 0 || p.eval.cost_ns() < front[static_cast<std::size_t>(best)].eval.cost_ns())
      best = static_cast<int>(i);
  }
  return best;
}

std::int64_t allocated_budget_for_gpu(const PlanEvaluator& ev, std::int64_t card) {
  const Evaluation& plain = ev.baseline();
  const std::int64_t slack = std::max<std::int64_t>(0, plain.reserved_peak - plain.peak_bytes);
  return std::max<std::int64_t>(1, card - kCudaContextBytes - slack);
}

GpuPlan plan_for_gpu(Planner& planner, Strategy s, std::int64_t card) {
  GpuPlan g;
  g.card = card;
  g.context = kCudaContextBytes;
  g.allocated_budget = allocated_budget_for_gpu(planner.evaluator(), card);
  // A few rounds: the reserved slack of a plan is near the plain run's, and each round takes off
  // what the last one was over by (and a segment's 2 MiB granule more).
  for (int round = 0; round < 10; ++round) {
    ++g.rounds;
    g.point = planner.plan(s, g.allocated_budget);
    const std::int64_t over = g.total() - card;
    if (!g.point.eval.ok || over <= 0 || !g.point.fits) break;
    g.allocated_budget -= over + (std::int64_t{2} << 20);
    if (g.allocated_budget <= 0) break;
  }
  const auto on_the_card = [&](const Evaluation& e) { return e.reserved_peak + g.context <= card; };
  // Optimal is never worse than a plan already evaluated (each by its dry run) that fits the
  // card; the other strategies keep their own plan.
  if (s == Strategy::optimal)
    if (const PlanPoint* known = planner.cheapest_evaluated(on_the_card);
        known && (!g.point.eval.ok || !on_the_card(g.point.eval) ||
                  known->eval.cost_ns() < g.point.eval.cost_ns()))
      g.point = adopt_known(g.point, *known);
  const bool on_card = g.point.eval.ok && on_the_card(g.point.eval);
  if (on_card) {
    g.point.fits = true;
    g.point.note.clear();  // a note on the allocated budget: the card's is the one asked
  } else if (g.point.fits) {
    g.point.note = "the allocated peak fits, but reserved memory plus the CUDA context (" +
                   std::to_string(g.total()) + " bytes) exceeds the card's " + std::to_string(card);
  }
  g.point.fits = on_card;
  return g;
}

}  // namespace ckpt
