#include "engine/report/lessons.hpp"

#include <algorithm>
#include <map>
#include <sstream>

#include "engine/ops/schema/op_schema.hpp"
#include "engine/report/failure_advice.hpp"
#include "engine/report/run_summary.hpp"

namespace ckpt {

bool lesson_at(const Lesson& l, std::int64_t k) {
  if (l.step < 0) return false;
  if (l.end_step > l.step) return k >= l.step && k < l.end_step;
  return k == l.step;
}

std::string lessons_text(const std::vector<Lesson>& lessons, const std::string& prefix) {
  std::ostringstream os;
  for (const Lesson& l : lessons) {
    if (l.from_message) continue;
    os << prefix << "[" << severity_name(l.severity) << (l.step >= 0 ? " @ " : ", ")
       << message_step_text(l.step);
    if (l.end_step > l.step + 1) os << "-" << l.end_step - 1;
    os << "] " << l.title << "\n";
    std::istringstream text(l.text);
    for (std::string line; std::getline(text, line);)
      if (!line.empty()) os << prefix << "    " << line << "\n";
  }
  return os.str();
}

namespace {

std::vector<Lesson> message_lessons(const Trace& trace) {
  std::vector<Lesson> out;
  for (const auto& m : trace.messages()) {
    Lesson l;
    l.step = m.step;
    l.severity = m.severity;
    l.title = m.text.substr(0, m.text.find('\n'));
    l.text = m.text;
    l.from_message = true;
    out.push_back(std::move(l));
  }
  return out;
}

// The error with its advice. When the run's own messages already hold the error, its lesson
// takes the advice, so that the failure is not told twice.
void add_failure_lesson(std::vector<Lesson>& out, const RunResult& result) {
  const Trace& trace = result.trace;
  const bool already = std::any_of(out.begin(), out.end(), [&](const Lesson& l) {
    return l.severity == Severity::error && l.text == result.error;
  });
  const FailureAdvice advice = failure_advice(result);
  std::string text = result.error;
  if (!advice.why.empty()) text += "\n\nWhy: " + advice.why + ".";
  if (!advice.fix.empty()) text += "\nFix: " + advice.fix + ".";
  text += "\n\nThe plot and the figures are the failed run's, up to the failure: no saving.";
  if (!already) {
    out.push_back({trace.step_count() > 0 ? trace.step_count() - 1 : -1, -1, Severity::error,
                   "The run failed: " + result.error.substr(0, result.error.find('\n')), text, "",
                   true});
  } else {
    for (Lesson& l : out)
      if (l.severity == Severity::error && l.text == result.error) l.text = text;
  }
}

void add_rng_state_lesson(std::vector<Lesson>& out, const Trace& trace) {
  const auto rng = static_cast<std::size_t>(MemoryCategory::rng_state);
  std::int64_t rng_each = 0, rng_max = 0;
  const CheckpointSpan* first_rng = nullptr;
  for (const auto& c : trace.checkpoints()) {
    if (c.rng_bytes > 0 && !first_rng) {
      first_rng = &c;
      rng_each = c.rng_bytes;
    }
  }
  if (!first_rng) return;
  for (std::int64_t k = 0; k < trace.step_count(); ++k)
    rng_max = std::max(rng_max, trace.memory_at(k)[rng]);
  out.push_back(
      {first_rng->begin_step, -1, Severity::info,
       "Each checkpoint stashes the RNG state: " + format_bytes(rng_each) + " per segment",
       "preserve_rng_state=True (the default) saves the CPU generator's state (" +
           format_bytes(rng_each) +
           ") in every checkpoint so that the recompute draws the same "
           "random numbers. Up to " +
           format_bytes(rng_max) +
           " of RNG state are held at once in this run. It is memory too: turn "
           "preserve_rng_state off when the segment draws no random numbers.",
       first_rng->segment});
}

template <typename Span>
std::map<std::string, const Span*> first_span_by_segment(const std::vector<Span>& spans) {
  std::map<std::string, const Span*> first;
  for (const auto& s : spans) first.emplace(s.segment, &s);
  return first;
}

void add_never_recomputed_lessons(
    std::vector<Lesson>& out, const std::map<std::string, const CheckpointSpan*>& first_forward,
    const std::map<std::string, const RecomputeSpan*>& first_recompute) {
  for (const auto& [segment, span] : first_forward) {
    if (first_recompute.count(segment)) continue;
    out.push_back({span->begin_step, span->end_step, Severity::info,
                   segment + " is checkpointed but never recomputed",
                   "Non-reentrant checkpointing recomputes a segment only when the backward "
                   "unpacks one of its saved tensors. None of the ops of " +
                       segment +
                       " saved a tensor for backward (additions, views and sums save "
                       "nothing), so there was nothing to recompute and nothing was saved by "
                       "checkpointing it either.",
                   segment});
  }
}

// BatchNorm inside a recomputed segment runs its forward twice.
void add_batch_norm_twice_lessons(
    std::vector<Lesson>& out, const Model& model,
    const std::map<std::string, const RecomputeSpan*>& first_recompute) {
  for (const auto& [segment, span] : first_recompute) {
    const Module* m = model.find_module(segment);
    if (!m) continue;
    for (std::int64_t i = m->first_op; i < m->end_op; ++i) {
      const OpNode& op = model.ops[static_cast<std::size_t>(i)];
      const OpSchema* row = OpTable::instance().find(op.op_type);
      if (!row || !row->updates_buffers) continue;
      out.push_back(
          {span->begin_step, span->end_step, Severity::warning,
           "BatchNorm " + op.name + " runs twice: its running statistics are updated twice",
           "The recompute of " + segment + " runs " + op.name +
               " in training mode a second time, so running_mean, running_var and "
               "num_batches_tracked are updated twice per step (as in PyTorch, in both "
               "variants).",
           segment});
      break;
    }
  }
}

}  // namespace

std::vector<Lesson> lessons_of(const Model& model, const RunResult& result) {
  const Trace& trace = result.trace;
  std::vector<Lesson> out = message_lessons(trace);
  if (result.status == RunStatus::failed) add_failure_lesson(out, result);
  add_rng_state_lesson(out, trace);
  const auto first_recompute = first_span_by_segment(trace.recomputes());
  if (result.ok)
    add_never_recomputed_lessons(out, first_span_by_segment(trace.checkpoints()), first_recompute);
  add_batch_norm_twice_lessons(out, model, first_recompute);
  std::stable_sort(out.begin(), out.end(),
                   [](const Lesson& a, const Lesson& b) { return a.step < b.step; });
  return out;
}

}  // namespace ckpt
