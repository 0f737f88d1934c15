#pragma once

// What a run teaches, placed at the steps where it happens: the run's own warnings and errors
// (the reentrant pitfalls, a recompute divergence), plus what the trace shows without saying
// it — the RNG state each checkpoint stashes, a BatchNorm whose statistics a recompute updates
// a second time, a non-reentrant segment that is never recomputed.

#include <cstdint>
#include <string>
#include <vector>

#include "engine/run/run_request.hpp"

namespace ckpt {

struct Lesson {
  std::int64_t step = -1;      // where it happens (-1: the run as a whole)
  std::int64_t end_step = -1;  // one past the last step it covers, or -1 for a single step
  Severity severity = Severity::info;
  std::string title;          // one line
  std::string text;           // the explanation
  std::string module;         // the module it is about, may be empty
  bool from_message = false;  // the run's own warning or error (the summary lists those too)
};

std::vector<Lesson> lessons_of(const Model& model, const RunResult& result);

// Whether lesson `l` is "at" step k (its step, or inside its span).
bool lesson_at(const Lesson& l, std::int64_t k);

// The lessons the run's messages do not already say, as the CLI prints them after its summary
// ("" when there are none).
std::string lessons_text(const std::vector<Lesson>& lessons, const std::string& prefix);

}  // namespace ckpt
