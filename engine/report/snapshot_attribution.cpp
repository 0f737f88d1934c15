#include "engine/report/snapshot_attribution.hpp"

namespace ckpt {

const AllocationOwner* SnapshotAttribution::owner(const MeasuredAllocation& a) const {
  if (a.alloc_event < 0 || a.alloc_event >= static_cast<std::int64_t>(by_event.size()))
    return nullptr;
  const AllocationOwner& o = by_event[static_cast<std::size_t>(a.alloc_event)];
  return o.matched ? &o : nullptr;
}

SnapshotAttribution attribute_snapshot(const MemorySnapshot& s, const MeasuredTimeline& m,
                                       const Trace& predicted, const Model& model,
                                       std::int64_t window) {
  SnapshotAttribution out;
  const auto d = static_cast<std::size_t>(m.device);
  if (d >= s.device_traces.size()) return out;
  const auto& events = s.device_traces[d];
  out.by_event.resize(events.size());
  // The engine's allocations in order: their bytes and steps.
  std::vector<std::pair<std::int64_t, std::int64_t>> engine;  // bytes, step
  for (std::int64_t i = 0; i < predicted.event_count(); ++i) {
    const TraceEvent e = predicted.event(i);
    if (e.kind == TraceEventKind::alloc && e.step >= 0) engine.emplace_back(e.bytes, e.step);
  }
  // Parameters first, each with the deepest module that uses it.
  std::vector<std::pair<std::int64_t, const ParameterInfo*>> params;
  for (const ParameterInfo& p : model.parameters) params.emplace_back(p.initial.nbytes(), &p);
  auto owner_of_parameter = [&](const std::string& name) {
    std::string best;
    bool found = false;
    for (const Module* mod : model.all_modules())
      for (const auto& p : mod->parameters)
        if (p == name && (!found || mod->path.size() > best.size())) {
          best = mod->path;
          found = true;
        }
    return best;
  };
  std::size_t next_param = 0, next = 0;
  const auto w = static_cast<std::size_t>(window);
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (events[i].action != SnapshotAction::alloc) continue;
    ++out.allocs;
    AllocationOwner& o = out.by_event[i];
    for (std::size_t k = next_param; k < std::min(params.size(), next_param + w); ++k) {
      if (params[k].first != events[i].size) continue;
      o = {true, true, -1, params[k].second->name, owner_of_parameter(params[k].second->name)};
      ++out.parameters;
      next_param = k + 1;
      break;
    }
    for (std::size_t k = next; !o.matched && k < std::min(engine.size(), next + w); ++k) {
      if (engine[k].first != events[i].size) continue;
      o.matched = true;
      o.step = engine[k].second;
      o.node = predicted.step_node(o.step);
      if (const std::int64_t op = model.op_index(o.node); op >= 0)
        o.module = model.ops[static_cast<std::size_t>(op)].module;
      next = k + 1;
    }
    if (o.matched) ++out.matched;
  }
  return out;
}

}  // namespace ckpt
