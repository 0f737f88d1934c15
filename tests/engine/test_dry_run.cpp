// The dry run (issue 11): on the meta device every allocation and free is the real run's, so
// the two traces are equal in everything but values and times. Every sample (native and ONNX)
// in the configurations the golden-trace test runs: the same steps, the same memory events
// (kind, category, bytes, in order), the same peak and where it happens, the same activation
// states, the same messages and the same failure; and the dry run reports no values.
#include <QtTest>

#include "engine/model/loader.hpp"
#include "engine/report/run_summary.hpp"
#include "engine/run/runner.hpp"
#include "engine/run/time_estimate.hpp"
#include "tests/engine/support/sample_configs.hpp"

using namespace ckpt;

namespace {

QString source_dir() {
  return qEnvironmentVariable("CKPTLAB_SOURCE_DIR");
}

using test::plain;

// The golden-trace test's configurations, and two threads (per-thread scratch buffers follow
// the thread count).
std::vector<std::pair<std::string, RunRequest>> configurations(const Model& m, bool heavy) {
  auto out = test::sample_configurations(m, heavy);
  if (heavy) return out;
  RunRequest two_threads = test::every_module(m, false);
  two_threads.settings.threads = 2;  // per-thread scratch buffers follow the thread count
  out.emplace_back("all non-reentrant, 2 threads", two_threads);
  return out;
}

// The first difference between two traces in everything but values and times, or "".
std::string first_difference(const Trace& real, const Trace& dry) {
  auto diff = [](const std::string& what, auto a, auto b) {
    std::ostringstream o;
    o << what << ": real " << a << ", dry " << b;
    return o.str();
  };
  if (real.step_count() != dry.step_count())
    return diff("steps", real.step_count(), dry.step_count());
  for (std::int64_t k = 0; k < real.step_count(); ++k) {
    const TraceStep a = real.step(k), b = dry.step(k);
    if (a.phase != b.phase || a.op != b.op || a.node != b.node || a.segment != b.segment)
      return diff("step " + std::to_string(k), a.op + " " + a.node, b.op + " " + b.node);
  }
  if (real.event_count() != dry.event_count())
    return diff("events", real.event_count(), dry.event_count());
  for (std::int64_t i = 0; i < real.event_count(); ++i) {
    const TraceEvent a = real.event(i), b = dry.event(i);
    if (a.step != b.step || a.kind != b.kind || a.category != b.category ||
        a.previous != b.previous || a.bytes != b.bytes || a.tensor != b.tensor)
      return diff("event " + std::to_string(i) + " (step " + std::to_string(a.step) + ")",
                  std::string(trace_event_kind_name(a.kind)) + " " + category_name(a.category) +
                      " " + std::to_string(a.bytes),
                  std::string(trace_event_kind_name(b.kind)) + " " + category_name(b.category) +
                      " " + std::to_string(b.bytes));
  }
  if (real.peak().bytes != dry.peak().bytes || real.peak().step != dry.peak().step ||
      real.peak().by_category != dry.peak().by_category)
    return diff("peak", real.peak().bytes, dry.peak().bytes);
  if (real.tensors().size() != dry.tensors().size())
    return diff("tensors", real.tensors().size(), dry.tensors().size());
  for (std::size_t t = 0; t < real.tensors().size(); ++t) {
    const TensorLife &a = real.tensors()[t], &b = dry.tensors()[t];
    if (a.name != b.name || a.bytes != b.bytes || a.transitions != b.transitions ||
        a.saved_at_step != b.saved_at_step || a.saved_by_op != b.saved_by_op)
      return diff("tensor " + a.name, a.transitions.size(), b.transitions.size());
  }
  if (real.messages().size() != dry.messages().size())
    return diff("messages", real.messages().size(), dry.messages().size());
  for (std::size_t m = 0; m < real.messages().size(); ++m)
    if (real.messages()[m].text != dry.messages()[m].text ||
        real.messages()[m].step != dry.messages()[m].step)
      return diff("message " + std::to_string(m), real.messages()[m].text, dry.messages()[m].text);
  return {};
}

}  // namespace

class TestDryRun : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { QVERIFY2(!source_dir().isEmpty(), "run under ctest"); }

  void dryRunTraceEqualsRealRun_data() {
    QTest::addColumn<QString>("file");
    const QDir dir(source_dir() + "/samples");
    const QStringList files = dir.entryList({"*.json", "*.onnx"}, QDir::Files, QDir::Name);
    QVERIFY(files.size() >= 12);
    for (const QString& f : files) QTest::newRow(qPrintable(f)) << f;
  }
  void dryRunTraceEqualsRealRun() {
    QFETCH(QString, file);
    auto model = load_model((source_dir() + "/samples/" + file).toStdString());
    // Its real run needs more memory than a test machine has; gpt_mini is its architecture at
    // a size that runs.
    if (model->scenario.dry_run_only) QSKIP("a dry-run-only sample (no real run to compare)");
    Runner runner(model);
    const bool heavy = file.startsWith("heavy_model");
    auto configs = configurations(*model, heavy);
    if (qEnvironmentVariableIsSet("CKPTLAB_SANITIZED")) {
      // The sanitized Debug build is ten to fifty times slower (Eigen at -O0): the 100,000-op
      // HeavyModels in their plain run only, samples whose plain run peaks above 8 MiB in the
      // configurations a HeavyModel has (plain, scenario, all non-reentrant). The release run
      // has every configuration of every sample; the small samples keep them all here.
      RunRequest probe = plain(*model);
      probe.settings.dry_run = true;
      const bool large = runner.run(probe).trace.peak().bytes > (std::int64_t{8} << 20);
      const std::size_t kept = heavy ? 1 : large ? 3 : configs.size();
      if (kept < configs.size()) {
        qInfo("sanitized build: %s compared in %zu of its %zu configurations", qPrintable(file),
              kept, configs.size());
        configs.resize(kept);
      }
    }
    for (auto [name, config] : configs) {
      const RunResult real = runner.run(config);
      config.settings.dry_run = true;
      const RunResult dry = runner.run(config);
      const std::string where = file.toStdString() + " / " + name + ": ";
      QVERIFY2(dry.dry_run && !real.dry_run, where.c_str());
      if (!real.ok && real.error.find("recomputed forward differs") != std::string::npos) {
        // Found by comparing values (a dropout recomputed without its RNG state), which a dry
        // run has not: it runs on, the same steps as far as the real run went.
        QVERIFY2(dry.ok, (where + dry.error).c_str());
        QVERIFY(dry.trace.step_count() > real.trace.step_count());
        for (std::int64_t k = 0; k < real.trace.step_count(); ++k)
          QCOMPARE(dry.trace.step(k).op, real.trace.step(k).op);
        continue;
      }
      QVERIFY2(dry.ok == real.ok, (where + real.error + " | " + dry.error).c_str());
      QCOMPARE(dry.error, real.error);
      const std::string d = first_difference(real.trace, dry.trace);
      QVERIFY2(d.empty(), (where + d).c_str());
      // No values: tensors of the dry run are on the meta device; times are estimates.
      QVERIFY2(dry.trace.times_estimated() && !real.trace.times_estimated(), where.c_str());
      if (dry.loss.defined()) QVERIFY(dry.loss.is_meta());
      for (const auto& [p, g] : dry.gradients) QVERIFY2(g.is_meta(), p.c_str());
      QCOMPARE(dry.gradients.size(), real.gradients.size());
    }
  }

  // The same at a batch the real run never ran: shapes, not values, decide the bytes.
  void dryRunScalesWithBatch() {
    auto model = load_model((source_dir() + "/samples/densenet_block.json").toStdString());
    Runner runner(model);
    RunRequest c = plain(*model);
    c.settings.dry_run = true;
    c.settings.batch = 4;
    const std::int64_t at4 = runner.run(c).trace.peak().bytes;
    c.settings.batch = 8;
    const std::int64_t at8 = runner.run(c).trace.peak().bytes;
    c.settings.dry_run = false;
    QCOMPARE(runner.run(c).trace.peak().bytes, at8);
    QVERIFY(at8 > at4);
  }

  // A batch far beyond this machine's memory: the dry run answers, computing nothing.
  void dryRunAtAnAbsurdBatch() {
    auto model = load_model((source_dir() + "/samples/densenet_block.json").toStdString());
    Runner runner(model);
    RunRequest c = plain(*model);
    c.settings.dry_run = true;
    c.settings.batch = 1 << 20;
    const RunResult r = runner.run(c);
    QVERIFY2(r.ok, r.error.c_str());
    QVERIFY(r.trace.peak().bytes > (std::int64_t{1} << 40));  // over a terabyte, in no memory
    const RunSummary s = summarize(*model, r, "plain");
    QVERIFY(s.ok);
    QCOMPARE(s.peak.bytes, r.trace.peak().bytes);
  }

  // A shape whose byte count overflows is a named error, in a dry run as in a real one.
  void overflowingShapeIsANamedError() {
    DeviceScope meta(Device::meta);
    try {
      (void)Tensor::empty({std::int64_t{1} << 40, std::int64_t{1} << 40});
      QFAIL("no error");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(std::string(e.what()).find("too many elements") != std::string::npos, e.what());
    }
  }

  // An allocation beyond what a trace event holds (256 TiB) is a named error, not a wrapped
  // number: GPT-2 small's logits at a batch of 2^20 sequences are 3 PiB.
  void beyondTheTraceIsANamedError() {
    auto model = load_model((source_dir() + "/samples/densenet_block.json").toStdString());
    RunRequest c = plain(*model);
    c.settings.dry_run = true;
    c.settings.batch = std::int64_t{1} << 34;  // [2^34, 48, 16, 16] float: 3 x 2^48 bytes
    const RunResult r = Runner(model).run(c);
    QVERIFY(!r.ok);
    QVERIFY2(r.error.find("beyond the 256 TiB") != std::string::npos, r.error.c_str());
  }

  // Values are not available on the meta device: asking is an error, not a read of nothing.
  void metaTensorsHaveNoValues() {
    DeviceScope meta(Device::meta);
    const Tensor t = Tensor::ones({3});
    QVERIFY(t.is_meta());
    QCOMPARE(t.nbytes(), std::int64_t{12});
    QVERIFY_THROWS_EXCEPTION(std::logic_error, t.to_vector());
  }

  void machineRatesAreMeasured() {
    const MachineRates& r = machine_rates();
    QVERIFY(r.flops_per_ns > 0.01 && r.flops_per_ns < 1e4);
    QVERIFY(r.bytes_per_ns > 0.01 && r.bytes_per_ns < 1e4);
    QVERIFY(r.op_overhead_ns > 0);
  }
};

QTEST_GUILESS_MAIN(TestDryRun)
#include "test_dry_run.moc"
