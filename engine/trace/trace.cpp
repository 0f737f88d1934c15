#include "engine/trace/trace.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "engine/trace/trace_data.hpp"

namespace ckpt {

const char* activation_state_name(ActivationState s) {
  switch (s) {
    case ActivationState::pending:
      return "pending";
    case ActivationState::kept:
      return "kept";
    case ActivationState::dropped:
      return "dropped";
    case ActivationState::checkpoint_input:
      return "checkpoint input";
    case ActivationState::recomputed:
      return "recomputed";
    case ActivationState::freed:
      return "freed";
  }
  return "?";
}

const char* trace_event_kind_name(TraceEventKind k) {
  switch (k) {
    case TraceEventKind::alloc:
      return "alloc";
    case TraceEventKind::free:
      return "free";
    case TraceEventKind::recategorize:
      return "recategorize";
  }
  return "?";
}

void Trace::Data::apply(std::uint32_t begin, std::uint32_t end, CategoryBytes& bytes) const {
  for (std::uint32_t i = begin; i < end; ++i) {
    const PackedEvent& e = events[i];
    const auto b = e.bytes();
    switch (e.kind()) {
      case TraceEventKind::alloc:
        bytes[static_cast<std::size_t>(e.category())] += b;
        break;
      case TraceEventKind::free:
        bytes[static_cast<std::size_t>(e.category())] -= b;
        break;
      case TraceEventKind::recategorize:
        bytes[static_cast<std::size_t>(e.previous())] -= b;
        bytes[static_cast<std::size_t>(e.category())] += b;
        break;
    }
  }
}

std::uint32_t Trace::Data::events_end(std::int64_t k) const {
  const auto next = static_cast<std::size_t>(k + 1);
  if (next < steps.size()) return steps[next].first_event;
  return static_cast<std::uint32_t>(events.size());
}

Trace::Trace() : d_(std::make_unique<Data>()) {}
Trace::~Trace() = default;
Trace::Trace(Trace&&) noexcept = default;
Trace& Trace::operator=(Trace&&) noexcept = default;

namespace {
void check_step(std::int64_t k, std::int64_t count, bool allow_before, const char* what) {
  if (k < (allow_before ? -1 : 0) || k >= count)
    throw std::out_of_range(std::string("Trace::") + what + ": step " + std::to_string(k) +
                            " is outside the trace's " + std::to_string(count) + " steps");
}
}  // namespace

std::int64_t Trace::step_count() const {
  return static_cast<std::int64_t>(d_->steps.size());
}

TraceStep Trace::step(std::int64_t k) const {
  check_step(k, step_count(), false, "step");
  const StepRecord& r = d_->steps[static_cast<std::size_t>(k)];
  TraceStep s;
  s.phase = r.phase;
  s.op = d_->label(r.op);
  s.node = d_->label(r.node);
  s.segment = d_->label(r.segment);
  s.duration_ns = static_cast<std::int64_t>(r.duration_ns);
  s.start_ns = r.start_ns;
  s.replayed = r.replayed;
  return s;
}

Phase Trace::step_phase(std::int64_t k) const {
  check_step(k, step_count(), false, "step_phase");
  return d_->steps[static_cast<std::size_t>(k)].phase;
}

const std::string& Trace::step_node(std::int64_t k) const {
  check_step(k, step_count(), false, "step_node");
  return d_->label(d_->steps[static_cast<std::size_t>(k)].node);
}

CategoryBytes Trace::memory_at(std::int64_t k) const {
  check_step(k, step_count(), true, "memory_at");
  // Start from the last snapshot at or before k, then replay the few events after it.
  const std::int64_t snapshot = (k + 1) / kSnapshotEvery - 1;
  CategoryBytes bytes;
  std::int64_t from_step = 0;
  if (snapshot >= 0) {
    bytes = d_->snapshots[static_cast<std::size_t>(snapshot)];
    from_step = (snapshot + 1) * kSnapshotEvery;
  } else {
    bytes = d_->initial;
    d_->apply(0, d_->base_events, bytes);
  }
  if (from_step <= k)
    d_->apply(d_->steps[static_cast<std::size_t>(from_step)].first_event, d_->events_end(k), bytes);
  return bytes;
}

std::int64_t Trace::total_at(std::int64_t k) const {
  check_step(k, step_count(), true, "total_at");
  if (k >= 0) return d_->total_after[static_cast<std::size_t>(k)];
  std::int64_t total = 0;
  for (auto b : memory_at(-1)) total += b;
  return total;
}

PeakInfo Trace::peak() const {
  return d_->peak;
}

std::int64_t Trace::forward_end() const {
  return d_->forward_end;
}

PhaseCounts Trace::counts() const {
  return d_->counts;
}

const std::vector<TensorLife>& Trace::tensors() const {
  return d_->tensors;
}

const std::vector<std::uint32_t>& Trace::Data::by_name() const {
  std::call_once(by_name_made, [this] {
    tensors_by_name.resize(tensors.size());
    std::iota(tensors_by_name.begin(), tensors_by_name.end(), 0u);
    std::sort(tensors_by_name.begin(), tensors_by_name.end(),
              [&](std::uint32_t a, std::uint32_t b) { return tensors[a].name < tensors[b].name; });
  });
  return tensors_by_name;
}

std::int64_t Trace::tensor_index(const std::string& name) const {
  const auto& order = d_->by_name();
  auto it = std::lower_bound(
      order.begin(), order.end(), name,
      [&](std::uint32_t i, const std::string& n) { return d_->tensors[i].name < n; });
  if (it == order.end() || d_->tensors[*it].name != name) return -1;
  return *it;
}

ActivationState Trace::state_at(std::int64_t tensor, std::int64_t k) const {
  if (tensor < 0 || tensor >= static_cast<std::int64_t>(d_->tensors.size()))
    throw std::out_of_range("Trace::state_at: tensor " + std::to_string(tensor) +
                            " is outside the trace's " + std::to_string(d_->tensors.size()) +
                            " tensors");
  const auto& tr = d_->tensors[static_cast<std::size_t>(tensor)].transitions;
  auto it = std::upper_bound(tr.begin(), tr.end(), k,
                             [](std::int64_t step, const auto& t) { return step < t.first; });
  if (it == tr.begin()) return ActivationState::pending;
  return std::prev(it)->second;
}

const std::vector<TraceMessage>& Trace::messages() const {
  return d_->messages;
}

const std::vector<RecomputeSpan>& Trace::recomputes() const {
  return d_->recomputes;
}

const std::vector<CheckpointSpan>& Trace::checkpoints() const {
  return d_->checkpoints;
}

std::int64_t Trace::event_count() const {
  return static_cast<std::int64_t>(d_->events.size());
}

std::int64_t Trace::first_event(std::int64_t k) const {
  check_step(k, step_count() + 1, true, "first_event");
  if (k < 0) return 0;
  if (k == step_count()) return event_count();
  return d_->steps[static_cast<std::size_t>(k)].first_event;
}

TraceEvent Trace::event(std::int64_t i) const {
  if (i < 0 || i >= event_count())
    throw std::out_of_range("Trace::event: index " + std::to_string(i) +
                            " is outside the trace's " + std::to_string(event_count()) + " events");
  const PackedEvent& p = d_->events[static_cast<std::size_t>(i)];
  TraceEvent e;
  // The step is the last one whose first event is at or before i.
  auto it =
      std::upper_bound(d_->steps.begin(), d_->steps.end(), static_cast<std::uint32_t>(i),
                       [](std::uint32_t idx, const StepRecord& s) { return idx < s.first_event; });
  e.step = (it - d_->steps.begin()) - 1;
  e.kind = p.kind();
  e.category = p.category();
  e.previous = p.previous();
  e.bytes = p.bytes();
  e.allocation = p.allocation;
  e.tensor = p.tensor == kNoTensor ? -1 : static_cast<std::int64_t>(p.tensor);
  return e;
}

CategoryBytes Trace::initial_memory() const {
  return d_->initial;
}

std::int64_t Trace::memory_footprint() const {
  const Data& d = *d_;
  auto str = [](const std::string& s) {
    // Short strings live inside the object (small-string optimisation).
    return static_cast<std::int64_t>(sizeof(std::string)) +
           (s.capacity() > 15 ? static_cast<std::int64_t>(s.capacity()) + 1 : 0);
  };
  auto vec = [](const auto& v) {
    return static_cast<std::int64_t>(v.capacity() *
                                     sizeof(typename std::decay_t<decltype(v)>::value_type));
  };
  std::int64_t bytes = sizeof(Data);
  for (const auto& l : d.labels) bytes += str(l);
  bytes += vec(d.labels) - static_cast<std::int64_t>(d.labels.size() * sizeof(std::string));
  bytes += vec(d.steps) + vec(d.total_after) + vec(d.events) + vec(d.snapshots) +
           vec(d.tensors_by_name) + vec(d.tensors) + vec(d.messages) + vec(d.recomputes) +
           vec(d.checkpoints);
  for (const auto& t : d.tensors) {
    bytes += str(t.name) + str(t.node) + str(t.saved_by_op) - 3 * sizeof(std::string);
    bytes += vec(t.transitions);
  }
  for (const auto& m : d.messages) bytes += str(m.text) - sizeof(std::string);
  for (const auto& r : d.recomputes) bytes += str(r.segment) - sizeof(std::string);
  for (const auto& c : d.checkpoints) bytes += str(c.segment) - sizeof(std::string);
  return bytes;
}

}  // namespace ckpt

namespace ckpt {

void Trace::set_estimated_durations(const std::vector<std::int64_t>& duration_ns) {
  Data& d = *d_;
  if (duration_ns.size() != d.steps.size())
    throw std::invalid_argument("set_estimated_durations: " + std::to_string(duration_ns.size()) +
                                " durations for " + std::to_string(d.steps.size()) + " steps");
  std::int64_t start = 0;
  for (std::size_t k = 0; k < d.steps.size(); ++k) {
    d.steps[k].start_ns = start;
    d.steps[k].duration_ns = static_cast<float>(duration_ns[k]);
    start += duration_ns[k];
  }
  d.times_estimated = true;
}

bool Trace::times_estimated() const {
  return d_->times_estimated;
}

std::unordered_map<std::string, std::int64_t> forward_saved_bytes_by_node(const Trace& trace) {
  std::unordered_map<std::string, std::int64_t> saved;
  for (std::int64_t k = 0; k < trace.step_count(); ++k) {
    if (trace.step_phase(k) != Phase::forward) continue;
    for (auto i = trace.first_event(k); i < trace.first_event(k + 1); ++i) {
      const TraceEvent e = trace.event(i);
      if (e.category == MemoryCategory::activation && e.kind != TraceEventKind::free)
        saved[trace.step_node(k)] += e.bytes;
    }
  }
  return saved;
}

}  // namespace ckpt
