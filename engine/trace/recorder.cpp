#include <algorithm>
#include <numeric>
#include <unordered_map>

#include "engine/trace/trace.hpp"
#include "engine/trace/trace_data.hpp"

namespace ckpt {

namespace {
struct LiveAllocation {
  MemoryCategory category = MemoryCategory::temporary;
  std::int64_t bytes = 0;
  std::uint32_t alloc_event = kNoTensor;  // index of its alloc event (kNoTensor: none)
  std::vector<std::uint32_t> tensors;     // names it carries (a view adds one)
  std::int64_t saved_at_step = -1;        // when an op saved it for backward (usually
  std::uint32_t saved_by_op = 0;          // before the runner tags it)
};

struct TensorRecording {
  AllocationId allocation = 0;
  bool attached = false;    // still follows a live allocation
  bool in_segment = false;  // made inside a checkpointed segment during the forward
};

enum class SpanKind : std::uint8_t { checkpoint, recompute };
struct OpenSpan {
  SpanKind kind;
  std::uint32_t segment;
  std::int64_t begin_step;
  std::int64_t rng_bytes = 0;  // RNG state stashed by this checkpoint itself
};
}  // namespace

struct Recorder::State {
  CategoryBytes live{};
  std::int64_t total = 0;
  std::int64_t t0 = 0;
  std::int64_t step_begin_ns = 0;
  std::vector<std::uint32_t> label_map;  // context LabelId -> trace label id (0: unmapped)
  std::unordered_map<AllocationId, LiveAllocation> allocations;
  std::unordered_map<std::string, std::uint32_t> names;
  std::vector<TensorRecording> tensors;
  std::vector<OpenSpan> spans;
  int checkpoint_depth = 0;
};

Recorder::Recorder(ExecutionContext& context)
    : context_(context), d_(std::make_unique<Trace::Data>()), s_(std::make_unique<State>()) {
  d_->initial = context.ledger().live_by_category();
  s_->live = d_->initial;
  s_->total = std::accumulate(s_->live.begin(), s_->live.end(), std::int64_t{0});
  d_->peak.bytes = s_->total;
  d_->peak.by_category = s_->live;
  context_.add_listener(this);
}

Recorder::~Recorder() {
  detach();
}

void Recorder::detach() {
  if (!attached_) return;
  context_.remove_listener(this);
  attached_ = false;
}

namespace {

std::uint32_t map_label(const ExecutionContext& context, std::vector<std::uint32_t>& map,
                        std::vector<std::string>& labels, LabelId id) {
  if (id == 0) return 0;
  if (id >= map.size()) map.resize(id + 1, 0);
  if (map[id] == 0) {
    labels.push_back(context.label(id));
    map[id] = static_cast<std::uint32_t>(labels.size() - 1);
  }
  return map[id];
}

// Records `state` for tensor t at `step`; a later change in the same step replaces it.
void transition(TensorLife& t, std::int64_t step, ActivationState state) {
  auto& tr = t.transitions;
  if (!tr.empty() && tr.back().first == step) {
    tr.back().second = state;
    if (tr.size() >= 2 && tr[tr.size() - 2].second == state) tr.pop_back();
    return;
  }
  if (!tr.empty() && tr.back().second == state) return;
  tr.emplace_back(step, state);
}

}  // namespace

void Recorder::on_event(const RunEvent& e) {
  Trace::Data& d = *d_;
  State& s = *s_;
  const std::int64_t step = static_cast<std::int64_t>(d.steps.size()) - 1;
  auto label = [&](LabelId id) { return map_label(context_, s.label_map, d.labels, id); };
  auto finalize_step = [&] {
    if (step < 0) return;
    d.total_after.push_back(s.total);
    if ((step + 1) % kSnapshotEvery == 0) d.snapshots.push_back(s.live);
  };
  auto add_event = [&](TraceEventKind kind, MemoryCategory to, MemoryCategory from) {
    d.events.push_back(PackedEvent::make(kind, to, from, e.bytes, e.allocation));
    if (d.steps.empty()) d.base_events = static_cast<std::uint32_t>(d.events.size());
    return static_cast<std::uint32_t>(d.events.size() - 1);
  };
  auto move = [&](MemoryCategory c, std::int64_t bytes) {
    s.live[static_cast<std::size_t>(c)] += bytes;
    s.total += bytes;
  };

  switch (e.kind) {
    case RunEvent::Kind::step_begin: {
      finalize_step();
      if (d.steps.empty()) s.t0 = e.time_ns;
      StepRecord r;
      r.op = label(e.op);
      r.node = label(e.node);
      r.segment = s.spans.empty() ? 0 : s.spans.back().segment;
      r.first_event = static_cast<std::uint32_t>(d.events.size());
      r.start_ns = e.time_ns - s.t0;
      r.phase = e.phase;
      d.steps.push_back(r);
      s.step_begin_ns = e.time_ns;
      const auto k = static_cast<std::int64_t>(d.steps.size()) - 1;
      switch (e.phase) {
        case Phase::forward:
          ++d.counts.forward;
          d.forward_end = k;
          break;
        case Phase::recompute:
          ++d.counts.recompute;
          break;
        case Phase::backward:
          ++d.counts.backward;
          break;
        case Phase::setup:
          break;
      }
      break;
    }
    case RunEvent::Kind::step_end:
      if (!d.steps.empty())
        d.steps.back().duration_ns = static_cast<float>(e.time_ns - s.step_begin_ns);
      break;
    case RunEvent::Kind::alloc: {
      move(e.category, e.bytes);
      LiveAllocation a;
      a.category = e.category;
      a.bytes = e.bytes;
      a.alloc_event = add_event(TraceEventKind::alloc, e.category, e.category);
      s.allocations[e.allocation] = std::move(a);
      if (e.category == MemoryCategory::rng_state && !s.spans.empty() &&
          s.spans.back().kind == SpanKind::checkpoint)
        s.spans.back().rng_bytes += e.bytes;
      if (s.total > d.peak.bytes) {
        d.peak.bytes = s.total;
        d.peak.step = step;
        d.peak.by_category = s.live;
      }
      break;
    }
    case RunEvent::Kind::free: {
      move(e.category, -e.bytes);
      const auto idx = add_event(TraceEventKind::free, e.category, e.category);
      auto it = s.allocations.find(e.allocation);
      if (it == s.allocations.end()) break;
      if (!it->second.tensors.empty()) d.events[idx].tensor = it->second.tensors.front();
      for (auto t : it->second.tensors) {
        // Dropped: a checkpointed segment's intermediate gone before the forward ended.
        const bool dropped = e.phase == Phase::forward && s.tensors[t].in_segment;
        transition(d.tensors[t], step, dropped ? ActivationState::dropped : ActivationState::freed);
        s.tensors[t].attached = false;
      }
      s.allocations.erase(it);
      break;
    }
    case RunEvent::Kind::recategorize: {
      move(e.previous, -e.bytes);
      move(e.category, e.bytes);
      const auto idx = add_event(TraceEventKind::recategorize, e.category, e.previous);
      auto it = s.allocations.find(e.allocation);
      if (it == s.allocations.end()) break;
      LiveAllocation& a = it->second;
      a.category = e.category;
      if (e.category == MemoryCategory::activation && a.saved_at_step < 0 && step >= 0) {
        a.saved_at_step = step;
        a.saved_by_op = d.steps[static_cast<std::size_t>(step)].op;
      }
      if (!a.tensors.empty()) d.events[idx].tensor = a.tensors.front();
      for (auto t : a.tensors) {
        TensorLife& life = d.tensors[t];
        if (e.category == MemoryCategory::checkpoint_input)
          transition(life, step, ActivationState::checkpoint_input);
        if (life.saved_at_step < 0 && a.saved_at_step >= 0) {
          life.saved_at_step = a.saved_at_step;
          life.saved_by_op = d.label(a.saved_by_op);
        }
      }
      break;
    }
    case RunEvent::Kind::tag: {
      const std::string& name = context_.label(e.text);
      auto [nit, is_new] = s.names.try_emplace(name, static_cast<std::uint32_t>(d.tensors.size()));
      const std::uint32_t t = nit->second;
      if (is_new) {
        TensorLife life;
        life.name = name;
        d.tensors.push_back(std::move(life));
        s.tensors.emplace_back();
      }
      TensorRecording& rec = s.tensors[t];
      if (rec.attached && rec.allocation == e.allocation) break;  // same name, same storage
      if (rec.attached) {
        auto old = s.allocations.find(rec.allocation);
        if (old != s.allocations.end()) std::erase(old->second.tensors, t);
      }
      auto it = s.allocations.find(e.allocation);
      if (it == s.allocations.end()) {
        // Made before the recorder attached: its bytes are unknown, its category is not.
        LiveAllocation a;
        try {
          a.category = context_.ledger().category_of(e.allocation);
        } catch (const std::logic_error&) {
          break;  // not live any more: nothing to follow
        }
        it = s.allocations.emplace(e.allocation, std::move(a)).first;
      }
      LiveAllocation& a = it->second;
      a.tensors.push_back(t);
      if (a.alloc_event != kNoTensor && d.events[a.alloc_event].tensor == kNoTensor)
        d.events[a.alloc_event].tensor = t;
      rec.allocation = e.allocation;
      rec.attached = true;
      rec.in_segment = e.phase == Phase::forward && s.checkpoint_depth > 0;
      TensorLife& life = d.tensors[t];
      life.bytes = a.bytes;
      if (e.node) life.node = context_.label(e.node);
      if (life.saved_at_step < 0 && a.saved_at_step >= 0) {
        life.saved_at_step = a.saved_at_step;
        life.saved_by_op = d.label(a.saved_by_op);
      }
      const auto state = e.phase == Phase::recompute ? ActivationState::recomputed
                         : a.category == MemoryCategory::checkpoint_input
                             ? ActivationState::checkpoint_input
                             : ActivationState::kept;
      transition(life, step, state);
      break;
    }
    case RunEvent::Kind::checkpoint_begin:
    case RunEvent::Kind::recompute_begin: {
      const bool ck = e.kind == RunEvent::Kind::checkpoint_begin;
      s.spans.push_back({ck ? SpanKind::checkpoint : SpanKind::recompute, label(e.text),
                         static_cast<std::int64_t>(d.steps.size())});
      if (ck) ++s.checkpoint_depth;
      break;
    }
    case RunEvent::Kind::checkpoint_end:
    case RunEvent::Kind::recompute_end: {
      const bool ck = e.kind == RunEvent::Kind::checkpoint_end;
      const auto kind = ck ? SpanKind::checkpoint : SpanKind::recompute;
      const auto segment = label(e.text);
      // The innermost open span of that kind and segment (robust to a missing end after an
      // exception unwound an inner span).
      auto it = std::find_if(s.spans.rbegin(), s.spans.rend(), [&](const OpenSpan& o) {
        return o.kind == kind && o.segment == segment;
      });
      if (it == s.spans.rend()) break;
      const OpenSpan open = *it;
      s.spans.erase(std::next(it).base(), s.spans.end());
      s.checkpoint_depth =
          static_cast<int>(std::count_if(s.spans.begin(), s.spans.end(), [](const OpenSpan& o) {
            return o.kind == SpanKind::checkpoint;
          }));
      const auto end = static_cast<std::int64_t>(d.steps.size());
      if (ck)
        d.checkpoints.push_back({d.label(segment), open.begin_step, end, open.rng_bytes});
      else
        d.recomputes.push_back({d.label(segment), open.begin_step, end});
      break;
    }
    case RunEvent::Kind::message:
      d.messages.push_back({step, e.severity, context_.label(e.text)});
      break;
  }
}

Trace Recorder::finish() {
  detach();
  Trace::Data& d = *d_;
  State& s = *s_;
  if (d.total_after.size() < d.steps.size()) {
    const auto step = static_cast<std::int64_t>(d.steps.size()) - 1;
    d.total_after.push_back(s.total);
    if ((step + 1) % kSnapshotEvery == 0) d.snapshots.push_back(s.live);
  }
  // Spans still open belong to a run that failed inside them: close them at the end.
  const auto end = static_cast<std::int64_t>(d.steps.size());
  for (auto it = s.spans.rbegin(); it != s.spans.rend(); ++it) {
    if (it->kind == SpanKind::checkpoint)
      d.checkpoints.push_back({d.label(it->segment), it->begin_step, end, it->rng_bytes});
    else
      d.recomputes.push_back({d.label(it->segment), it->begin_step, end});
  }
  s.spans.clear();
  d.tensors_by_name.resize(d.tensors.size());
  std::iota(d.tensors_by_name.begin(), d.tensors_by_name.end(), 0u);
  std::sort(
      d.tensors_by_name.begin(), d.tensors_by_name.end(),
      [&](std::uint32_t a, std::uint32_t b) { return d.tensors[a].name < d.tensors[b].name; });
  for (auto& t : d.tensors) t.transitions.shrink_to_fit();
  d.steps.shrink_to_fit();
  d.total_after.shrink_to_fit();
  d.events.shrink_to_fit();
  d.snapshots.shrink_to_fit();
  d.tensors.shrink_to_fit();
  Trace trace;
  trace.d_ = std::move(d_);
  d_ = std::make_unique<Trace::Data>();
  s_ = std::make_unique<State>();
  return trace;
}

}  // namespace ckpt
