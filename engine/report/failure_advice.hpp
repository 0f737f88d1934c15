#pragma once

// Why a run failed and what fixes it, in a user's words. A failed run still has figures (the
// trace up to the failure), so every place that shows them — the CLI's text and JSON, the
// app's summary — must say they are a failed run's and never present them as a saving.

#include <string>

#include "engine/run/run_request.hpp"

namespace ckpt {

struct FailureAdvice {
  std::string why;  // what went wrong, in terms of the configuration
  std::string fix;  // what to change; empty when nothing specific is known
};

// Empty `why` for a run that succeeded (or was cancelled).
FailureAdvice failure_advice(const RunResult& run);

// "step 12" or "no step" for a message's step (-1 when the engine was outside any op).
std::string message_step_text(std::int64_t step);

}  // namespace ckpt
