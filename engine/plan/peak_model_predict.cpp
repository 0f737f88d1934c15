// PeakModel's predictions: a plan's candidates as a tree of spans, walked in forward order.
#include <algorithm>

#include "engine/plan/peak_model.hpp"

namespace ckpt {

std::int64_t PeakModel::span_need(const Span& s) const {
  // Checkpointed with nothing saved to its left: its forward (the plain forward less what its
  // ops saved before each step, plus its inputs), its recompute, and its backward.
  const Candidate& c = set_.items[static_cast<std::size_t>(s.candidate)];
  const std::int64_t forward =
      std::min(range_max(fwd_less_saved_, s.a, s.b) + saved_before_[static_cast<std::size_t>(s.a)] +
                   c.input_bytes,
               range_max(fwd_, s.a, s.b));
  const std::int64_t first = range_min(first_bwd_, s.a, s.b);
  std::int64_t bump = kNone;
  if (first < kNever)
    bump = (first > 0 ? total_after_[static_cast<std::size_t>(first - 1)] : 0) - s.net +
           recompute_rise(s);
  return std::max({forward, bump, range_max(bwd_, s.a, s.b) + s.extra});
}

std::int64_t PeakModel::recompute_rise(const Span& s) const {
  // An offloaded module recomputes nothing: its saved tensors come back as its backward asks.
  if (set_.items[static_cast<std::size_t>(s.candidate)].offload) return s.extra;
  // The recompute is the segment's forward again, its nested checkpoints keeping nothing.
  std::int64_t high = kNone, inner = 0;
  int at = s.a;
  for (const Span& c : s.inner) {
    high = std::max(high, range_max(fwd_, at, c.a) - inner);
    const Candidate& x = set_.items[static_cast<std::size_t>(c.candidate)];
    high = std::max(high, std::min(range_max(fwd_less_saved_, c.a, c.b) +
                                       saved_before_[static_cast<std::size_t>(c.a)] + x.input_bytes,
                                   range_max(fwd_, c.a, c.b)) -
                              inner);
    inner += c.net;
    at = c.b;
  }
  high = std::max(high, range_max(fwd_, at, s.b) - inner);
  // The inputs the plain forward freed stay, as checkpoint inputs, through the recompute.
  return (high == kNone ? 0 : high - fwd_before_[static_cast<std::size_t>(s.a)]) + s.extra;
}

std::int64_t PeakModel::region(const std::vector<Span>& spans, int from, int to, std::int64_t saved,
                               bool forward, bool backward) const {
  const auto& gaps = forward && backward ? both_ : forward ? fwd_ : bwd_;
  std::int64_t high = kNone, local = 0;
  int at = from;
  for (const Span& s : spans) {
    high = std::max(high, range_max(gaps, at, s.a) - saved - local);
    const Candidate& c = set_.items[static_cast<std::size_t>(s.candidate)];
    if (forward)
      high =
          std::max(high, std::min(range_max(fwd_less_saved_, s.a, s.b) +
                                      saved_before_[static_cast<std::size_t>(s.a)] + c.input_bytes,
                                  range_max(fwd_, s.a, s.b)) -
                             saved - local);
    if (backward) {
      const std::int64_t first = range_min(first_bwd_, s.a, s.b);
      if (first < kNever)
        high = std::max(high, (first > 0 ? total_after_[static_cast<std::size_t>(first - 1)] : 0) -
                                  saved - local - s.net + recompute_rise(s));
      high = std::max(high, region(s.inner, s.a, s.b, saved + local - s.extra, false, true));
    }
    local += s.net;
    at = s.b;
  }
  high = std::max(high, range_max(gaps, at, to) - saved - local);
  return high;
}

void PeakModel::charge_inputs(const Span& holder, const Span& s, Span& into) const {
  const Candidate& c = set_.items[static_cast<std::size_t>(holder.candidate)];
  for (int id : inputs_[static_cast<std::size_t>(s.candidate)]) {
    const ValueFacts& v = values_[static_cast<std::size_t>(id)];
    if (kept_only_inside(v, c)) {
      into.net -= v.bytes;  // counted as freed, yet held
    } else if (v.unsaved) {
      auto& mark = held_[static_cast<std::size_t>(id)];
      if (mark == stamp_) continue;  // an earlier checkpoint holds it already
      mark = stamp_;
      into.net -= v.bytes;
      into.extra += v.bytes;
    }
  }
  if (&holder != &s) into.net -= set_.items[static_cast<std::size_t>(s.candidate)].rng_bytes;
  if (!nested_inputs_held_) return;
  for (const Span& inner : s.inner) charge_inputs(holder, inner, into);
}

void PeakModel::charge(std::vector<Span>& spans) const {
  // In forward order, outer before inner: an input an earlier checkpoint already holds is not
  // held twice (a DenseNet's features are inputs of every later layer).
  for (Span& s : spans) {
    const auto c = static_cast<std::size_t>(s.candidate);
    s.net = freed_[c] - set_.items[c].rng_bytes;
    s.extra = backward_extra(c);
    charge_inputs(s, s, s);
    charge(s.inner);
  }
}

std::int64_t PeakModel::predict(const std::vector<int>& chosen) const {
  std::vector<int> order = chosen;
  std::sort(order.begin(), order.end(), [&](int x, int y) {
    const Candidate& a = set_.items[static_cast<std::size_t>(x)];
    const Candidate& b = set_.items[static_cast<std::size_t>(y)];
    if (a.first_op != b.first_op) return a.first_op < b.first_op;
    if (a.end_op != b.end_op) return a.end_op > b.end_op;
    return a.is_range && !b.is_range;  // a range around the module of the same ops
  });
  // Nest them: each span holds the chosen candidates inside it. A span's vector is only added
  // to once the span itself has left the stack, so the pointers stay valid.
  std::vector<Span> top;
  std::vector<Span*> stack;
  for (int i : order) {
    const Candidate& c = set_.items[static_cast<std::size_t>(i)];
    const int a = position_of(c.first_op), b = position_of(c.end_op);
    if (a < 0 || b < 0) throw std::logic_error("peak model: candidate '" + c.label + "' unknown");
    while (!stack.empty() && stack.back()->b <= a) stack.pop_back();
    auto& into = stack.empty() ? top : stack.back()->inner;
    into.push_back(Span{i, a, b, {}, 0, 0});
    stack.push_back(&into.back());
  }
  if (++stamp_ == 0) {  // wrapped: no mark may look current
    std::fill(held_.begin(), held_.end(), 0);
    stamp_ = 1;
  }
  charge(top);
  return region(top, 0, static_cast<int>(pos_.size()) - 1, 0, true, true);
}

}  // namespace ckpt
