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
  std::int64_t rng_bytes = 0;       // RNG state stashed by this checkpoint itself
  std::int64_t host_rng_bytes = 0;  // the same, in host memory (CUDA's semantics)
};
}  // namespace

struct Recorder::State {
  CategoryBytes live{};
  std::int64_t total = 0;
  std::int64_t t0 = 0;
  std::int64_t step_begin_ns = 0;
  std::vector<std::uint32_t> label_map;  // context LabelId -> trace label id (0: unmapped)
  std::unordered_map<AllocationId, LiveAllocation> allocations;
  // context LabelId of a tensor's name -> its index in the trace's tensors (kNoTensor: none
  // yet). By id, not by name: hashing the names was 7% of HeavyModel's step.
  std::vector<std::uint32_t> tensor_of_label;
  std::vector<TensorRecording> tensors;
  std::vector<OpenSpan> spans;
  int checkpoint_depth = 0;

  // One handler per kind of event, each adding it to the trace `d`.
  struct Event {
    const ExecutionContext& context;
    Trace::Data& d;
    const RunEvent& e;
    std::int64_t step;  // the step it happens in (-1: before the first)
  };
  std::uint32_t label(const Event& ev, LabelId id);
  std::uint32_t add_event(const Event& ev, TraceEventKind kind, MemoryCategory to,
                          MemoryCategory from);
  void move(MemoryCategory c, std::int64_t bytes);
  void step_begin(const Event& ev);
  void alloc(const Event& ev);
  void release(const Event& ev);
  void recategorize(const Event& ev);
  void tag(const Event& ev);
  void span_begin(const Event& ev);
  void span_end(const Event& ev);
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

std::uint32_t Recorder::State::label(const Event& ev, LabelId id) {
  return map_label(ev.context, label_map, ev.d.labels, id);
}

std::uint32_t Recorder::State::add_event(const Event& ev, TraceEventKind kind, MemoryCategory to,
                                         MemoryCategory from) {
  Trace::Data& d = ev.d;
  d.events.push_back(PackedEvent::make(kind, to, from, ev.e.bytes, ev.e.allocation));
  if (d.steps.empty()) d.base_events = static_cast<std::uint32_t>(d.events.size());
  return static_cast<std::uint32_t>(d.events.size() - 1);
}

void Recorder::State::move(MemoryCategory c, std::int64_t bytes) {
  live[static_cast<std::size_t>(c)] += bytes;
  total += bytes;
}

void Recorder::State::step_begin(const Event& ev) {
  Trace::Data& d = ev.d;
  const RunEvent& e = ev.e;
  if (ev.step >= 0) {
    d.total_after.push_back(total);
    if ((ev.step + 1) % kSnapshotEvery == 0) d.snapshots.push_back(live);
  }
  if (d.steps.empty()) t0 = e.time_ns;
  StepRecord r;
  r.op = label(ev, e.op);
  r.node = label(ev, e.node);
  r.segment = spans.empty() ? 0 : spans.back().segment;
  r.first_event = static_cast<std::uint32_t>(d.events.size());
  r.start_ns = e.time_ns - t0;
  r.phase = e.phase;
  d.steps.push_back(r);
  step_begin_ns = e.time_ns;
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
    case Phase::optimizer:
      ++d.counts.optimizer;
      break;
    case Phase::setup:
      break;
  }
}

void Recorder::State::alloc(const Event& ev) {
  Trace::Data& d = ev.d;
  const RunEvent& e = ev.e;
  move(e.category, e.bytes);
  LiveAllocation a;
  a.category = e.category;
  a.bytes = e.bytes;
  a.alloc_event = add_event(ev, TraceEventKind::alloc, e.category, e.category);
  allocations[e.allocation] = std::move(a);
  if (e.category == MemoryCategory::rng_state && !spans.empty() &&
      spans.back().kind == SpanKind::checkpoint)
    spans.back().rng_bytes += e.bytes;
  if (total > d.peak.bytes) {
    d.peak.bytes = total;
    d.peak.step = ev.step;
    d.peak.by_category = live;
  }
}

void Recorder::State::release(const Event& ev) {
  Trace::Data& d = ev.d;
  const RunEvent& e = ev.e;
  move(e.category, -e.bytes);
  const auto idx = add_event(ev, TraceEventKind::free, e.category, e.category);
  auto it = allocations.find(e.allocation);
  if (it == allocations.end()) return;
  if (!it->second.tensors.empty()) d.events[idx].tensor = it->second.tensors.front();
  for (auto t : it->second.tensors) {
    // Dropped: a checkpointed segment's intermediate gone before the forward ended.
    const bool dropped = e.phase == Phase::forward && tensors[t].in_segment;
    transition(d.tensors[t], ev.step, dropped ? ActivationState::dropped : ActivationState::freed);
    tensors[t].attached = false;
  }
  allocations.erase(it);
}

void Recorder::State::recategorize(const Event& ev) {
  Trace::Data& d = ev.d;
  const RunEvent& e = ev.e;
  move(e.previous, -e.bytes);
  move(e.category, e.bytes);
  const auto idx = add_event(ev, TraceEventKind::recategorize, e.category, e.previous);
  auto it = allocations.find(e.allocation);
  if (it == allocations.end()) return;
  LiveAllocation& a = it->second;
  a.category = e.category;
  if (e.category == MemoryCategory::activation && a.saved_at_step < 0 && ev.step >= 0) {
    a.saved_at_step = ev.step;
    a.saved_by_op = d.steps[static_cast<std::size_t>(ev.step)].op;
  }
  if (!a.tensors.empty()) d.events[idx].tensor = a.tensors.front();
  for (auto t : a.tensors) {
    TensorLife& life = d.tensors[t];
    if (e.category == MemoryCategory::checkpoint_input)
      transition(life, ev.step, ActivationState::checkpoint_input);
    if (life.saved_at_step < 0 && a.saved_at_step >= 0) {
      life.saved_at_step = a.saved_at_step;
      life.saved_by_op = d.label(a.saved_by_op);
    }
  }
}

void Recorder::State::tag(const Event& ev) {
  Trace::Data& d = ev.d;
  const RunEvent& e = ev.e;
  if (tensor_of_label.size() <= e.text) tensor_of_label.resize(e.text + 1, kNoTensor);
  std::uint32_t& slot = tensor_of_label[e.text];
  if (slot == kNoTensor) {
    slot = static_cast<std::uint32_t>(d.tensors.size());
    TensorLife life;
    life.name = ev.context.label(e.text);
    d.tensors.push_back(std::move(life));
    tensors.emplace_back();
  }
  const std::uint32_t t = slot;
  TensorRecording& rec = tensors[t];
  if (rec.attached && rec.allocation == e.allocation) return;  // same name, same storage
  if (rec.attached) {
    auto old = allocations.find(rec.allocation);
    if (old != allocations.end()) std::erase(old->second.tensors, t);
  }
  auto it = allocations.find(e.allocation);
  if (it == allocations.end()) {
    // Made before the recorder attached: its bytes are unknown, its category is not.
    LiveAllocation a;
    try {
      a.category = ev.context.ledger().category_of(e.allocation);
    } catch (const std::logic_error&) {
      return;  // not live any more: nothing to follow
    }
    it = allocations.emplace(e.allocation, std::move(a)).first;
  }
  LiveAllocation& a = it->second;
  a.tensors.push_back(t);
  if (a.alloc_event != kNoTensor && d.events[a.alloc_event].tensor == kNoTensor)
    d.events[a.alloc_event].tensor = t;
  rec.allocation = e.allocation;
  rec.attached = true;
  rec.in_segment = e.phase == Phase::forward && checkpoint_depth > 0;
  TensorLife& life = d.tensors[t];
  life.bytes = a.bytes;
  if (e.node) life.node = ev.context.label(e.node);
  if (life.saved_at_step < 0 && a.saved_at_step >= 0) {
    life.saved_at_step = a.saved_at_step;
    life.saved_by_op = d.label(a.saved_by_op);
  }
  const auto state = e.phase == Phase::recompute ? ActivationState::recomputed
                     : a.category == MemoryCategory::checkpoint_input
                         ? ActivationState::checkpoint_input
                         : ActivationState::kept;
  transition(life, ev.step, state);
}

void Recorder::State::span_begin(const Event& ev) {
  const bool ck = ev.e.kind == RunEvent::Kind::checkpoint_begin;
  spans.push_back({ck ? SpanKind::checkpoint : SpanKind::recompute, label(ev, ev.e.text),
                   static_cast<std::int64_t>(ev.d.steps.size())});
  if (ck) ++checkpoint_depth;
}

void Recorder::State::span_end(const Event& ev) {
  Trace::Data& d = ev.d;
  const bool ck = ev.e.kind == RunEvent::Kind::checkpoint_end;
  const auto kind = ck ? SpanKind::checkpoint : SpanKind::recompute;
  const auto segment = label(ev, ev.e.text);
  // The innermost open span of that kind and segment (robust to a missing end after an
  // exception unwound an inner span).
  auto it = std::find_if(spans.rbegin(), spans.rend(),
                         [&](const OpenSpan& o) { return o.kind == kind && o.segment == segment; });
  if (it == spans.rend()) return;
  const OpenSpan open = *it;
  spans.erase(std::next(it).base(), spans.end());
  checkpoint_depth =
      static_cast<int>(std::count_if(spans.begin(), spans.end(), [](const OpenSpan& o) {
        return o.kind == SpanKind::checkpoint;
      }));
  const auto end = static_cast<std::int64_t>(d.steps.size());
  if (ck)
    d.checkpoints.push_back(
        {d.label(segment), open.begin_step, end, open.rng_bytes, open.host_rng_bytes});
  else
    d.recomputes.push_back({d.label(segment), open.begin_step, end});
}

void Recorder::on_event(const RunEvent& e) {
  Trace::Data& d = *d_;
  State& s = *s_;
  const State::Event ev{context_, d, e, static_cast<std::int64_t>(d.steps.size()) - 1};
  switch (e.kind) {
    case RunEvent::Kind::step_begin:
      s.step_begin(ev);
      break;
    case RunEvent::Kind::step_end:
      if (!d.steps.empty())
        d.steps.back().duration_ns = static_cast<float>(e.time_ns - s.step_begin_ns);
      break;
    case RunEvent::Kind::alloc:
      s.alloc(ev);
      break;
    case RunEvent::Kind::free:
      s.release(ev);
      break;
    case RunEvent::Kind::recategorize:
      s.recategorize(ev);
      break;
    case RunEvent::Kind::tag:
      s.tag(ev);
      break;
    case RunEvent::Kind::checkpoint_begin:
    case RunEvent::Kind::recompute_begin:
      s.span_begin(ev);
      break;
    case RunEvent::Kind::checkpoint_end:
    case RunEvent::Kind::recompute_end:
      s.span_end(ev);
      break;
    case RunEvent::Kind::message:
      d.messages.push_back({ev.step, e.severity, context_.label(e.text)});
      break;
    case RunEvent::Kind::replayed:
      if (!d.steps.empty()) d.steps.back().replayed = true;
      break;
    case RunEvent::Kind::host_bytes:
      // Host memory is no device event: it belongs to the checkpoint that stashed it.
      if (!s.spans.empty() && s.spans.back().kind == SpanKind::checkpoint)
        s.spans.back().host_rng_bytes += e.bytes;
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
      d.checkpoints.push_back(
          {d.label(it->segment), it->begin_step, end, it->rng_bytes, it->host_rng_bytes});
    else
      d.recomputes.push_back({d.label(it->segment), it->begin_step, end});
  }
  s.spans.clear();
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
