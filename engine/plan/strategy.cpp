#include "engine/plan/strategy.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "engine/model/module_range.hpp"

namespace ckpt {

const char* strategy_name(Strategy s) {
  switch (s) {
    case Strategy::none:
      return "none";
    case Strategy::all:
      return "all";
    case Strategy::every_k:
      return "every-k";
    case Strategy::sqrt:
      return "sqrt";
    case Strategy::uniform:
      return "uniform-n";
    case Strategy::greedy:
      return "greedy";
    case Strategy::knapsack:
      return "knapsack";
    case Strategy::optimal:
      return "optimal";
  }
  return "?";
}

Strategy strategy_from_name(const std::string& name) {
  std::string all;
  for (Strategy s : kStrategies) {
    if (name == strategy_name(s)) return s;
    all += (all.empty() ? "" : ", ") + std::string(strategy_name(s));
  }
  throw std::invalid_argument("no strategy '" + name + "'; the strategies are " + all);
}

namespace {

// The candidate for blocks [i, j] of the chain: the block itself, or the range.
int segment(CandidateSet& set, std::size_t i, std::size_t j) {
  const Candidate& a = set.items[static_cast<std::size_t>(set.blocks[i])];
  if (i == j) return set.blocks[i];
  const Candidate& b = set.items[static_cast<std::size_t>(set.blocks[j])];
  const std::string label = range_label(a.first, b.last);
  for (std::size_t x = 0; x < set.items.size(); ++x)
    if (set.items[x].label == label) return static_cast<int>(x);
  Candidate c;
  c.label = label;
  c.is_range = true;
  c.first = a.first;
  c.last = b.last;
  c.first_op = a.first_op;
  c.end_op = b.end_op;
  for (std::size_t x = i; x <= j; ++x) {
    const Candidate& m = set.items[static_cast<std::size_t>(set.blocks[x])];
    c.kept_bytes += m.kept_bytes;
    c.recompute_ns += m.recompute_ns;
    c.recompute_ops += m.recompute_ops;
    c.batchnorm = c.batchnorm || m.batchnorm;
  }
  c.input_bytes = a.input_bytes;  // an estimate: the first block's inputs
  c.inputs = a.inputs;
  c.output_bytes = b.output_bytes;
  c.rng_bytes = a.rng_bytes;
  set.items.push_back(std::move(c));
  return static_cast<int>(set.items.size()) - 1;
}

}  // namespace

std::vector<int> fixed_plan(Strategy s, CandidateSet& set, const StrategyParams& p) {
  const std::size_t n = set.blocks.size();
  std::vector<int> out;
  switch (s) {
    case Strategy::none:
      break;
    case Strategy::all:
      out = set.blocks;
      break;
    case Strategy::every_k:
      if (p.k < 1) throw std::invalid_argument("every-k: k must be at least 1");
      for (std::size_t i = 0; i < n; i += static_cast<std::size_t>(p.k))
        out.push_back(set.blocks[i]);
      break;
    case Strategy::sqrt: {
      if (n == 0) break;
      const auto segs = static_cast<std::size_t>(std::ceil(std::sqrt(static_cast<double>(n))));
      const std::size_t size = (n + segs - 1) / segs;
      for (std::size_t i = 0; i + size < n; i += size)  // the last segment runs plainly
        out.push_back(segment(set, i, i + size - 1));
      break;
    }
    case Strategy::uniform:
      if (p.n < 1) throw std::invalid_argument("uniform-n: n must be at least 1");
      for (std::size_t i = 0; i < n; i += static_cast<std::size_t>(p.n))
        out.push_back(segment(set, i, std::min(n, i + static_cast<std::size_t>(p.n)) - 1));
      break;
    default:
      throw std::invalid_argument(std::string("strategy ") + strategy_name(s) + " needs a budget");
  }
  return out;
}

std::vector<int> min_cost_cover(const CandidateSet& set, const std::vector<int>& pool,
                                std::int64_t need, int buckets) {
  if (need <= 0) return {};
  const double unit = static_cast<double>(need) / buckets;
  constexpr auto kInf = std::numeric_limits<std::int64_t>::max() / 4;
  const auto width = static_cast<std::size_t>(buckets) + 1;
  // best[b]: least cost reaching at least b buckets of saving; choice bits per item and bucket.
  std::vector<std::int64_t> best(width, kInf);
  std::vector<std::vector<bool>> took(pool.size(), std::vector<bool>(width, false));
  best[0] = 0;
  for (std::size_t i = 0; i < pool.size(); ++i) {
    const Candidate& c = set.items[static_cast<std::size_t>(pool[i])];
    // Floor: the cover never counts more than a candidate saves, so it never falls short.
    const auto w = static_cast<std::size_t>(std::floor(static_cast<double>(c.saving()) / unit));
    if (w == 0) continue;
    for (std::size_t b = width; b-- > 0;) {
      const std::size_t from = b > w ? b - w : 0;
      if (best[from] == kInf || best[from] + c.cost_ns() >= best[b]) continue;
      // Saturating: every b' above `from + w` is reached too, handled as b == width - 1.
      best[b] = best[from] + c.cost_ns();
      took[i][b] = true;
    }
  }
  if (best[width - 1] == kInf) return {};
  std::vector<int> out;
  std::size_t b = width - 1;
  for (std::size_t i = pool.size(); i-- > 0 && b > 0;) {
    if (!took[i][b]) continue;
    out.push_back(pool[i]);
    const Candidate& c = set.items[static_cast<std::size_t>(pool[i])];
    const auto w = static_cast<std::size_t>(std::floor(static_cast<double>(c.saving()) / unit));
    b = b > w ? b - w : 0;
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace ckpt
