#pragma once

// What a plan chooses from: checkpointable module instances and contiguous ranges of sibling
// blocks, with their costs measured from the baseline run's trace.

#include <cstdint>
#include <string>
#include <vector>

#include "engine/plan/evaluator.hpp"

namespace ckpt {

struct Candidate {
  std::string label;  // the module path, or "first..last" for a range
  bool is_range = false;
  std::string first, last;  // a range's ends (both the path for a module)
  std::int64_t first_op = 0, end_op = 0;
  bool is_block = false;  // one of the block chain (what all/every-k/sqrt/uniform pick from)
  int level = 0;          // 0: a block or a range of blocks, 1: a block's child, ...
  // Costs (from the baseline trace; recompute time measured per op, or estimated by a dry run).
  std::int64_t kept_bytes = 0;      // bytes its ops save for backward when it is not checkpointed
  std::int64_t input_bytes = 0;     // bytes of its inputs, kept when it is
  std::vector<std::string> inputs;  // those inputs (values the model's inputs are not among)
  std::int64_t output_bytes = 0;    // bytes of its outputs (a reentrant backward holds their grads)
  std::int64_t rng_bytes = 0;       // the RNG state its checkpoint stashes
  std::int64_t recompute_ns = 0;    // its forward time: what recomputing it costs
  std::int64_t recompute_ops = 0;
  bool batchnorm = false;  // it holds a BatchNorm: its running statistics update twice
  // A reentrant checkpoint of it would cut its parameters off their gradients: none of its
  // inputs requires grad (PyTorch issue #147449). The planner proposes it never.
  bool cuts_gradients = false;
  // The twin of a region under the offered per-op policy (CandidateSet::policy): the same ops,
  // the outputs of the policy's ops kept instead of recomputed. Each of the pair names the other.
  bool with_policy = false;
  int twin = -1;
  std::int64_t policy_kept_bytes = 0;  // with_policy: the outputs the policy keeps
  // The offload twin of a module (CandidateOptions::offload): its saved tensors go to host
  // memory (save_on_cpu) instead of being recomputed. It keeps no inputs, stashes no RNG state
  // and recomputes nothing; its cost is the copies each way at the link's bandwidth. It names
  // the module it stands for in `twin`; it shares ops with no other chosen region.
  bool offload = false;
  std::int64_t transfer_ns = 0;
  // What choosing it costs in time (recompute, or an offload's copies): what plans minimise.
  std::int64_t cost_ns() const { return recompute_ns + transfer_ns; }
  // A region's other way (a policy's or an offload's), not a region of its own.
  bool is_twin() const { return with_policy || offload; }
  // Bytes a checkpoint of it alone frees (kept - inputs - what a policy keeps, never negative).
  std::int64_t saving() const {
    const std::int64_t held = input_bytes + policy_kept_bytes;
    return kept_bytes > held ? kept_bytes - held : 0;
  }
};

struct CandidateOptions {
  int depth = 1;       // levels below the blocks to offer (0: blocks and ranges only)
  bool ranges = true;  // ranges of two or more consecutive blocks
  // Ranges are O(n^2): all of them up to this many, else lengths growing by half from every
  // quarter-length-th block, the shortest first, up to this many.
  int max_ranges = 8192;
  // On a device with host memory apart from its own (cuda): each module may also be offloaded,
  // weighed against recomputing it (the evaluator's times then a GPU's: PlanEvaluator gpu_times).
  bool offload = false;
};

struct CandidateSet {
  std::vector<Candidate> items;
  std::vector<int> blocks;   // indices of the block chain, in execution order
  std::string chain_parent;  // the module whose children are the blocks ("" for the root)
  // The per-op policy a plan may give each region instead of recomputing it whole (`plan
  // --policy`): every region has a with_policy twin. Empty: full recompute only.
  SelectivePolicy policy;
};

// Appends the with_policy twin of each candidate from `first` on (nothing without a policy).
void add_policy_twins(const PlanEvaluator& evaluator, CandidateSet& set, std::size_t first);

// Appends the offload twin of each module candidate (not ranges, not twins): the copies of what
// its ops save, to host and back, at the evaluator's link bandwidth (RunSettings::pcie_gb_per_s).
void add_offload_twins(const PlanEvaluator& evaluator, CandidateSet& set);

// The blocks: the children of the first module (from the root down) that does not hand
// nearly all of its ops to a single child; then candidates as `options` says.
CandidateSet find_candidates(const PlanEvaluator& evaluator, const CandidateOptions& options = {});

// Whether two candidates can be checkpointed together (nested or apart, never crossing; an
// offloaded module apart from every other region).
bool compatible(const Candidate& a, const Candidate& b);

// The plan checkpointing the chosen candidates (indices into set.items): with the set's policy
// as its own, the regions recomputed whole named in CheckpointPlan::policies (an empty policy).
CheckpointPlan plan_config(const CandidateSet& set, const std::vector<int>& chosen);

}  // namespace ckpt
