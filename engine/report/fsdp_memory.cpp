#include "engine/report/fsdp_memory.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "engine/report/fsdp_all_gather.hpp"

namespace ckpt {

namespace {

bool inside(const std::string& path, const std::string& unit) {
  return path == unit || (path.size() > unit.size() && path.compare(0, unit.size(), unit) == 0 &&
                          path[unit.size()] == '.');
}

// The module whose children are the blocks: the one with the most children alike (the same
// parameter count, not zero), as a transformer's repeated layers are; ties go to the larger.
const Module* block_parent(const Model& model, const std::map<std::string, std::int64_t>& used) {
  const Module* best = nullptr;
  std::size_t best_count = 1;
  std::int64_t best_size = 0;
  std::vector<const Module*> all = model.all_modules();
  all.insert(all.begin(), &model.root);
  for (const Module* m : all) {
    std::map<std::int64_t, std::size_t> alike;
    for (const auto& c : m->children) {
      std::int64_t n = 0;
      for (const auto& [module, numel] : used)
        if (inside(module, c->path)) n += numel;
      if (n > 0) ++alike[n];
    }
    for (const auto& [size, count] : alike)
      if (count > best_count || (count == best_count && count > 1 &&
                                 size * static_cast<std::int64_t>(count) > best_size)) {
        best = m;
        best_count = count;
        best_size = size * static_cast<std::int64_t>(count);
      }
  }
  return best;
}

std::int64_t optimizer_copies(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::momentum:
      return 1;
    case OptimizerKind::adam:
    case OptimizerKind::adamw:
      return 2;
    case OptimizerKind::none:
    case OptimizerKind::sgd:
      break;
  }
  return 0;
}

bool counted_as_run(MemoryCategory c) {
  return c != MemoryCategory::parameter && c != MemoryCategory::gradient &&
         c != MemoryCategory::optimizer_state;
}

}  // namespace

FsdpParamLayout fsdp_param_layout(const std::string& name, const Shape& shape, int ranks) {
  if (ranks < 1)
    throw std::invalid_argument("fsdp: the number of ranks must be at least 1, got " +
                                std::to_string(ranks));
  FsdpParamLayout l{name, shape, 1, 0, 0};
  for (auto d : shape) l.numel *= d;
  const std::int64_t rows = shape.empty() ? 1 : shape[0];
  const std::int64_t rest = rows == 0 ? 0 : l.numel / rows;
  l.rows_per_rank = (rows + ranks - 1) / ranks;
  l.shard_numel = l.rows_per_rank * (shape.empty() ? 1 : rest);
  return l;
}

std::vector<FsdpUnit> fsdp_units(const Model& model, int ranks) {
  if (ranks < 1)
    throw std::invalid_argument("fsdp: the number of ranks must be at least 1, got " +
                                std::to_string(ranks));
  std::set<std::string> param_names;
  for (const auto& p : model.parameters)
    if (!p.is_buffer) param_names.insert(p.name);
  // Which modules' ops use each parameter.
  std::map<std::string, std::set<std::string>> users;
  std::set<std::string> owners;
  for (const auto& op : model.ops)
    for (const auto& in : op.inputs)
      if (param_names.count(in)) {
        users[in].insert(op.module);
        owners.insert(op.module);
      }
  // Parameter elements by the module that uses them (one module: a shared one counts nowhere).
  std::map<std::string, std::int64_t> used;
  for (const auto& p : model.parameters) {
    const auto it = users.find(p.name);
    if (it != users.end() && it->second.size() == 1) used[*it->second.begin()] += p.initial.numel();
  }
  std::vector<FsdpUnit> units;
  if (const Module* parent = block_parent(model, used))
    for (const auto& c : parent->children) {
      bool has = false;
      for (const auto& o : owners) has = has || inside(o, c->path);
      if (has) units.push_back({c->path, {}, 0, 0, c->first_op, c->end_op});
    }
  std::sort(units.begin(), units.end(),
            [](const FsdpUnit& a, const FsdpUnit& b) { return a.first_op < b.first_op; });
  units.push_back({"", {}, 0, 0, -1, -1});
  for (const auto& p : model.parameters) {
    if (p.is_buffer) continue;
    std::size_t unit = units.size() - 1;  // the root, unless one block alone uses it
    const auto it = users.find(p.name);
    if (it != users.end())
      for (std::size_t b = 0; b + 1 < units.size(); ++b) {
        const bool all_inside =
            std::all_of(it->second.begin(), it->second.end(),
                        [&](const auto& m) { return inside(m, units[b].path); });
        if (all_inside) unit = b;
      }
    FsdpUnit& u = units[unit];
    u.params.push_back(fsdp_param_layout(p.name, p.initial.shape(), ranks));
    u.numel += u.params.back().numel;
    u.shard_numel += u.params.back().shard_numel;
  }
  return units;
}

FsdpRankMemory fsdp_rank_memory(const Model& model, const Trace& trace,
                                const RunSettings& settings) {
  FsdpRankMemory r;
  r.ranks = std::max(1, settings.fsdp.ranks);
  r.settings = settings.fsdp;
  r.param_dtype = settings.param_dtype;
  r.units = fsdp_units(model, r.ranks);
  const std::size_t blocks = r.units.size() - 1;
  const std::int64_t pbytes = dtype_size(settings.param_dtype);
  const std::int64_t rbytes = dtype_size(settings.fsdp.reduce_dtype);

  // The unit of each step: its op's module inside a block, else the root.
  std::unordered_map<std::string, int> unit_of_op;
  for (const auto& op : model.ops) {
    int u = static_cast<int>(blocks);
    for (std::size_t b = 0; b < blocks; ++b)
      if (inside(op.module, r.units[b].path)) u = static_cast<int>(b);
    unit_of_op.emplace(op.name, u);
  }
  const std::int64_t steps = trace.step_count();
  std::vector<int> unit(static_cast<std::size_t>(steps), static_cast<int>(blocks));
  std::vector<std::int64_t> first_back(r.units.size(), -1), last_back(r.units.size(), -1);
  std::int64_t backward_end = -1;
  for (std::int64_t k = 0; k < steps; ++k) {
    const auto it = unit_of_op.find(trace.step_node(k));
    if (it != unit_of_op.end()) unit[static_cast<std::size_t>(k)] = it->second;
    const Phase ph = trace.step_phase(k);
    if (ph == Phase::backward || ph == Phase::recompute) {
      const auto u = static_cast<std::size_t>(unit[static_cast<std::size_t>(k)]);
      if (first_back[u] < 0) first_back[u] = k;
      last_back[u] = k;
      backward_end = k;
    }
  }
  // The root's post-backward hook runs when the whole backward is done.
  if (backward_end >= 0) {
    if (first_back[blocks] < 0) first_back[blocks] = backward_end;
    last_back[blocks] = backward_end;
  }

  std::int64_t buffers = 0, shards = 0;
  for (const auto& p : model.parameters)
    if (p.is_buffer) buffers += p.initial.nbytes();
  for (const auto& u : r.units) shards += u.shard_numel;
  r.states[static_cast<std::size_t>(FsdpCategory::sharded_parameters)] = shards * 4 + buffers;
  r.states[static_cast<std::size_t>(FsdpCategory::optimizer_state)] =
      optimizer_copies(settings.optimizer.kind) * shards * 4;

  // The run's own bytes (not its parameters, gradients or optimizer state), after each step
  // and at its highest within it.
  std::int64_t run = 0;
  const CategoryBytes initial = trace.initial_memory();
  for (std::size_t c = 0; c < kMemoryCategoryCount; ++c)
    if (counted_as_run(static_cast<MemoryCategory>(c))) run += initial[c];

  r.total_by_step.assign(static_cast<std::size_t>(steps), 0);
  r.gathered_by_step.assign(static_cast<std::size_t>(steps), {});
  std::vector<bool> forward_done(blocks, false);
  int last_forward_block = -1;
  std::int64_t all_numel = 0, run_at_optimizer = -1;
  for (const auto& u : r.units) all_numel += u.numel;
  const int root = static_cast<int>(blocks);
  std::vector<FsdpAllGatherBytes> ag;
  for (const auto& u : r.units) ag.push_back(fsdp_all_gather_bytes(u, r.ranks, r.param_dtype));
  // The unit whose flat all-gather output is held beyond its copy-out: in forward, kept until
  // the next unit's copy-out; in backward, the unit prefetched. -1: none.
  int forward_flat = -1, backward_flat = -1;
  int reduce_scatter_held = -1;  // the unit whose reduce-scatter input is kept
  bool root_unsharded = false;
  std::int64_t first_backward = -1;
  auto flat = [&](int x) {
    return x < 0 ? std::int64_t{0} : ag[static_cast<std::size_t>(x)].output;
  };
  for (std::int64_t k = 0; k < steps; ++k) {
    const std::int64_t run_before = run;
    std::int64_t run_peak = run;
    for (std::int64_t e = trace.first_event(k); e < trace.first_event(k + 1); ++e) {
      const TraceEvent ev = trace.event(e);
      const bool now = counted_as_run(ev.category);
      if (ev.kind == TraceEventKind::alloc && now) run += ev.bytes;
      if (ev.kind == TraceEventKind::free && now) run -= ev.bytes;
      if (ev.kind == TraceEventKind::recategorize && now != counted_as_run(ev.previous))
        run += now ? ev.bytes : -ev.bytes;
      run_peak = std::max(run_peak, run);
    }
    const Phase ph = trace.step_phase(k);
    // The run's optimizer steps over whole parameters in the param dtype; FSDP's steps over
    // the float32 shards: its temporaries scale by shard bytes over parameter bytes.
    std::int64_t shown = run, shown_peak = run_peak;
    const std::int64_t shown_before = run_before;
    if (ph == Phase::optimizer) {
      if (run_at_optimizer < 0) run_at_optimizer = run_before;
      const double scale = static_cast<double>(4 * shards) /
                           static_cast<double>(std::max<std::int64_t>(1, pbytes * all_numel));
      auto scaled = [&](std::int64_t v) {
        return run_at_optimizer +
               static_cast<std::int64_t>(static_cast<double>(v - run_at_optimizer) * scale);
      };
      shown = scaled(run);
      shown_peak = scaled(run_peak);
    }
    const int u = unit[static_cast<std::size_t>(k)];
    const bool in_block = u < static_cast<int>(blocks);
    const bool reshard = settings.fsdp.reshard_after_forward;
    // The units whose parameters are unsharded during the step (the root included), and the
    // all-gather moments of FSDP2's hooks before its op: what is gathered then and the flat
    // buffers held then (fsdp_all_gather.hpp), with the run's bytes before the op.
    std::set<int> gathered;
    std::vector<std::pair<std::set<int>, std::int64_t>> moments;
    const bool root_gathered = ph != Phase::optimizer && (backward_end < 0 || k <= backward_end);
    if (root_gathered) gathered.insert(root);
    if (ph == Phase::forward) {
      if (!root_unsharded) {
        // The root's pre_forward: its all-gather, then its output kept (more than one rank).
        moments.push_back({{}, ag[root].copy_in + ag[root].output});
        forward_flat = r.ranks > 1 ? root : -1;
        root_unsharded = true;
      }
      if (in_block && last_forward_block != u) {
        if (last_forward_block >= 0)
          forward_done[static_cast<std::size_t>(last_forward_block)] = true;
        std::set<int> before = gathered;
        if (!reshard)
          for (std::size_t b = 0; b < blocks; ++b)
            if (forward_done[b]) before.insert(static_cast<int>(b));
        // u's pre_forward: unshard() allocates its copy-in and flat output while the previous
        // unit's output is still kept; wait_for_unshard frees that one, then copies out.
        moments.push_back({before, flat(forward_flat) + ag[u].copy_in + ag[u].output});
        before.insert(u);
        moments.push_back({before, ag[u].output});
        forward_flat = r.ranks > 1 ? u : -1;
        last_forward_block = u;
      } else if (!in_block && last_forward_block >= 0) {
        forward_done[static_cast<std::size_t>(last_forward_block)] = true;
      }
      if (in_block) gathered.insert(u);
      if (!reshard)
        for (std::size_t b = 0; b < blocks; ++b)
          if (forward_done[b]) gathered.insert(static_cast<int>(b));
    } else if (ph == Phase::backward || ph == Phase::recompute) {
      forward_flat = -1;  // the root's post_forward freed the last one
      for (std::size_t b = 0; b < blocks; ++b) {
        const bool running = first_back[b] >= 0 && first_back[b] <= k && k <= last_back[b];
        const bool not_yet = first_back[b] < 0 || k < first_back[b];
        const bool hook = reshard && b == static_cast<std::size_t>(u) && k == first_back[b];
        if (running && !hook) gathered.insert(static_cast<int>(b));
        if (!reshard && not_yet && forward_done[b]) gathered.insert(static_cast<int>(b));
      }
      // The root's pre_backward prefetches the last block (the reverse of the post-forward
      // order, FSDPParamGroup._backward_prefetch); each block's the one before it.
      auto prefetch = [&](int target) {
        if (!reshard || target < 0) return;
        moments.push_back({gathered, ag[static_cast<std::size_t>(target)].copy_in +
                                         ag[static_cast<std::size_t>(target)].output});
        backward_flat = target;
      };
      if (first_backward < 0) {
        first_backward = k;
        prefetch(static_cast<int>(blocks) - 1);
      }
      if (in_block && k == first_back[static_cast<std::size_t>(u)]) {
        if (reshard) {
          // u's pre_backward: its all-gather unless prefetched, the copy-out, the output freed
          // at once (not in forward), then the previous block's all-gather prefetched.
          const std::int64_t other = backward_flat != u ? flat(backward_flat) : 0;
          if (backward_flat != u)
            moments.push_back({gathered, other + ag[u].copy_in + ag[u].output});
          gathered.insert(u);
          moments.push_back({gathered, other + ag[u].output});
          backward_flat = -1;
        }
        prefetch(u - 1);
      }
    } else {
      forward_flat = backward_flat = -1;
    }
    const std::int64_t steady_flat =
        ph == Phase::forward ? flat(forward_flat) : flat(backward_flat);

    // Gradients: a unit's unsharded ones (param dtype) from its first backward step to its
    // post_backward, then its float32 shard's. Its post_backward (_fsdp_param_group.py) frees
    // the previous unit's reduce-scatter input kept in comm_ctx.reduce_scatter_state, and
    // foreach_reduce (_fsdp_collectives.py) allocates its own input (each padded shard times
    // N, reduce dtype), copies the gradients in and frees them, then writes the output (one
    // shard, reduce dtype; in float32 it is the shard's gradient, in bfloat16 cast to a new
    // float32 one). The input is kept until the next post_backward; the root's final callback
    // frees the last one with the backward.
    std::int64_t grads_start = 0, grads_op = 0, sharded_start = 0, grads = 0, sharded_grads = 0;
    std::vector<int> reducing;
    for (std::size_t b = 0; b <= blocks; ++b) {
      const bool started = first_back[b] >= 0 && first_back[b] <= k;
      if (first_back[b] >= 0 && first_back[b] < k && k <= last_back[b])
        grads_start += r.units[b].numel;
      if (started && k < last_back[b]) grads += r.units[b].numel;
      if (started && k <= last_back[b]) grads_op += r.units[b].numel;
      if (last_back[b] >= 0 && last_back[b] < k) sharded_start += r.units[b].shard_numel;
      if (last_back[b] >= 0 && k >= last_back[b]) sharded_grads += r.units[b].shard_numel;
      if (last_back[b] == k) reducing.push_back(static_cast<int>(b));
    }
    auto rs_input = [&](int x) {
      return x < 0 ? std::int64_t{0}
                   : r.ranks * r.units[static_cast<std::size_t>(x)].shard_numel * rbytes;
    };
    const std::int64_t rs_start = rs_input(reduce_scatter_held);
    // What the rank holds with `g` gathered, `buffers` of all-gather buffers, `own` bytes of
    // the run's own, and the gradients and reduce-scatter buffers given.
    auto held = [&](const std::set<int>& g, std::int64_t buffers, std::int64_t own,
                    std::int64_t unsharded_grads, std::int64_t shard_grads, std::int64_t rs) {
      FsdpBytes b = r.states;
      std::int64_t unsharded = 0;
      for (int x : g) unsharded += ag[static_cast<std::size_t>(x)].unsharded;
      b[static_cast<std::size_t>(FsdpCategory::unsharded_parameters)] = unsharded;
      b[static_cast<std::size_t>(FsdpCategory::all_gather_buffers)] = buffers;
      b[static_cast<std::size_t>(FsdpCategory::unsharded_gradients)] = unsharded_grads * pbytes;
      b[static_cast<std::size_t>(FsdpCategory::sharded_gradients)] = shard_grads * 4;
      b[static_cast<std::size_t>(FsdpCategory::reduce_scatter)] = rs;
      b[static_cast<std::size_t>(FsdpCategory::activations)] = own;
      return b;
    };
    // The post_backward moments, after the step's op: gathered blocks already resharded.
    std::set<int> after_reshard = gathered;
    std::int64_t post_grads = grads, post_sharded = sharded_start;
    for (int x : reducing) post_grads += r.units[static_cast<std::size_t>(x)].numel;
    std::vector<FsdpBytes> posts;
    for (int x : reducing) {
      after_reshard.erase(x);
      const std::int64_t shard = r.units[static_cast<std::size_t>(x)].shard_numel;
      // Copy-in: the input beside the unsharded gradients (the previous input freed).
      posts.push_back(
          held(after_reshard, steady_flat, shown, post_grads, post_sharded, rs_input(x)));
      post_grads -= r.units[static_cast<std::size_t>(x)].numel;
      post_sharded += shard;
      // Output: beside the input; in bfloat16 with its float32 cast (the shard's gradient).
      posts.push_back(held(after_reshard, steady_flat, shown, post_grads, post_sharded,
                           rs_input(x) + (rbytes == 4 ? 0 : shard * rbytes)));
      reduce_scatter_held = x;
    }
    if (k == backward_end) reduce_scatter_held = -1;  // the root's final callback
    const std::int64_t rs_after = rs_input(reduce_scatter_held);
    r.total_by_step[static_cast<std::size_t>(k)] =
        fsdp_total(held(gathered, steady_flat, shown, grads, sharded_grads, rs_after));
    // The step's high-water mark: its op's (the input kept from before), the hooks' before it,
    // the post_backward's after it.
    FsdpBytes high = held(gathered, steady_flat, shown_peak, grads_op, sharded_start, rs_start);
    for (const auto& [g, buffers] : moments) {
      const FsdpBytes at = held(g, buffers, shown_before, grads_start, sharded_start, rs_start);
      if (fsdp_total(at) > fsdp_total(high)) high = at;
    }
    for (const FsdpBytes& at : posts)
      if (fsdp_total(at) > fsdp_total(high)) high = at;
    r.timeline.push(high);
    gathered.erase(root);
    r.gathered_by_step[static_cast<std::size_t>(k)].assign(gathered.begin(), gathered.end());
    if (k == trace.forward_end()) forward_flat = -1;
  }
  r.timeline.ranks = r.ranks;
  r.peak_bytes = r.timeline.peak_bytes;
  r.peak_step = r.timeline.peak_step;
  if (r.peak_step >= 0) r.at_peak = r.timeline.by_step[static_cast<std::size_t>(r.peak_step)];
  return r;
}

FsdpSummary fsdp_summary(const FsdpRankMemory& m, const Trace& trace) {
  FsdpSummary s;
  s.ranks = m.ranks;
  s.settings = m.settings;
  s.param_dtype = m.param_dtype;
  s.blocks = m.units.empty() ? 0 : m.units.size() - 1;
  s.peak_bytes = m.peak_bytes;
  s.peak_step = m.peak_step;
  s.at_peak = m.at_peak;
  for (const auto& u : m.units) s.parameters += u.numel;
  if (m.peak_step >= 0) {
    s.peak_phase = phase_name(trace.step_phase(m.peak_step));
    s.peak_node = trace.step_node(m.peak_step);
  }
  return s;
}

std::string fsdp_summary_text(const FsdpSummary& s) {
  auto bytes = [](std::int64_t b) {
    char buf[64];
    const double gib = static_cast<double>(b) / static_cast<double>(std::int64_t{1} << 30);
    std::snprintf(buf, sizeof buf, "%10.2f GiB %16lld bytes", gib, static_cast<long long>(b));
    return std::string(buf);
  };
  std::string t =
      "per rank   FSDP2 on " + std::to_string(s.ranks) + " rank" + (s.ranks == 1 ? "" : "s") +
      ": fully_shard on " + std::to_string(s.blocks) + " blocks and the root, param_dtype " +
      dtype_name(s.param_dtype) + ", reduce_dtype " + dtype_name(s.settings.reduce_dtype) +
      ", reshard_after_forward " + (s.settings.reshard_after_forward ? "true" : "false") + "\n";
  t += "           " + std::string(kFsdpNotMeasured) + "\n";
  t += "  peak " + bytes(s.peak_bytes) + " at step " + std::to_string(s.peak_step) + ", " +
       s.peak_phase + (s.peak_node.empty() ? "" : " (" + s.peak_node + ")") + "\n";
  for (std::size_t c = 0; c < kFsdpCategoryCount; ++c) {
    std::string name = fsdp_category_name(static_cast<FsdpCategory>(c));
    name.resize(22, ' ');
    t += "    " + name + bytes(s.at_peak[c]) + "\n";
  }
  return t;
}

}  // namespace ckpt
