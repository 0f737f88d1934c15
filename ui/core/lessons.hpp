#pragma once

// What a run teaches, placed at the steps where it happens: the run's own warnings and errors
// (the reentrant pitfalls, a recompute divergence), plus what the trace shows without saying
// it — the RNG state each checkpoint stashes, a BatchNorm whose statistics a recompute updates
// a second time, a non-reentrant segment that is never recomputed. Qt-free.

#include <cstdint>
#include <string>
#include <vector>

#include "engine/run/runner.hpp"

namespace ckpt::ui {

struct Lesson {
  std::int64_t step = -1;     // where it happens (-1: the run as a whole)
  std::int64_t endStep = -1;  // one past the last step it covers, or -1 for a single step
  Severity severity = Severity::info;
  std::string title;   // one line
  std::string text;    // the explanation
  std::string module;  // the module it is about, may be empty
};

std::vector<Lesson> lessonsOf(const Model& model, const CheckpointConfig& config,
                              const RunResult& result);

// Whether lesson `l` is "at" step k (its step, or inside its span).
bool lessonAt(const Lesson& l, std::int64_t k);

}  // namespace ckpt::ui
