#include "engine/plan/peak_model.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <stdexcept>
#include <unordered_map>

namespace ckpt {

namespace {

constexpr std::int64_t kNone = PeakModel::kNone;
constexpr std::int64_t kNever = PeakModel::kNever;

// A sparse table over `level0`: table[j][i] combines level0[i .. i + 2^j).
template <typename Combine>
std::vector<std::vector<std::int64_t>> sparse(std::vector<std::int64_t> level0, Combine combine) {
  std::vector<std::vector<std::int64_t>> t;
  t.push_back(std::move(level0));
  for (std::size_t w = 1; 2 * w <= t[0].size(); w *= 2) {
    const auto& prev = t.back();
    std::vector<std::int64_t> next(prev.size() - w);
    for (std::size_t i = 0; i < next.size(); ++i) next[i] = combine(prev[i], prev[i + w]);
    t.push_back(std::move(next));
  }
  return t;
}

int floor_log2(int n) {
  int l = 0;
  while ((2 << l) <= n) ++l;
  return l;
}

}  // namespace

PeakModel::PeakModel(const PlanEvaluator& ev, const CandidateSet& set) : set_(set) {
  const Model& model = ev.model();
  const Trace& trace = ev.plain_run().trace;
  const auto n_ops = static_cast<std::int64_t>(model.ops.size());
  std::unordered_map<std::string, std::int64_t> index;
  for (std::int64_t k = 0; k < n_ops; ++k)
    index.emplace(model.ops[static_cast<std::size_t>(k)].name, k);
  // Per op (the loss and every step of no model op: one op past the last).
  const auto slots = static_cast<std::size_t>(n_ops + 1);
  std::vector<std::int64_t> fwd(slots, kNone), bwd(slots, kNone), before(slots, kNone),
      first_bwd(slots, kNever), saved(slots, 0);
  const std::int64_t steps = trace.step_count();
  total_after_.resize(static_cast<std::size_t>(steps));
  std::int64_t live = trace.total_at(-1);
  for (std::int64_t k = 0; k < steps; ++k) {
    // The highest total within the step: an op's outputs are made before its inputs go.
    std::int64_t high = live;
    for (auto e = trace.first_event(k); e < trace.first_event(k + 1); ++e) {
      const TraceEvent ev_k = trace.event(e);
      if (ev_k.kind == TraceEventKind::alloc) live += ev_k.bytes;
      if (ev_k.kind == TraceEventKind::free) live -= ev_k.bytes;
      high = std::max(high, live);
    }
    const auto it = index.find(trace.step_node(k));
    const auto op = static_cast<std::size_t>(it == index.end() ? n_ops : it->second);
    if (trace.step_phase(k) == Phase::forward) {
      if (before[op] == kNone)
        before[op] = k > 0 ? total_after_[static_cast<std::size_t>(k - 1)] : trace.total_at(-1);
      fwd[op] = std::max(fwd[op], high);
    } else {
      bwd[op] = std::max(bwd[op], high);
      first_bwd[op] = std::min(first_bwd[op], k);
    }
    plain_peak_ = std::max(plain_peak_, high);
    total_after_[static_cast<std::size_t>(k)] = live;
  }
  for (std::int64_t k = 0; k < n_ops; ++k)
    if (auto it = ev.saved_by_node().find(model.ops[static_cast<std::size_t>(k)].name);
        it != ev.saved_by_node().end())
      saved[static_cast<std::size_t>(k)] = it->second;
  std::vector<std::int64_t> saved_prefix(slots + 1, 0);
  for (std::size_t k = 0; k < slots; ++k) saved_prefix[k + 1] = saved_prefix[k] + saved[k];

  // Positions: every boundary a candidate can have, plus the model's ends and the loss.
  pos_ = {0, n_ops, n_ops + 1};
  for (const Candidate& c : set.items) {
    pos_.push_back(c.first_op);
    pos_.push_back(c.end_op);
  }
  std::sort(pos_.begin(), pos_.end());
  pos_.erase(std::unique(pos_.begin(), pos_.end()), pos_.end());
  const std::size_t spans = pos_.size() - 1;
  std::vector<std::int64_t> f(spans, kNone), b(spans, kNone), fl(spans, kNone), fb(spans, kNever);
  fwd_before_.assign(spans, 0);
  saved_before_.assign(pos_.size(), 0);
  std::int64_t last_before = trace.total_at(-1);
  for (std::size_t i = 0; i < spans; ++i) {
    bool seen = false;
    for (auto k = static_cast<std::size_t>(pos_[i]); k < static_cast<std::size_t>(pos_[i + 1]);
         ++k) {
      f[i] = std::max(f[i], fwd[k]);
      b[i] = std::max(b[i], bwd[k]);
      if (fwd[k] != kNone) fl[i] = std::max(fl[i], fwd[k] - saved_prefix[k]);
      fb[i] = std::min(fb[i], first_bwd[k]);
      if (!seen && before[k] != kNone) {
        fwd_before_[i] = before[k];
        seen = true;
      }
    }
    if (!seen) fwd_before_[i] = last_before;
    last_before = fwd_before_[i];
  }
  for (std::size_t i = 0; i < pos_.size(); ++i)
    saved_before_[i] = saved_prefix[static_cast<std::size_t>(pos_[i])];
  std::vector<std::int64_t> both(spans);
  for (std::size_t i = 0; i < spans; ++i) both[i] = std::max(f[i], b[i]);
  auto hi = [](std::int64_t x, std::int64_t y) { return std::max(x, y); };
  auto lo = [](std::int64_t x, std::int64_t y) { return std::min(x, y); };
  fwd_ = sparse(std::move(f), hi);
  bwd_ = sparse(std::move(b), hi);
  both_ = sparse(std::move(both), hi);
  fwd_less_saved_ = sparse(std::move(fl), hi);
  first_bwd_ = sparse(std::move(fb), lo);
  // What each candidate frees: the storages whose savers all lie inside it, less its inputs
  // where the plain run did not keep them outside it, less its RNG stash.
  std::vector<SavedUse> uses = ev.saved_uses();
  std::sort(uses.begin(), uses.end(),
            [](const SavedUse& a, const SavedUse& b) { return a.first_op < b.first_op; });
  std::unordered_map<std::string, const SavedUse*> by_value;
  for (const SavedUse& u : uses)
    if (!u.value.empty()) by_value.emplace(u.value, &u);
  std::unordered_map<std::string, int> value_ids;
  // Disjoint candidates sharing an input (a DenseNet's layers all take the block's earlier
  // features): the dynamic program, which cannot tell which of them a plan holds, charges each
  // its share. How many can share it: the most disjoint ones among those taking it (earliest
  // end first), so that ranges from the same block, which exclude each other, do not count.
  std::map<std::string, std::vector<std::pair<std::int64_t, std::int64_t>>> takers;
  for (const Candidate& c : set.items)
    for (const std::string& v : c.inputs) takers[v].emplace_back(c.end_op, c.first_op);
  std::unordered_map<std::string, int> sharing;
  for (auto& [v, spans] : takers) {
    std::sort(spans.begin(), spans.end());
    int count = 0;
    std::int64_t free_from = -1;
    for (const auto& [end, first] : spans)
      if (first >= free_from) {
        ++count;
        free_from = end;
      }
    sharing[v] = count;
  }
  for (const Candidate& c : set.items) {
    std::int64_t freed = 0;
    auto it = std::lower_bound(uses.begin(), uses.end(), c.first_op,
                               [](const SavedUse& u, std::int64_t op) { return u.first_op < op; });
    for (; it != uses.end() && it->first_op < c.end_op; ++it)
      if (it->last_op < c.end_op) freed += it->bytes;
    // A region under a per-op policy keeps the outputs of the policy's ops to its backward.
    freed_.push_back(freed - c.policy_kept_bytes);
    std::vector<int> ids;
    for (const std::string& v : c.inputs) {
      auto [at, fresh] = value_ids.emplace(v, static_cast<int>(values_.size()));
      if (fresh) {
        ValueFacts f;
        f.bytes = ev.value_bytes().count(v) ? ev.value_bytes().at(v) : 0;
        if (const auto found = by_value.find(v); found != by_value.end()) {
          f.first_saver = found->second->first_op;
          f.last_saver = found->second->last_op;
        } else {
          f.unsaved = true;
        }
        f.sharing = sharing[v];
        values_.push_back(f);
      }
      ids.push_back(at->second);
    }
    inputs_.push_back(std::move(ids));
  }
  // Alone (and, for the dynamic program, with shared inputs charged in shares).
  for (std::size_t c = 0; c < set.items.size(); ++c) {
    std::int64_t net = freed_[c] - set.items[c].rng_bytes;
    std::int64_t extra = 0;
    double shared = 0, shared_extra = 0;
    for (int id : inputs_[c]) {
      const ValueFacts& v = values_[static_cast<std::size_t>(id)];
      if (!v.unsaved && !kept_only_inside(v, set.items[c])) continue;
      net -= v.bytes;
      const double share = static_cast<double>(v.bytes) * (1.0 - 1.0 / std::max(1, v.sharing));
      shared += share;
      if (v.unsaved) {
        extra += v.bytes;
        shared_extra += share;
      }
    }
    dp_net_.push_back(net + static_cast<std::int64_t>(shared));
    dp_extra_.push_back(extra - static_cast<std::int64_t>(shared_extra) + backward_extra(c));
  }
  held_.assign(values_.size(), 0);
  nested_inputs_held_ = !ev.settings().use_reentrant;
  reentrant_ = ev.settings().use_reentrant;
  need_.reserve(set.items.size());
  for (std::size_t c = 0; c < set.items.size(); ++c) {
    const Candidate& x = set.items[c];
    Span s{static_cast<int>(c), position_of(x.first_op), position_of(x.end_op), {}, dp_net_[c],
           dp_extra_[c]};
    if (s.a < 0 || s.b < 0)
      throw std::logic_error("peak model: candidate '" + x.label + "' unknown");
    need_.push_back(span_need(s));
  }
}

std::int64_t PeakModel::backward_extra(std::size_t c) const {
  // A reentrant checkpoint's backward holds the gradients of its outputs while it runs the
  // recomputed graph's backward (and its inputs' gradients until it returns them).
  return reentrant_ ? set_.items[c].output_bytes : 0;
}

int PeakModel::position_of(std::int64_t op) const {
  auto it = std::lower_bound(pos_.begin(), pos_.end(), op);
  if (it == pos_.end() || *it != op) return -1;
  return static_cast<int>(it - pos_.begin());
}

std::int64_t PeakModel::range_max(const std::vector<std::vector<std::int64_t>>& t, int i,
                                  int j) const {
  if (j <= i) return kNone;
  const int l = floor_log2(j - i);
  const auto& row = t[static_cast<std::size_t>(l)];
  return std::max(row[static_cast<std::size_t>(i)], row[static_cast<std::size_t>(j - (1 << l))]);
}

std::int64_t PeakModel::range_min(const std::vector<std::vector<std::int64_t>>& t, int i,
                                  int j) const {
  if (j <= i) return kNever;
  const int l = floor_log2(j - i);
  const auto& row = t[static_cast<std::size_t>(l)];
  return std::min(row[static_cast<std::size_t>(i)], row[static_cast<std::size_t>(j - (1 << l))]);
}

std::int64_t PeakModel::span_peak(int i, int j) const {
  return range_max(both_, i, j);
}

std::int64_t PeakModel::net_saving(int candidate) const {
  return std::max<std::int64_t>(0, dp_net_[static_cast<std::size_t>(candidate)]);
}

}  // namespace ckpt
