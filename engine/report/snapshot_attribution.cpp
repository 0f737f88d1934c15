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

OverlayCurve allocated_curve_on_steps(const MeasuredTimeline& m, const SnapshotAttribution& a,
                                      const Trace& predicted) {
  OverlayCurve c = allocated_curve(m, CurveBase::above_start);
  const double steps = static_cast<double>(predicted.step_count());
  // Anchors: (event, x of its twin's step), in event order; steps only grow along them.
  std::vector<std::pair<std::size_t, double>> anchors;
  for (std::size_t i = 0; i < a.by_event.size() && i < m.allocated.size(); ++i) {
    const AllocationOwner& o = a.by_event[i];
    if (o.matched && !o.parameter && steps > 0)
      anchors.emplace_back(i, (static_cast<double>(o.step) + 0.5) / steps);
  }
  if (anchors.size() < 2) return c;
  // c.x[0] is the start; c.x[i + 1] is after event i.
  const std::size_t n = m.allocated.size();
  std::size_t k = 0;
  for (std::size_t i = 0; i < n; ++i) {
    while (k + 1 < anchors.size() && anchors[k + 1].first <= i) ++k;
    double x;
    if (i <= anchors.front().first) {
      x = anchors.front().second;
    } else if (k + 1 < anchors.size()) {
      const auto [e0, x0] = anchors[k];
      const auto [e1, x1] = anchors[k + 1];
      x = x0 + (x1 - x0) * static_cast<double>(i - e0) / static_cast<double>(e1 - e0);
    } else {
      const auto [e0, x0] = anchors.back();
      x = x0 + (1 - x0) * static_cast<double>(i - e0) / static_cast<double>(n - e0);
    }
    c.x[i + 1] = x;
  }
  c.x[0] = 0;
  if (m.peak_allocated_event >= 0)
    c.peak_x = c.x[static_cast<std::size_t>(m.peak_allocated_event) + 1];
  return c;
}

}  // namespace ckpt
