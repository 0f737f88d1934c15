#include "engine/plan/candidates.hpp"

#include <algorithm>

#include <unordered_map>

#include "engine/checkpoint/checkpoint.hpp"
#include "engine/model/module_range.hpp"
#include "engine/ops/schema/op_schema.hpp"

namespace ckpt {

namespace {

const Module* chain_parent(const Model& model) {
  const Module* cur = &model.root;
  for (;;) {
    const auto ops = cur->end_op - cur->first_op;
    const Module* big = nullptr;
    for (const auto& c : cur->children)
      if (c->children.size() > 0 && (c->end_op - c->first_op) * 10 >= ops * 9) big = c.get();
    if (!big) return cur;
    cur = big;
  }
}

// The model's own inputs are kept whatever the plan: a checkpoint keeping one costs nothing.
void add_inputs(const PlanEvaluator& ev, const Model& model, Candidate& c,
                const std::vector<std::string>& inputs) {
  bool any_grad = false;
  for (const auto& v : inputs) any_grad = any_grad || ev.requires_grad(v);
  c.cuts_gradients = ev.settings().use_reentrant && !any_grad;
  for (const auto& v : inputs) {
    bool model_input = false;
    for (const auto& in : model.inputs) model_input = model_input || in.name == v;
    if (model_input) continue;
    c.inputs.push_back(v);
    if (auto it = ev.value_bytes().find(v); it != ev.value_bytes().end())
      c.input_bytes += it->second;
  }
}

// What recomputing op `op` costs: its forward steps, and their time.
struct OpRecompute {
  std::int64_t steps = 0, ns = 0;
};
OpRecompute op_recompute(const PlanEvaluator& ev, const OpNode& op) {
  OpRecompute r;
  if (auto it = ev.node_steps().find(op.name); it != ev.node_steps().end()) r.steps = it->second;
  if (auto it = ev.op_cost_ns().find(op.name); it != ev.op_cost_ns().end())
    r.ns = it->second * r.steps;
  return r;
}

void add_costs(const PlanEvaluator& ev, const Model& model, Candidate& c,
               const std::vector<std::string>& inputs) {
  const std::int64_t rng = 5056;  // torch.get_rng_state(): what each checkpoint stashes
  for (std::int64_t k = c.first_op; k < c.end_op; ++k) {
    const OpNode& op = model.ops[static_cast<std::size_t>(k)];
    if (auto it = ev.saved_by_node().find(op.name); it != ev.saved_by_node().end())
      c.kept_bytes += it->second;
    const OpRecompute r = op_recompute(ev, op);
    c.recompute_ns += r.ns;
    c.recompute_ops += r.steps;
    if (const OpSchema* row = OpTable::instance().find(op.op_type); row && row->updates_buffers)
      c.batchnorm = true;
  }
  add_inputs(ev, model, c, inputs);
  c.rng_bytes = ev.settings().preserve_rng_state ? rng : 0;
}

Candidate module_candidate(const PlanEvaluator& ev, const Module& m, int level) {
  Candidate c;
  c.label = c.first = c.last = m.path;
  c.first_op = m.first_op;
  c.end_op = m.end_op;
  c.level = level;
  add_costs(ev, ev.model(), c, m.inputs);
  for (const auto& v : m.outputs)
    if (auto it = ev.value_bytes().find(v); it != ev.value_bytes().end())
      c.output_bytes += it->second;
  return c;
}

void add_descendants(const PlanEvaluator& ev, const Module& m, int level, int depth,
                     CandidateSet& set) {
  if (level > depth) return;
  for (const auto& child : m.children) {
    if (child->checkpointable) set.items.push_back(module_candidate(ev, *child, level));
    add_descendants(ev, *child, level + 1, depth, set);
  }
}

// Ranges of consecutive blocks, shortest first: all of them when there are at most `limit`;
// otherwise lengths 2, 3, 4, 6, 8, 12, 16, ... (each a third to a half longer than the last),
// each from every stride(L) = ceil(L / 4)-th block, until `limit`: a 1,000-block chain gets
// segments of every scale in some thousands of candidates instead of half a million. A range's
// costs are its blocks' (no op of the parent lies between them), its inputs those of its blocks
// that no earlier block of it makes.
void add_ranges(const PlanEvaluator& ev, const Module& parent,
                const std::vector<const Module*>& blocks, int limit, CandidateSet& set) {
  const std::size_t n = blocks.size();
  if (n < 2) return;
  std::unordered_map<std::string, std::size_t> maker;  // value -> the block whose op makes it
  const Model& model = ev.model();
  for (std::size_t k = 0; k < n; ++k)
    for (auto op = blocks[k]->first_op; op < blocks[k]->end_op; ++op)
      for (const auto& v : model.ops[static_cast<std::size_t>(op)].outputs) maker.emplace(v, k);
  std::vector<std::size_t> lengths;
  for (std::size_t len = 2; len <= n; len = std::max(len + 1, len * 3 / 2)) lengths.push_back(len);
  const bool all = n * (n - 1) / 2 <= static_cast<std::size_t>(std::max(0, limit));
  if (all) {
    lengths.clear();
    for (std::size_t len = 2; len <= n; ++len) lengths.push_back(len);
  }
  int made = 0;
  for (std::size_t len : lengths) {
    const std::size_t stride = all ? 1 : (len + 3) / 4;
    for (std::size_t i = 0; i + len <= n && made < limit; i += stride) {
      const Module* a = blocks[i];
      const Module* b = blocks[i + len - 1];
      if (a->first_op == parent.first_op && b->end_op == parent.end_op && !parent.path.empty())
        continue;  // the parent itself
      // Only blocks, no op of the parent between them: such a range is the blocks' chain, which
      // PyTorch code can wrap by module name (an op between them has no name to wrap).
      std::int64_t own = 0;
      for (std::size_t x = i; x < i + len; ++x) own += blocks[x]->end_op - blocks[x]->first_op;
      if (own != b->end_op - a->first_op) continue;
      Candidate c;
      c.label = range_label(a->path, b->path);
      c.is_range = true;
      c.first = a->path;
      c.last = b->path;
      c.first_op = a->first_op;
      c.end_op = b->end_op;
      std::vector<std::string> inputs;
      for (std::size_t x = i; x < i + len; ++x) {
        const Candidate& block = set.items[static_cast<std::size_t>(set.blocks[x])];
        c.kept_bytes += block.kept_bytes;
        c.recompute_ns += block.recompute_ns;
        c.recompute_ops += block.recompute_ops;
        c.batchnorm = c.batchnorm || block.batchnorm;
        for (const auto& v : blocks[x]->inputs) {
          const auto it = maker.find(v);
          if (it != maker.end() && it->second >= i && it->second < x) continue;  // made inside
          if (std::find(inputs.begin(), inputs.end(), v) == inputs.end()) inputs.push_back(v);
        }
      }
      add_inputs(ev, model, c, inputs);
      c.rng_bytes = set.items[static_cast<std::size_t>(set.blocks[i])].rng_bytes;
      c.output_bytes = set.items[static_cast<std::size_t>(set.blocks[i + len - 1])].output_bytes;
      set.items.push_back(std::move(c));
      ++made;
    }
  }
}

}  // namespace

bool compatible(const Candidate& a, const Candidate& b) {
  if (a.end_op <= b.first_op || b.end_op <= a.first_op) return true;
  // Offloading inside a checkpoint (or around one) would copy what the checkpoint drops anyway.
  if (a.offload || b.offload) return false;
  const bool a_in_b = b.first_op <= a.first_op && a.end_op <= b.end_op;
  const bool b_in_a = a.first_op <= b.first_op && b.end_op <= a.end_op;
  if (a.first_op == b.first_op && a.end_op == b.end_op) return a.is_range != b.is_range;
  return a_in_b || b_in_a;
}

CandidateSet find_candidates(const PlanEvaluator& ev, const CandidateOptions& options) {
  const Model& model = ev.model();
  CandidateSet set;
  const Module* parent = chain_parent(model);
  set.chain_parent = parent->path;
  std::vector<const Module*> blocks;
  for (const auto& child : parent->children)
    if (child->checkpointable) blocks.push_back(child.get());
  std::sort(blocks.begin(), blocks.end(),
            [](const Module* a, const Module* b) { return a->first_op < b->first_op; });
  for (const Module* b : blocks) {
    set.blocks.push_back(static_cast<int>(set.items.size()));
    set.items.push_back(module_candidate(ev, *b, 0));
    set.items.back().is_block = true;
    add_descendants(ev, *b, 1, options.depth, set);
  }
  if (options.ranges) add_ranges(ev, *parent, blocks, options.max_ranges, set);
  set.policy = ev.policy();
  add_policy_twins(ev, set, 0);
  if (options.offload) add_offload_twins(ev, set);
  return set;
}

void add_offload_twins(const PlanEvaluator& ev, CandidateSet& set) {
  const double bytes_per_ns = ev.settings().pcie_gb_per_s;  // GB/s: bytes per ns
  const std::size_t end = set.items.size();
  for (std::size_t i = 0; i < end; ++i) {
    const Candidate& x = set.items[i];
    if (x.is_range || x.with_policy || x.offload || x.kept_bytes == 0) continue;
    Candidate c = x;
    c.offload = true;
    c.twin = static_cast<int>(i);
    c.input_bytes = 0;  // its inputs are saved tensors like any other: copied, not held
    c.inputs.clear();
    c.rng_bytes = 0;
    c.output_bytes = 0;
    c.recompute_ns = 0;
    c.recompute_ops = 0;
    c.cuts_gradients = false;
    c.transfer_ns =
        static_cast<std::int64_t>(2.0 * static_cast<double>(x.kept_bytes) / bytes_per_ns);
    set.items.push_back(std::move(c));
  }
}

void add_policy_twins(const PlanEvaluator& ev, CandidateSet& set, std::size_t first) {
  if (set.policy.empty()) return;
  const std::vector<std::string> types = ops_of_kinds(set.policy.save);
  const Model& model = ev.model();
  const std::size_t end = set.items.size();
  for (std::size_t i = first; i < end; ++i) {
    Candidate c = set.items[i];
    c.with_policy = true;
    c.twin = static_cast<int>(i);
    // The policy's ops in the region's forward order: the 1st, (every+1)-th, ... keep their
    // outputs, so the recompute skips them (as the engine's segment replays them).
    std::int64_t seen = 0;
    for (std::int64_t k = c.first_op; k < c.end_op; ++k) {
      const OpNode& op = model.ops[static_cast<std::size_t>(k)];
      if (std::find(types.begin(), types.end(), op.op_type) == types.end()) continue;
      if (seen++ % set.policy.every != 0) continue;
      for (const auto& v : op.outputs)
        if (auto it = ev.value_bytes().find(v); it != ev.value_bytes().end())
          c.policy_kept_bytes += it->second;
      const OpRecompute r = op_recompute(ev, op);
      c.recompute_ns -= r.ns;
      c.recompute_ops -= r.steps;
    }
    if (seen == 0) continue;  // nothing to keep: the same run as full recompute
    set.items[i].twin = static_cast<int>(set.items.size());
    set.items.push_back(std::move(c));
  }
}

CheckpointPlan plan_config(const CandidateSet& set, const std::vector<int>& chosen) {
  CheckpointPlan c;
  c.policy = set.policy;
  for (int i : chosen) {
    const Candidate& x = set.items[static_cast<std::size_t>(i)];
    if (x.offload) {
      c.offload.insert(x.label);
      continue;
    }
    // The set's policy is the plan's; a region recomputed whole says so (its own empty policy).
    if (!set.policy.empty() && !x.with_policy) c.policies[x.label] = SelectivePolicy{};
    if (x.is_range) {
      c.ranges.emplace_back(x.first, x.last);
    } else {
      c.modules.insert(x.label);
    }
  }
  std::sort(c.ranges.begin(), c.ranges.end());
  return c;
}

}  // namespace ckpt
