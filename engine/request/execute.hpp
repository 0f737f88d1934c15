#pragma once

// A run request's pipeline: the one way the app, the CLI, the lessons, pins and the planner run
// the engine.
//
//   dry run (the meta device: the real run's bytes, exactly)  → handed over first (on_dry_run)
//   → memory guard (memory_guard.hpp)   → real run, unless the request is a dry run or would
//                                          not fit the memory it may use
//   → baseline, when asked: the same settings without checkpoints, the same kind of run
//   → report (report_run): summary, series, state timeline, lessons
//
// Nothing outside the engine builds a baseline or decides whether a real run may start.

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "engine/report/run_report.hpp"
#include "engine/request/memory_guard.hpp"
#include "engine/request/run_target.hpp"
#include "engine/run/run_request.hpp"

namespace ckpt {

struct RunOutcome {
  RunRequest request;  // as asked
  // The run shown: the real run; or the dry run, when the request is a dry run, when the guard
  // refused the real run (not_computed), or on the outcome handed to on_dry_run.
  std::shared_ptr<const RunResult> result;
  RunReport report;  // of `result`, as much as was asked
  // The memory guard's verdict on the dry run (whether a real run may start), even when the
  // request is a dry run.
  GuardVerdict guard;
  std::string not_computed;  // the guard's message when it refused the real run asked for
  // On the outcome handed to on_dry_run: the real run of the same request is under way.
  bool real_run_follows = false;
  // The baseline the report compares with, when one was asked and it ran; otherwise, when one
  // was asked, why not (the guard refused its real run).
  std::shared_ptr<const RunResult> baseline;
  std::string baseline_not_run;
  // Wall time of the run shown (0 when it was a kept one) and of its report.
  double run_ms = 0;
  double report_ms = 0;

  bool dry_run() const { return result && result->dry_run; }
  bool cancelled() const { return !result || result->cancelled(); }
};

struct RequestOptions {
  bool baseline = false;  // also run the same settings without checkpoints, and compare
  ReportDetail report = ReportDetail::full;
  // The dry run's outcome (with its report and a dry baseline), while the real run follows; not
  // called when the dry run is the outcome itself.
  std::function<void(const RunOutcome&)> on_dry_run;
  // What the pipeline starts now: "dry run", "running", "running without checkpointing".
  std::function<void(const std::string&)> on_stage;
  const std::atomic<bool>* cancel = nullptr;  // polled between ops and between stages
};

RunOutcome execute(const RunTarget& target, const RunRequest& request,
                   const RequestOptions& options = {});

// The request whose run a request's figures are compared with: the same settings, nothing
// checkpointed, no fault injected and a ledger of its own.
RunRequest baseline_request(const RunRequest& request);

}  // namespace ckpt
