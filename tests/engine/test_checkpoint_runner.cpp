// Checkpointing through the Runner on the samples: the traces the GUI shows (tensor states,
// recompute spans, RNG memory) and HeavyModel's trace size with every op output tagged.
#include <QtTest>

#include "engine/model/loader.hpp"
#include "engine/run/runner.hpp"

using namespace ckpt;

namespace {

std::shared_ptr<Model> sample(const char* name) {
  return load_model(
      (qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/samples/" + name).toStdString());
}

RunRequest config(const Model& m, bool reentrant) {
  RunRequest c = scenario_request(m);
  c.plan.modules.clear();
  c.plan.segments = 0;
  c.settings.threads = 1;
  c.settings.use_reentrant = reentrant;
  return c;
}

std::map<ActivationState, int> states_at(const Trace& t, std::int64_t k) {
  std::map<ActivationState, int> m;
  for (std::size_t i = 0; i < t.tensors().size(); ++i)
    ++m[t.state_at(static_cast<std::int64_t>(i), k)];
  return m;
}

}  // namespace

class TestCheckpointRunner : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QVERIFY2(!qEnvironmentVariableIsEmpty("CKPTLAB_SOURCE_DIR"), "run under ctest");
  }

  void heavyModelTrace_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<bool>("reentrant");
    QTest::addColumn<int>("recomputes");
    QTest::newRow("x + a, reentrant") << "heavy_model.json" << true << 1000;
    QTest::newRow("x + a, non-reentrant") << "heavy_model.json" << false << 0;
    QTest::newRow("sin(x) + a, non-reentrant") << "heavy_model_sin.json" << false << 1000;
  }
  void heavyModelTrace() {
    QFETCH(QString, file);
    QFETCH(bool, reentrant);
    QFETCH(int, recomputes);
    auto model = sample(qPrintable(file));
    const auto instances = model->instances_of("heavy_function");
    QCOMPARE(instances.size(), std::size_t{1000});
    Runner runner(model);
    RunRequest c = config(*model, reentrant);
    for (const Module* m : instances) c.plan.modules.insert(m->path);
    const RunResult r = runner.run(c);
    QVERIFY2(r.ok, r.error.c_str());
    const Trace& t = r.trace;
    QCOMPARE(static_cast<int>(t.recomputes().size()), recomputes);
    QCOMPARE(static_cast<int>(t.checkpoints().size()), 1000);
    const auto fe = t.forward_end();
    const auto rng = t.memory_at(fe)[static_cast<std::size_t>(MemoryCategory::rng_state)];
    // Reentrant holds every stash until backward; 1.13's non-reentrant drops a segment's state
    // (and its stash) at once when its ops saved nothing.
    QCOMPARE(rng, reentrant || recomputes ? 1000 * 5056 : 0);
    const auto s = states_at(t, fe);
    const auto dropped = s.count(ActivationState::dropped) ? s.at(ActivationState::dropped) : 0;
    QVERIFY(dropped > 90000);  // the segments' intermediates are gone by the end of the forward
    qInfo(
        "%s %s: %lld steps, %lld events, %zu tensors; trace %lld bytes in memory "
        "(%.1f bytes per step); at the end of the forward %d tensors dropped",
        qPrintable(file), reentrant ? "reentrant" : "non-reentrant",
        static_cast<long long>(t.step_count()), static_cast<long long>(t.event_count()),
        t.tensors().size(), static_cast<long long>(t.memory_footprint()),
        static_cast<double>(t.memory_footprint()) / static_cast<double>(t.step_count()), dropped);
    // Recomputed tensors appear as such while their segment is re-run.
    if (recomputes) {
      const auto& span = t.recomputes().front();
      const auto during = states_at(t, span.end_step - 1);
      QVERIFY(during.count(ActivationState::recomputed));
    }
  }

  void denseNetDefaultCheckpointsMatchThePlainGradients() {
    auto model = sample("densenet_block.json");
    Runner runner(model);
    RunRequest plain = config(*model, true);
    const RunResult p = runner.run(plain);
    QVERIFY2(p.ok, p.error.c_str());
    for (bool reentrant : {true, false}) {
      RunRequest c = config(*model, reentrant);
      for (const Module* m : model->all_modules())
        if (m->name == "bottleneck" && m->checkpointable) c.plan.modules.insert(m->path);
      QVERIFY(!c.plan.modules.empty());
      const RunResult r = runner.run(c);
      QVERIFY2(r.ok, r.error.c_str());
      QCOMPARE(r.trace.recomputes().size(), c.plan.modules.size());
      QVERIFY(r.trace.peak().bytes < p.trace.peak().bytes);
      for (const auto& [name, g] : p.gradients) {
        QVERIFY2(r.gradients.count(name), name.c_str());
        const auto a = g.to_vector(), b = r.gradients.at(name).to_vector();
        for (std::size_t i = 0; i < a.size(); ++i)
          QVERIFY2(std::abs(a[i] - b[i]) <= 1e-4 * (1 + std::abs(a[i])), name.c_str());
      }
      qInfo(
          "densenet_block.json, %s: peak %lld bytes (plain %lld), recomputed op executions "
          "%lld",
          reentrant ? "reentrant" : "non-reentrant", static_cast<long long>(r.trace.peak().bytes),
          static_cast<long long>(p.trace.peak().bytes),
          static_cast<long long>(r.trace.counts().recompute));
    }
  }
};

QTEST_GUILESS_MAIN(TestCheckpointRunner)
#include "test_checkpoint_runner.moc"
