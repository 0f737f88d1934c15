// What a run shows besides its trace, derived once in the engine (engine/report): the memory
// series at each step's high-water mark, the state timeline, the lessons and the configuration
// in words, for the app and the CLI alike.
#include <QtTest>

#include "engine/model/loader.hpp"
#include "engine/report/config_text.hpp"
#include "engine/report/run_report.hpp"
#include "engine/run/runner.hpp"

using namespace ckpt;

namespace {

std::shared_ptr<Model> sample(const char* name) {
  return load_model(
      (qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/samples/" + name).toStdString());
}

// The LSTM checkpointed whole, and each of its cells inside it, without reentrance.
RunRequest nested_lstm(const Model& model) {
  RunRequest c = scenario_request(model);
  c.settings.use_reentrant = false;
  c.plan.modules = {"lstm"};
  for (const Module* m : model.all_modules())
    if (m->path.rfind("lstm.cell", 0) == 0) c.plan.modules.insert(m->path);
  return c;
}

}  // namespace

class TestRunReport : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY2(!qEnvironmentVariableIsEmpty("CKPTLAB_SOURCE_DIR"), "run under ctest");
  }

  // Each checkpoint's own RNG stash is in the trace: PyTorch 1.13's CPU generator state is
  // 5,056 bytes; the outer checkpoint's span holds its cells' stashes but stashed nothing itself
  // beyond its own one.
  void checkpointsCarryTheirOwnRngBytes() {
    auto model = sample("lstm.json");
    const RunResult r = Runner(model).run(nested_lstm(*model));
    QVERIFY2(r.ok, r.error.c_str());
    int cells = 0;
    for (const CheckpointSpan& c : r.trace.checkpoints()) {
      if (c.segment.rfind("lstm.cell", 0) == 0) {
        QCOMPARE(c.rng_bytes, std::int64_t{5056});
        ++cells;
      } else if (c.segment == "lstm") {
        QCOMPARE(c.rng_bytes, std::int64_t{5056});
      }
    }
    QVERIFY(cells > 1);
  }

  void reportIsTheRunsOwnFigures() {
    auto model = sample("lstm.json");
    const RunRequest config = nested_lstm(*model);
    const RunResult r = Runner(model).run(config);
    QVERIFY2(r.ok, r.error.c_str());
    const RunReport report = report_run(*model, config, r);
    QCOMPARE(report.config_text, describe_request(config));
    QCOMPARE(report.series->steps(), r.trace.step_count());
    QCOMPARE(report.series->peak_bytes, r.trace.peak().bytes);
    QCOMPARE(report.series->totals[static_cast<std::size_t>(report.series->peak_step)],
             r.trace.peak().bytes);
    QCOMPARE(report.summary.peak.bytes, r.trace.peak().bytes);
    QVERIFY(!report.timeline->changes.empty());
    // Each step's op, joined once by name in the engine: the views index it.
    QCOMPARE(static_cast<std::int64_t>(report.timeline->step_op.size()), r.trace.step_count());
    std::int64_t with_op = 0;
    for (std::int64_t k = 0; k < r.trace.step_count(); ++k) {
      QCOMPARE(report.timeline->op_at(k), model->op_index(r.trace.step(k).node));
      with_op += report.timeline->op_at(k) >= 0;
    }
    QVERIFY(with_op > r.trace.step_count() / 2);
    QCOMPARE(report.timeline->op_at(-1), std::int64_t{-1});
    // Every step of the series is at least what was live after it.
    for (std::int64_t k = 0; k < r.trace.step_count(); ++k)
      QVERIFY(report.series->totals[static_cast<std::size_t>(k)] >= r.trace.total_at(k));
    const auto rng = std::find_if(report.lessons.begin(), report.lessons.end(), [](auto& l) {
      return l.title.find("stashes the RNG state") != std::string::npos;
    });
    QVERIFY(rng != report.lessons.end());
    QCOMPARE(rng->title, std::string("Each checkpoint stashes the RNG state: 4.9 KiB per segment"));
    QVERIFY(!rng->from_message);
    QVERIFY(lessons_text(report.lessons, "").find(rng->title) != std::string::npos);
  }

  // A failed run's report says so, and its lesson is the run's own error with the fix.
  void failedRunReportsTheFailure() {
    auto model = sample("densenet_block.json");
    RunRequest c = scenario_request(*model);
    c.plan.modules = {"no.such.module"};
    const RunResult r = Runner(model).run(c);
    QVERIFY(!r.ok && r.status == RunStatus::failed);
    const RunReport report = report_run(*model, c, r);
    QVERIFY(report.series->failed);
    // The run's own error, once, explained: what failed and that no figure is a saving.
    const auto error = std::find_if(report.lessons.begin(), report.lessons.end(),
                                    [](auto& l) { return l.severity == Severity::error; });
    QVERIFY(error != report.lessons.end());
    QCOMPARE(error->title, r.error);
    QVERIFY(error->from_message);
    QVERIFY2(error->text.find("no saving") != std::string::npos, error->text.c_str());
  }
};

QTEST_GUILESS_MAIN(TestRunReport)
#include "test_run_report.moc"
