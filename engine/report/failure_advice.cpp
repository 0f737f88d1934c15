#include "engine/report/failure_advice.hpp"

namespace ckpt {

namespace {

bool contains(const std::string& s, const char* what) {
  return s.find(what) != std::string::npos;
}

// The checkpoint that warned "None of the inputs have requires_grad=True": the warning is
// raised just before the segment's first op, so it is the first segment starting at or after
// the warning's step.
std::string unguarded_segment(const Trace& trace) {
  std::int64_t warned = -2;
  for (const auto& m : trace.messages())
    if (contains(m.text, "None of the inputs have requires_grad")) {
      warned = m.step;
      break;
    }
  if (warned == -2) return {};
  for (const auto& c : trace.checkpoints())
    if (c.begin_step >= warned) return c.segment;
  return {};
}

}  // namespace

FailureAdvice failure_advice(const RunResult& run) {
  FailureAdvice a;
  if (run.ok || run.cancelled()) return a;
  const std::string& e = run.error;
  if (contains(e, "does not require grad")) {
    const std::string seg = unguarded_segment(run.trace);
    a.why = "reentrant checkpoint (PyTorch 1.13's default) of " +
            (seg.empty() ? std::string("the outermost checkpointed module") : "'" + seg + "'") +
            ": none of its inputs requires grad, so its output does not either and the loss has no "
            "grad_fn; no backward ran and no gradient was computed (PyTorch does the same)";
    a.fix =
        "use the non-reentrant variant (--variant non-reentrant; Variant in the app), make "
        "the input require grad (--input-requires-grad), or do not checkpoint the outermost "
        "module" +
        (seg.empty() ? std::string() : " ('" + seg + "')");
  } else if (contains(e, "memory cap exceeded")) {
    a.why = "the run went over the memory cap";
    a.fix = "raise --max-memory, lower the batch, or checkpoint more modules";
  } else {
    a.why = "the run stopped with an error before it finished";
  }
  return a;
}

std::string message_step_text(std::int64_t step) {
  return step >= 0 ? "step " + std::to_string(step) : std::string("no step");
}

}  // namespace ckpt
