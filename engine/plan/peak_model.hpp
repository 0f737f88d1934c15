#pragma once

// A fast model of a plan's peak, built once from the plain run's dry-run trace: what proposes
// plans, never what judges them (every plan shown or chosen is a dry run, PlanEvaluator).
//
// The plain trace gives, per op of the model, the highest live total of its forward steps and of
// its backward steps, and the bytes it saves for backward. Checkpointing a segment C = [l, r) of
// ops changes that trace at the level of segments (Rotor's chain model, with the plain run
// standing in for each layer's figures):
//   - every op after C, forward and backward, runs with C's net saving less live: the storages
//     only C's ops keep for backward (a graph walk of the plain forward says who keeps what: an
//     output the next block saves too stays), less C's inputs (kept as checkpoint inputs where
//     the plain run kept them only inside C, or freed them) and its RNG stash;
//   - C's backward starts with its recompute: the memory just before C's first backward step,
//     less that saving, plus the rise C's forward had over its inputs (its activations and its
//     largest transient) and the inputs the plain forward freed, less what checkpoints nested
//     in C save inside it;
//   - inside C the backward is the plain one again, less the savings of what precedes it, plus
//     the inputs the plain run had freed.
// All of these are "a figure of the plain run less the savings to the left", which is what lets
// a dynamic program over positions (engine/plan/chain_dp.hpp) find the cheapest plan under a
// budget in milliseconds.

#include <cstdint>
#include <limits>
#include <vector>

#include "engine/plan/candidates.hpp"

namespace ckpt {

class PeakModel {
 public:
  static constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::min() / 4;
  static constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max() / 4;

  // `plain`: the dry run of the model without checkpoints (PlanEvaluator::plain_run()).
  PeakModel(const PlanEvaluator& evaluator, const CandidateSet& set);

  // The predicted peak of checkpointing the chosen candidates (nesting allowed, as the
  // evaluator would run them). Not thread-safe (it marks the inputs it has charged).
  std::int64_t predict(const std::vector<int>& chosen) const;

  // The plain run's peak as the model sees it (the highest step).
  std::int64_t plain_peak() const { return plain_peak_; }

  // What the dynamic program reads. Positions are the sorted distinct candidate boundaries
  // (op indices), the last one past the loss.
  const std::vector<std::int64_t>& positions() const { return pos_; }
  int position_of(std::int64_t op) const;  // -1 if `op` is no boundary
  // The highest plain figure over the ops between positions i and j (forward or backward).
  std::int64_t span_peak(int i, int j) const;
  // A candidate checkpointed with `s` bytes saved to its left peaks at need(c) - s.
  std::int64_t need(int candidate) const { return need_[static_cast<std::size_t>(candidate)]; }
  // What a checkpoint of the candidate frees for everything after it (never below 0), inputs
  // it shares with candidates of its kind charged in shares.
  std::int64_t net_saving(int candidate) const;
  const CandidateSet& candidates() const { return set_; }

 private:
  // A chosen candidate and the ones nested in it, with what it frees and the inputs the plain
  // forward had freed that it holds (after the inputs held by earlier ones).
  struct Span {
    int candidate = -1;
    int a = 0, b = 0;  // positions
    std::vector<Span> inner;
    std::int64_t net = 0, extra = 0;
  };
  // What the plain run did with a value some candidate takes as input.
  struct ValueFacts {
    std::int64_t bytes = 0;
    std::int64_t first_saver = 0, last_saver = 0;  // the ops that saved it
    bool unsaved = false;                          // no op saved it: the plain forward freed it
    int sharing = 1;                               // disjoint candidates taking it
  };
  // Whether a checkpoint of `c` holding `v` keeps it longer than the plain run: every op that
  // saved it is inside `c` (its saving counted it as freed).
  static bool kept_only_inside(const ValueFacts& v, const Candidate& c) {
    return !v.unsaved && v.first_saver >= c.first_op && v.last_saver < c.end_op;
  }
  std::int64_t region(const std::vector<Span>& spans, int from, int to, std::int64_t saved,
                      bool forward, bool backward) const;
  std::int64_t recompute_rise(const Span& s) const;
  std::int64_t span_need(const Span& s) const;
  void charge(std::vector<Span>& spans) const;
  void charge_inputs(const Span& holder, const Span& s, Span& into) const;
  std::int64_t backward_extra(std::size_t candidate) const;
  std::int64_t range_max(const std::vector<std::vector<std::int64_t>>& table, int i, int j) const;
  std::int64_t range_min(const std::vector<std::vector<std::int64_t>>& table, int i, int j) const;

  const CandidateSet& set_;
  std::vector<std::int64_t> pos_;
  // Per elementary interval [pos_[i], pos_[i + 1]), as sparse tables (level 0 = the intervals):
  std::vector<std::vector<std::int64_t>> fwd_, bwd_, both_;  // highest plain totals
  std::vector<std::vector<std::int64_t>> fwd_less_saved_;    // forward total - saved before it
  std::vector<std::vector<std::int64_t>> first_bwd_;         // first backward step
  std::vector<std::int64_t> fwd_before_;    // live before the interval's first forward step
  std::vector<std::int64_t> saved_before_;  // bytes saved by the ops before position i
  std::vector<std::int64_t> total_after_;   // live total after each step of the plain trace
  std::vector<std::int64_t> need_;          // per candidate
  std::vector<std::int64_t> freed_;         // per candidate: storages only its ops save
  std::vector<std::vector<int>> inputs_;    // per candidate: its inputs, as value ids
  std::vector<ValueFacts> values_;          // per value id
  // Per candidate alone: what it frees (may be < 0) and the inputs the plain forward freed that
  // it holds, inputs shared with disjoint candidates charged in shares.
  std::vector<std::int64_t> dp_net_, dp_extra_;
  // Non-reentrant: checkpoints nested in another hold their inputs from the first forward on
  // (their saved variables are in the graph); reentrant: only inside the outer's recompute.
  bool nested_inputs_held_ = false;
  bool reentrant_ = false;
  mutable std::vector<std::uint32_t> held_;  // per value: the stamp of the last plan holding it
  mutable std::uint32_t stamp_ = 0;
  std::int64_t plain_peak_ = 0;
};

}  // namespace ckpt
