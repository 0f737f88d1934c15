// Every sample in samples/ loads, runs and teaches what its notes say.
#include <QtTest>

#include <cmath>

#include "engine/model/loader.hpp"
#include "engine/plan/pytorch_code.hpp"
#include "engine/run/runner.hpp"

using namespace ckpt;

namespace {

std::string sample(const QString& name) {
  return (qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/samples/" + name).toStdString();
}

QStringList sample_names() {
  const QDir dir(qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/samples");
  return dir.entryList({"*.json"}, QDir::Files, QDir::Name);
}

CheckpointConfig plain(const Model& m) {
  CheckpointConfig c = scenario_config(m);
  c.modules.clear();
  c.segments = 0;
  c.threads = 1;
  return c;
}

}  // namespace

class TestSamples : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QVERIFY2(!qEnvironmentVariableIsEmpty("CKPTLAB_SOURCE_DIR"), "run under ctest");
    QVERIFY(sample_names().size() >= 10);
  }

  void loadsRunsAndTrainsEveryParameter_data() {
    QTest::addColumn<QString>("file");
    for (const auto& f : sample_names()) QTest::newRow(qPrintable(f)) << f;
  }
  void loadsRunsAndTrainsEveryParameter() {
    QFETCH(QString, file);
    auto model = load_model(sample(file));
    QVERIFY(!model->scenario.notes.empty());
    QVERIFY(!model->scenario.title.empty());
    for (const auto& path : model->scenario.default_checkpoints)
      QVERIFY(model->find_module(path) && model->find_module(path)->checkpointable);
    Runner runner(model);
    const RunResult r = runner.run(plain(*model));
    QVERIFY2(r.ok, r.error.c_str());
    QVERIFY(std::isfinite(r.loss.item()));
    // Without checkpointing every trainable parameter gets its gradient.
    for (const auto& p : model->parameters)
      if (p.requires_grad && !p.is_buffer) QVERIFY2(r.gradients.count(p.name), p.name.c_str());
    QCOMPARE(r.trace.counts().recompute, std::int64_t{0});
    // The PyTorch code names every top-level module.
    const std::string code = pytorch_code(*model, plain(*model));
    for (const auto& c : model->root.children) {
      const std::string attr = c->definition.substr(c->definition.rfind('.') + 1);
      QVERIFY2(code.find(attr) != std::string::npos, attr.c_str());
    }
    QVERIFY(code.find("loss.backward()") != std::string::npos);
  }

  void pytorchCodePutsCheckpointWhereTheConfigSays() {
    auto model = load_model(sample("densenet_block.json"));
    CheckpointConfig c = plain(*model);
    c.modules = {"features.denseblock1.denselayer2.bottleneck"};
    const std::string code = pytorch_code(*model, c);
    QVERIFY2(
        code.find("checkpoint(self.bottleneck, *inputs, use_reentrant=True)") != std::string::npos,
        code.c_str());
    auto heavy = load_model(sample("heavy_model.json"));
    CheckpointConfig all = plain(*heavy);
    for (const Module* m : heavy->instances_of("heavy_function")) all.modules.insert(m->path);
    all.use_reentrant = false;
    const std::string h = pytorch_code(*heavy, all);
    QVERIFY2(h.find("for _ in range(1000):\n            x = checkpoint(self.heavy_function, x, "
                    "self.a, use_reentrant=False)") != std::string::npos,
             h.c_str());
    QVERIFY2(h.find("for _ in range(100):\n            x = x + a") != std::string::npos, h.c_str());
    auto chain = load_model(sample("checkpoint_sequential.json"));
    CheckpointConfig four = scenario_config(*chain);
    four.segments = 4;
    const std::string s = pytorch_code(*chain, four);
    QVERIFY2(s.find("checkpoint_sequential(") != std::string::npos, s.c_str());
  }

  void heavyModelSavesNothingAndItsSinVariantSavesEverything() {
    const auto act = static_cast<std::size_t>(MemoryCategory::activation);
    auto plain_model = load_model(sample("heavy_model.json"));
    QCOMPARE(plain_model->ops.size(), std::size_t{100000});
    QCOMPARE(plain_model->instances_of("heavy_function").size(), std::size_t{1000});
    const RunResult a = Runner(plain_model).run(plain(*plain_model));
    QVERIFY2(a.ok, a.error.c_str());
    QCOMPARE(a.trace.memory_at(a.trace.forward_end())[act], std::int64_t{0});
    QCOMPARE(a.gradients.at("a").item(), 100000.0);
    auto sin_model = load_model(sample("heavy_model_sin.json"));
    const RunResult b = Runner(sin_model).run(plain(*sin_model));
    QVERIFY2(b.ok, b.error.c_str());
    // 100,000 sins each keep their 4-byte input; the first one's is the model input.
    QCOMPARE(b.trace.memory_at(b.trace.forward_end())[act], std::int64_t{(100000 - 1) * 4});
  }
};

QTEST_GUILESS_MAIN(TestSamples)
#include "test_samples.moc"
