#pragma once

// Checkpoint planning strategies, named the same in the app, the CLI and JSON.

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/plan/candidates.hpp"

namespace ckpt {

enum class Strategy : std::uint8_t {
  none,      // no checkpoint
  all,       // every block
  every_k,   // every k-th block
  sqrt,      // Chen et al.: sqrt(n) segments of consecutive blocks, all but the last checkpointed
  uniform,   // Megatron's --recompute-method uniform: chunks of n blocks, each checkpointed
  greedy,    // blocks by bytes saved per second of recompute, until the budget holds
  knapsack,  // torch.compile's activation_memory_budget: a knapsack over a budget fraction
  optimal,   // least recompute whose evaluated peak fits the budget
};
inline constexpr Strategy kStrategies[] = {Strategy::none,     Strategy::all,     Strategy::every_k,
                                           Strategy::sqrt,     Strategy::uniform, Strategy::greedy,
                                           Strategy::knapsack, Strategy::optimal};
const char* strategy_name(Strategy s);  // "none", "all", "every-k", "sqrt", "uniform-n", ...
// Throws std::invalid_argument listing the names.
Strategy strategy_from_name(const std::string& name);

struct StrategyParams {
  int k = 2;                   // every-k
  int n = 2;                   // uniform-n
  int max_evaluations = 1500;  // optimal: evaluations before the exact search gives up
  int exact_limit = 16;        // optimal: candidate counts up to this are searched exactly
};

// One plan: what it checkpoints and what its evaluation measured.
struct PlanPoint {
  Strategy strategy = Strategy::none;
  std::string detail;       // "k=2", "budget 60%", ...
  std::vector<int> chosen;  // indices into the CandidateSet
  CheckpointPlan plan;      // with the evaluator's policy
  Evaluation eval;
  bool fits = true;       // eval's peak within the budget it was made for
  bool exact = false;     // optimal: proven least recompute among the candidates
  bool repaired = false;  // over budget as the strategy made it, candidates added until it fit
  std::string note;
};

// Plans without a budget (none, all, every-k, sqrt, uniform-n): blocks chosen by position.
// Ranges they need that the set lacks are added to it.
std::vector<int> fixed_plan(Strategy s, CandidateSet& set, const StrategyParams& p);

// The cheapest set of candidates (from `pool`) whose cost-model bytes saved reach `need`;
// recompute nanoseconds as the cost; exact over bytes in `buckets` steps. Empty if none does.
std::vector<int> min_cost_cover(const CandidateSet& set, const std::vector<int>& pool,
                                std::int64_t need, int buckets = 512);

}  // namespace ckpt
