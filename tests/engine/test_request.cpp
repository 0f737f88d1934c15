// A run request's pipeline (engine/request/execute.hpp): dry run, memory guard, real run,
// baseline, report, in that order and nowhere else; and the figures that compare runs, each
// defined once (engine/report/figures.hpp).
#include <QtTest>

#include <atomic>
#include <string>
#include <vector>

#include "engine/model/loader.hpp"
#include "engine/report/figures.hpp"
#include "engine/request/execute.hpp"
#include "engine/run/runner.hpp"

using namespace ckpt;

namespace {

std::shared_ptr<const Model> sample(const char* name) {
  return load_model(
      (qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/samples/" + name).toStdString());
}

RunRequest densenet_checkpointed(const Model& model) {
  RunRequest r = scenario_request(model);
  r.plan.modules = {"features.denseblock1"};
  return r;
}

}  // namespace

class TestRequest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY2(!qEnvironmentVariableIsEmpty("CKPTLAB_SOURCE_DIR"), "run under ctest");
  }

  // A real request: its dry run first (handed over while the real run follows), then the real
  // run, compared with the same settings' run without checkpoints; every figure is the engine's
  // own run's, byte for byte.
  void realRequestRunsDryThenRealWithItsBaseline() {
    auto model = sample("densenet_block.json");
    const RunTarget target(model);
    const RunRequest request = densenet_checkpointed(*model);
    std::vector<std::string> stages;
    std::vector<bool> previews;
    RequestOptions options;
    options.baseline = true;
    options.on_stage = [&](const std::string& s) { stages.push_back(s); };
    options.on_dry_run = [&](const RunOutcome& dry) {
      QVERIFY(dry.dry_run() && dry.real_run_follows && dry.report.series);
      QVERIFY(dry.baseline && dry.baseline->dry_run);
      previews.push_back(true);
    };
    const RunOutcome out = execute(target, request, options);
    QCOMPARE(previews.size(), std::size_t{1});
    QCOMPARE(stages, (std::vector<std::string>{"dry run", "running without checkpointing",
                                               "running without checkpointing", "running"}));
    QVERIFY(out.result && out.result->ok && !out.dry_run());
    QVERIFY(out.guard.fits && out.not_computed.empty());
    QVERIFY(out.baseline && out.baseline->ok && !out.baseline->dry_run);

    const RunResult direct = Runner(model).run(request);
    QCOMPARE(out.result->trace.peak().bytes, direct.trace.peak().bytes);
    RunRequest plain = request;
    plain.plan = request.plan.without();
    const RunResult direct_plain = Runner(model).run(plain);
    QCOMPARE(out.baseline->trace.peak().bytes, direct_plain.trace.peak().bytes);
    // The report compares with that baseline.
    const RunSummary& s = out.report.summary;
    QVERIFY(s.baseline);
    QCOMPARE(s.baseline->peak_bytes, direct_plain.trace.peak().bytes);
    QCOMPARE(s.peak.bytes, direct.trace.peak().bytes);
    QVERIFY(out.report.series && out.report.timeline && !out.report.config_text.empty());
    // A baseline's real run keeps no tensors: its figures are what it is for.
    QVERIFY(out.baseline->gradients.empty());
    QVERIFY(!out.result->gradients.empty());
  }

  // The baseline is run once per settings: a second request with other checkpoints reuses it,
  // and a plain request is its own baseline.
  void baselinesAreKeptPerSettings() {
    auto model = sample("densenet_block.json");
    const RunTarget target(model);
    RequestOptions options;
    options.baseline = true;
    std::vector<std::string> stages;
    options.on_stage = [&](const std::string& s) { stages.push_back(s); };
    RunRequest first = densenet_checkpointed(*model);
    first.settings.dry_run = true;
    const RunOutcome a = execute(target, first, options);
    QCOMPARE(stages, (std::vector<std::string>{"dry run", "running without checkpointing"}));
    stages.clear();
    RunRequest second = first;
    second.plan.modules = {"features.denseblock1.denselayer2"};
    const RunOutcome b = execute(target, second, options);
    QCOMPARE(stages, (std::vector<std::string>{"dry run"}));
    QCOMPARE(a.baseline.get(), b.baseline.get());
    // Other settings, another baseline.
    stages.clear();
    RunRequest other = second;
    other.settings.use_reentrant = false;
    const RunOutcome c = execute(target, other, options);
    QCOMPARE(stages, (std::vector<std::string>{"dry run", "running without checkpointing"}));
    QVERIFY(c.baseline.get() != b.baseline.get());
    // The plain request compares with itself.
    RunRequest plain = first;
    plain.plan = first.plan.without();
    const RunOutcome p = execute(target, plain, options);
    QCOMPARE(p.baseline.get(), p.result.get());
    const auto vs = against_plain(p.report.summary);
    QVERIFY(vs);
    QCOMPARE(vs->peak.bytes, std::int64_t{0});
    QCOMPARE(vs->extra_executions, std::int64_t{0});
  }

  // The memory guard decides, in the engine: a real run over the limit is not started, its dry
  // run is the outcome and says why; a dry-run request is never judged into a real run.
  void guardRefusesARealRunOverTheLimit() {
    auto model = sample("densenet_block.json");
    const RunTarget target(model);
    RunRequest request = densenet_checkpointed(*model);
    request.settings.max_memory = 1024;  // far below anything the model needs
    bool previewed = false;
    RequestOptions options;
    options.baseline = true;
    options.on_dry_run = [&](const RunOutcome&) { previewed = true; };
    const RunOutcome out = execute(target, request, options);
    QVERIFY(!previewed);  // the dry run is the outcome itself
    QVERIFY(out.dry_run() && !out.guard.fits);
    QVERIFY2(out.not_computed.find("not run") != std::string::npos, out.not_computed.c_str());
    QCOMPARE(out.report.series->not_computed, out.not_computed);
    QVERIFY(out.baseline && out.baseline->dry_run);  // compared as a dry run
    // The same request as a dry run: judged (the guard's verdict is there) but not refused.
    request.settings.dry_run = true;
    const RunOutcome dry = execute(target, request, options);
    QVERIFY(dry.dry_run() && !dry.guard.fits && dry.not_computed.empty());
  }

  // A CUDA request on a machine without the CUDA engine's whole-model runs: the guard keeps its
  // dry run as the outcome (the app asks for real runs; only the engine decides), says why, and
  // compares it with the plain run's dry run on the same device.
  void cudaRequestStaysADryRun() {
    auto model = sample("densenet_block.json");
    const RunTarget target(model);
    RunRequest request = densenet_checkpointed(*model);
    request.settings.device = Device::cuda;
    RequestOptions options;
    options.baseline = true;
    const RunOutcome out = execute(target, request, options);
    QVERIFY(out.dry_run() && !out.guard.fits);
    QVERIFY2(out.not_computed.find("CUDA engine") != std::string::npos, out.not_computed.c_str());
    QVERIFY(out.result->reserved.has_value());
    QVERIFY(out.baseline && out.baseline->dry_run && out.baseline->reserved.has_value());
  }

  // A real baseline that would not fit is not run, and the outcome says why.
  void baselineOverTheLimitIsNotRun() {
    auto model = sample("densenet_block.json");
    const RunTarget target(model);
    RunRequest request = densenet_checkpointed(*model);
    RequestOptions options;
    options.baseline = true;
    options.report = ReportDetail::summary;
    // Allow what the checkpointed run needs, less than the plain run needs.
    RunRequest dry = request;
    dry.settings.dry_run = true;
    const RunOutcome probe = execute(target, dry, options);
    QVERIFY(probe.baseline);
    const std::int64_t checkpointed = probe.guard.predicted;
    RunRequest plain_dry = dry;
    plain_dry.plan = dry.plan.without();
    const std::int64_t plain = execute(target, plain_dry, {}).guard.predicted;
    QVERIFY2(checkpointed < plain, "checkpointing the dense block saves memory");
    request.settings.max_memory = (checkpointed + plain) / 2;
    const RunOutcome out = execute(target, request, options);
    QVERIFY(out.result && out.result->ok && !out.dry_run());
    QVERIFY(!out.baseline);
    QVERIFY2(out.baseline_not_run.find("not run") != std::string::npos,
             out.baseline_not_run.c_str());
    QVERIFY(!out.report.summary.baseline);
  }

  // A fault injected into the request is the request's, never its baseline's.
  void faultsAreTheRequestsOwn() {
    auto model = sample("mlp.json");
    const RunTarget target(model);
    RunRequest request = scenario_request(*model);
    request.hooks.fail_allocation_at = 3;
    RequestOptions options;
    options.baseline = true;
    options.report = ReportDetail::summary;
    const RunOutcome out = execute(target, request, options);
    QVERIFY(out.result && !out.result->ok);
    QVERIFY(out.baseline && out.baseline->ok);
    QVERIFY(out.report.summary.baseline);  // shown as not comparable, never a saving
    QVERIFY(!out.report.summary.ok);
    QCOMPARE(baseline_request(request).hooks.fail_allocation_at, std::int64_t{0});
  }

  // Cancelled before it starts: no result and no report, nothing to show.
  void cancelledRequestDeliversNothing() {
    auto model = sample("densenet_block.json");
    const RunTarget target(model);
    std::atomic<bool> cancel{true};
    RequestOptions options;
    options.baseline = true;
    options.cancel = &cancel;
    const RunOutcome out = execute(target, densenet_checkpointed(*model), options);
    QVERIFY(out.cancelled());
    QVERIFY(!out.report.series);
  }

  // Each comparison figure, defined once.
  void figuresHaveOneDefinition() {
    CategoryBytes end{};
    end[static_cast<std::size_t>(MemoryCategory::activation)] = 1000;
    end[static_cast<std::size_t>(MemoryCategory::checkpoint_input)] = 24;
    end[static_cast<std::size_t>(MemoryCategory::rng_state)] = 5056;
    end[static_cast<std::size_t>(MemoryCategory::parameter)] = 77;
    QCOMPARE(saved_for_backward(end), std::int64_t{1024});

    const PeakChange down = peak_change(750, 1000);
    QCOMPARE(down.bytes, std::int64_t{-250});
    QCOMPARE(down.saving(), std::int64_t{250});
    QCOMPARE(down.percent, -25.0);
    QCOMPARE(down.ratio, 0.75);
    const PeakChange none = peak_change(10, 0);
    QCOMPARE(none.percent, 0.0);
    QCOMPARE(none.ratio, 0.0);

    PhaseCounts counts;
    counts.forward = 8;
    counts.recompute = 2;
    QCOMPARE(recompute_overhead_percent(counts), 25.0);
    QCOMPARE(recompute_overhead_percent(PhaseCounts{}), 0.0);

    RunSummary s;
    s.peak.bytes = 600;
    s.executions = {10, 5, 20};
    s.times.total_ms = 3;
    QVERIFY(!against_plain(s));
    s.baseline = RunSummary::Baseline{800, 30, 2};
    const AgainstPlain a = *against_plain(s);
    QCOMPARE(a.peak.saving(), std::int64_t{200});
    QCOMPARE(a.extra_executions, std::int64_t{5});
    QCOMPARE(a.execution_ratio, 35.0 / 30.0);
    QCOMPARE(a.time_ratio, 1.5);
  }
};

QTEST_GUILESS_MAIN(TestRequest)
#include "test_request.moc"
