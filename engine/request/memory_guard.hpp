#pragma once

// The memory guard: no real run starts whose dry run says it would not fit. A dry run
// (RunSettings::dry_run) gives the exact peak of the ledger; the process needs more than
// that (the model's own copy of its weights, the storage pool's rounding), so the guard adds
// those before comparing with a limit: by default a share of the memory the machine has
// available now, or what the user set (--max-memory in the CLI, the app's Memory limit).

#include <cstdint>
#include <string>

#include "engine/run/run_request.hpp"

namespace ckpt {

// MemAvailable from /proc/meminfo, in bytes; 0 when it cannot be read.
std::int64_t available_memory_bytes();

// The share of available memory a real run may use when no limit is set.
inline constexpr double kDefaultMemoryShare = 0.75;
// kDefaultMemoryShare of available_memory_bytes(); 0 (no limit) when that is unknown.
std::int64_t default_memory_limit();

// Bytes the process holds during a real run whose dry run peaked at `dry_peak` bytes.
std::int64_t predicted_process_bytes(const Model& model, std::int64_t dry_peak);

struct GuardVerdict {
  bool fits = true;
  std::int64_t dry_peak = 0;   // the dry run's peak (exact)
  std::int64_t predicted = 0;  // predicted_process_bytes of it
  std::int64_t limit = 0;      // 0: no limit
  std::string message;         // why it does not fit, and what to do; empty when it fits
};

// Judges a dry run's result (RunResult::dry_run) of `model` against `limit` (0: the default). A
// dry run that failed (an error the real run would hit too) fits: the real run reports that
// error itself. Called by the request's pipeline (execute.hpp) and nowhere else.
GuardVerdict judge_memory(const Model& model, const RunResult& dry, std::int64_t limit = 0);

}  // namespace ckpt
