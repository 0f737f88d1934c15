#include "engine/plan/chain_dp.hpp"

#include <algorithm>
#include <limits>
#include <optional>

namespace ckpt {

namespace {

constexpr std::int64_t kInf = std::numeric_limits<std::int64_t>::max() / 4;
constexpr int kGap = -1, kUnreached = -2;

// The program's grid: positions by buckets of bytes saved so far.
struct Grid {
  int positions = 0;
  int buckets = 0;
  std::int64_t unit = 1;
  std::vector<int> weight;               // per candidate: its net saving in buckets (rounded down)
  std::vector<std::vector<int>> starts;  // per position: the candidates that start there
  std::vector<int> end;                  // per candidate: its end position
};

Grid make_grid(const PeakModel& m, bool twins = true) {
  const auto& set = m.candidates();
  Grid g;
  g.positions = static_cast<int>(m.positions().size());
  g.starts.resize(static_cast<std::size_t>(g.positions));
  g.end.assign(set.items.size(), -1);
  // The most any disjoint plan saves: a longest path over the same positions.
  std::vector<std::int64_t> most(static_cast<std::size_t>(g.positions), 0);
  for (std::size_t c = 0; c < set.items.size(); ++c) {
    if (m.net_saving(static_cast<int>(c)) <= 0) continue;  // costs recompute, saves nothing
    if (set.items[c].cuts_gradients) continue;             // would not train
    if (set.items[c].is_twin() && !twins) continue;
    const int a = m.position_of(set.items[c].first_op);
    g.end[c] = m.position_of(set.items[c].end_op);
    g.starts[static_cast<std::size_t>(a)].push_back(static_cast<int>(c));
  }
  for (int p = 0; p + 1 < g.positions; ++p) {
    auto& next = most[static_cast<std::size_t>(p + 1)];
    next = std::max(next, most[static_cast<std::size_t>(p)]);
    for (int c : g.starts[static_cast<std::size_t>(p)]) {
      auto& to = most[static_cast<std::size_t>(g.end[static_cast<std::size_t>(c)])];
      to = std::max(to, most[static_cast<std::size_t>(p)] + m.net_saving(c));
    }
  }
  const std::int64_t bound = std::max<std::int64_t>(1, most.back());
  // Finer on long chains, where each candidate is a small share of the whole; a bounded grid.
  g.buckets = std::clamp(2 * g.positions, 512, 2048);
  g.buckets = std::max(64, std::min(g.buckets, 4'000'000 / std::max(1, g.positions)));
  g.unit = std::max<std::int64_t>(1, (bound + g.buckets - 1) / g.buckets);
  g.buckets = static_cast<int>(bound / g.unit) + 1;
  g.weight.assign(set.items.size(), 0);
  for (std::size_t c = 0; c < set.items.size(); ++c)
    g.weight[c] = static_cast<int>(m.net_saving(static_cast<int>(c)) / g.unit);
  return g;
}

// One run of the program: `value(p, b)` is the best (lexicographically smallest) pair reaching
// position p with b buckets saved; `step` combines a value with a step's peak and cost.
// Minimising cost under a budget: (cost, 0), steps over budget not taken. Minimising the peak:
// (peak so far, cost).
struct Value {
  std::int64_t first = kInf, second = kInf;
  bool operator<(const Value& o) const {
    return first != o.first ? first < o.first : second < o.second;
  }
};

template <typename Step>
ChainProposal solve(const PeakModel& m, const Grid& g, Step step) {
  const auto& set = m.candidates();
  const auto cells = static_cast<std::size_t>(g.positions) * static_cast<std::size_t>(g.buckets);
  std::vector<int> from(cells, kUnreached);
  // Rows are made when first reached and dropped once their position is done.
  std::vector<std::vector<Value>> rows(static_cast<std::size_t>(g.positions));
  auto row = [&](int p) -> std::vector<Value>& {
    auto& r = rows[static_cast<std::size_t>(p)];
    if (r.empty()) r.assign(static_cast<std::size_t>(g.buckets), Value{});
    return r;
  };
  auto cell = [&](int p, int b) {
    return static_cast<std::size_t>(p) * static_cast<std::size_t>(g.buckets) +
           static_cast<std::size_t>(b);
  };
  row(0)[0] = Value{0, 0};
  from[cell(0, 0)] = kGap;
  for (int p = 0; p + 1 < g.positions; ++p) {
    auto& here = row(p);
    const std::int64_t gap_peak = m.span_peak(p, p + 1);
    for (int b = 0; b < g.buckets; ++b) {
      const Value v = here[static_cast<std::size_t>(b)];
      if (v.first >= kInf) continue;
      const std::int64_t saved = static_cast<std::int64_t>(b) * g.unit;
      auto relax = [&](int q, int nb, const Value& nv, int how) {
        auto& slot = row(q)[static_cast<std::size_t>(nb)];
        if (nv < slot) {
          slot = nv;
          from[cell(q, nb)] = how;
        }
      };
      if (auto nv = step(v, gap_peak - saved, 0)) relax(p + 1, b, *nv, kGap);
      for (int c : g.starts[static_cast<std::size_t>(p)]) {
        const auto nv =
            step(v, m.need(c) - saved, set.items[static_cast<std::size_t>(c)].cost_ns());
        if (nv)
          relax(g.end[static_cast<std::size_t>(c)], b + g.weight[static_cast<std::size_t>(c)], *nv,
                c);
      }
    }
    std::vector<Value>().swap(rows[static_cast<std::size_t>(p)]);
  }
  const int last = g.positions - 1;
  const auto& end = row(last);
  int best = -1;
  for (int b = 0; b < g.buckets; ++b)
    if (end[static_cast<std::size_t>(b)].first < kInf &&
        (best < 0 || end[static_cast<std::size_t>(b)] < end[static_cast<std::size_t>(best)]))
      best = b;
  ChainProposal out;
  if (best < 0) return out;
  out.found = true;
  for (int p = last, b = best; p > 0;) {
    const int how = from[cell(p, b)];
    if (how == kGap) {
      --p;
      continue;
    }
    out.chosen.push_back(how);
    out.recompute_ns += set.items[static_cast<std::size_t>(how)].cost_ns();
    b -= g.weight[static_cast<std::size_t>(how)];
    p = m.position_of(set.items[static_cast<std::size_t>(how)].first_op);
  }
  std::sort(out.chosen.begin(), out.chosen.end());
  out.predicted = m.predict(out.chosen);
  return out;
}

}  // namespace

ChainProposal cheapest_within_model(const PeakModel& m, std::int64_t budget, bool twins) {
  const Grid g = make_grid(m, twins);
  return solve(m, g, [budget](const Value& v, std::int64_t peak, std::int64_t cost) {
    return peak <= budget ? std::optional<Value>(Value{v.first + cost, 0}) : std::nullopt;
  });
}

ChainProposal lowest_in_model(const PeakModel& m, bool twins) {
  const Grid g = make_grid(m, twins);
  return solve(m, g, [](const Value& v, std::int64_t peak, std::int64_t cost) {
    return std::optional<Value>(Value{std::max(v.first, peak), v.second + cost});
  });
}

}  // namespace ckpt
