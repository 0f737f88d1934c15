#include "engine/request/execute.hpp"

#include <chrono>

namespace ckpt {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

RunRequest of_kind(RunRequest request, bool dry) {
  request.settings.dry_run = dry;
  return request;
}

// A real result the pipeline ran only to compare with: its figures are what count, so it keeps
// no tensors (outputs, gradients and buffers die here instead of in the baselines kept). A dry
// run's tensors hold no memory; they stay, for the request that repeats the dry run.
std::shared_ptr<const RunResult> figures_only(RunResult r) {
  if (r.dry_run) return std::make_shared<const RunResult>(std::move(r));
  r.outputs.clear();
  r.loss = Tensor();
  r.gradients.clear();
  r.input_gradients.clear();
  r.buffers.clear();
  return std::make_shared<const RunResult>(std::move(r));
}

}  // namespace

RunRequest baseline_request(const RunRequest& request) {
  RunRequest b;
  b.plan = request.plan.without();
  b.settings = request.settings;
  b.hooks.detect_anomaly = request.hooks.detect_anomaly;
  return b;
}

// The stages of one request, in order; see execute.hpp.
class RequestPipeline {
 public:
  RequestPipeline(const RunTarget& target, const RunRequest& request, const RequestOptions& options)
      : target_(target), request_(request), options_(options) {}

  RunOutcome run() {
    RunOutcome out;
    out.request = request_;
    stage("dry run");
    // A plain request's dry run may be kept already (a baseline's): dry runs are deterministic.
    auto t0 = Clock::now();
    auto dry = target_.kept(of_kind(request_, true));
    if (!dry) dry = run_and_keep(of_kind(request_, true), /*only_figures=*/false);
    out.run_ms = ms_since(t0);
    out.guard = judge_memory(target_.model(), *dry, request_.settings.max_memory);
    out.result = dry;
    if (dry->cancelled()) return out;
    const bool real_asked = !request_.settings.dry_run;
    if (!real_asked || !out.guard.fits) {
      if (real_asked) out.not_computed = out.guard.message;
      compare_and_report(out);
      return out;
    }
    if (options_.on_dry_run) {
      RunOutcome preview = out;
      preview.real_run_follows = true;
      compare_and_report(preview);
      if (!preview.cancelled()) options_.on_dry_run(preview);
    }
    // The baseline runs before the real run, as it always has: the first real run of a process
    // pays for cold caches, and that should not be charged to the checkpoints.
    const bool own_baseline = same_run(baseline_request(request_), of_kind(request_, false));
    if (options_.baseline && !own_baseline && !cancelled())
      out.baseline = baseline(/*dry=*/false, out.baseline_not_run);
    if (cancelled()) {
      out.result.reset();
      return out;
    }
    stage("running");
    t0 = Clock::now();
    out.result = run_and_keep(of_kind(request_, false), /*only_figures=*/false);
    out.run_ms = ms_since(t0);
    if (out.result->cancelled()) return out;
    if (options_.baseline && own_baseline) out.baseline = out.result;
    report(out);
    return out;
  }

 private:
  bool cancelled() const { return options_.cancel && options_.cancel->load(); }

  void stage(const std::string& what) const {
    if (options_.on_stage) options_.on_stage(what);
  }

  // Runs `request`; a run of a baseline's form is kept for the requests that compare with it.
  std::shared_ptr<const RunResult> run_and_keep(const RunRequest& request, bool only_figures) {
    RunResult r;
    try {
      r = target_.run(request, options_.cancel);
    } catch (const std::exception& e) {
      // The Runner reports failures in its result; anything thrown is still shown, never lost.
      r.set_status(RunStatus::failed, e.what());
      r.dry_run = request.settings.dry_run;
    }
    auto result =
        only_figures ? figures_only(std::move(r)) : std::make_shared<const RunResult>(std::move(r));
    if (same_run(request, baseline_request(request))) target_.keep(request, result);
    return result;
  }

  // The baseline of `out`'s kind of run, then the report comparing with it.
  void compare_and_report(RunOutcome& out) {
    if (options_.baseline) {
      const bool dry = out.result->dry_run;
      const bool own = same_run(baseline_request(request_), of_kind(request_, dry));
      out.baseline = own ? out.result : baseline(dry, out.baseline_not_run);
    }
    report(out);
  }

  void report(RunOutcome& out) {
    if (cancelled()) {
      out.result.reset();
      return;
    }
    const RunResult* compared = out.baseline && out.baseline->ok ? out.baseline.get() : nullptr;
    const auto t0 = Clock::now();
    out.report = report_run(target_.model(), request_, *out.result, compared, options_.report,
                            out.not_computed);
    out.report_ms = ms_since(t0);
  }

  // The same settings without checkpoints, run dry or real: a kept run, or a new one. A real
  // baseline passes the memory guard first; `not_run` says why when it does not.
  std::shared_ptr<const RunResult> baseline(bool dry, std::string& not_run) {
    const RunRequest b = baseline_request(of_kind(request_, dry));
    if (auto kept = target_.kept(b)) return kept;
    if (!dry) {
      const RunRequest b_dry = of_kind(b, true);
      auto dry_result = target_.kept(b_dry);
      if (!dry_result) dry_result = run_and_keep(b_dry, /*only_figures=*/true);
      const GuardVerdict g = judge_memory(target_.model(), *dry_result, b.settings.max_memory);
      if (!g.fits) {
        not_run = g.message;
        return nullptr;
      }
    }
    stage("running without checkpointing");
    return run_and_keep(b, /*only_figures=*/true);
  }

  const RunTarget& target_;
  const RunRequest& request_;
  const RequestOptions& options_;
};

RunOutcome execute(const RunTarget& target, const RunRequest& request,
                   const RequestOptions& options) {
  return RequestPipeline(target, request, options).run();
}

}  // namespace ckpt
