#include "engine/plan/candidates.hpp"

#include <algorithm>

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

void add_costs(const PlanEvaluator& ev, const Model& model, Candidate& c,
               const std::vector<std::string>& inputs) {
  const std::int64_t rng = 5056;  // torch.get_rng_state(): what each checkpoint stashes
  for (std::int64_t k = c.first_op; k < c.end_op; ++k) {
    const OpNode& op = model.ops[static_cast<std::size_t>(k)];
    if (auto it = ev.saved_by_node().find(op.name); it != ev.saved_by_node().end())
      c.kept_bytes += it->second;
    const auto steps = ev.node_steps().count(op.name) ? ev.node_steps().at(op.name) : 0;
    if (auto it = ev.op_cost_ns().find(op.name); it != ev.op_cost_ns().end())
      c.recompute_ns += it->second * steps;
    c.recompute_ops += steps;
    if (const OpSchema* row = OpTable::instance().find(op.op_type); row && row->updates_buffers)
      c.batchnorm = true;
  }
  for (const auto& v : inputs)
    if (auto it = ev.value_bytes().find(v); it != ev.value_bytes().end())
      c.input_bytes += it->second;
  c.rng_bytes = ev.settings().preserve_rng_state ? rng : 0;
}

Candidate module_candidate(const PlanEvaluator& ev, const Module& m, int level) {
  Candidate c;
  c.label = c.first = c.last = m.path;
  c.first_op = m.first_op;
  c.end_op = m.end_op;
  c.level = level;
  add_costs(ev, ev.model(), c, m.inputs);
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

}  // namespace

bool compatible(const Candidate& a, const Candidate& b) {
  if (a.end_op <= b.first_op || b.end_op <= a.first_op) return true;
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
  if (!options.ranges) return set;
  int made = 0;
  const auto n = blocks.size();
  for (std::size_t len = 2; len <= n; ++len)
    for (std::size_t i = 0; i + len <= n && made < options.max_ranges; ++i) {
      const Module* a = blocks[i];
      const Module* b = blocks[i + len - 1];
      if (a->first_op == parent->first_op && b->end_op == parent->end_op && !parent->path.empty())
        continue;  // the parent itself
      // Only blocks, no op of the parent between them: such a range is the blocks' chain, which
      // PyTorch code can wrap by module name (an op between them has no name to wrap).
      std::int64_t own = 0;
      for (std::size_t x = i; x < i + len; ++x) own += blocks[x]->end_op - blocks[x]->first_op;
      if (own != b->end_op - a->first_op) continue;
      Module r;
      try {
        r = make_range(model, a->path, b->path);
      } catch (const std::invalid_argument&) {
        continue;  // ops of another module between them: no function of its own
      }
      Candidate c;
      c.label = r.path;
      c.is_range = true;
      c.first = a->path;
      c.last = b->path;
      c.first_op = r.first_op;
      c.end_op = r.end_op;
      add_costs(ev, model, c, r.inputs);
      set.items.push_back(std::move(c));
      ++made;
    }
  return set;
}

CheckpointPlan plan_config(const CandidateSet& set, const std::vector<int>& chosen) {
  CheckpointPlan c;
  for (int i : chosen) {
    const Candidate& x = set.items[static_cast<std::size_t>(i)];
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
