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

CheckpointConfig all_modules(const Model& m, bool reentrant) {
  CheckpointConfig c = plain(m);
  for (const Module* mod : m.all_modules())
    if (mod->checkpointable) c.modules.insert(mod->path);
  c.use_reentrant = reentrant;
  return c;
}

CheckpointConfig instances(const Model& m, const std::string& definition, bool reentrant) {
  CheckpointConfig c = plain(m);
  for (const Module* mod : m.instances_of(definition)) c.modules.insert(mod->path);
  c.use_reentrant = reentrant;
  return c;
}

std::int64_t at_forward_end(const RunResult& r, MemoryCategory c) {
  return r.trace.memory_at(r.trace.forward_end())[static_cast<std::size_t>(c)];
}

bool warned(const RunResult& r, const std::string& text) {
  for (const auto& m : r.trace.messages())
    if (m.text == text) return true;
  return false;
}

// Largest |a - b| relative to the largest |b| of the tensor.
double relative_error(const Tensor& a, const Tensor& b) {
  const auto va = a.to_vector(), vb = b.to_vector();
  double diff = 0, scale = 1e-12;
  for (std::size_t i = 0; i < va.size(); ++i) {
    diff = std::max(diff, std::abs(va[i] - vb[i]));
    scale = std::max(scale, std::abs(vb[i]));
  }
  return diff / scale;
}

const char* kNoInputGrad = "None of the inputs have requires_grad=True. Gradients will be None";
const char* kElement0 = "element 0 of tensors does not require grad and does not have a grad_fn";

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

  // Every checkpointable module at once, nested, in both variants: the same gradients as the
  // plain run (inputs require grad, so that the reentrant variant loses nothing).
  void everyModuleCheckpointedGivesThePlainGradients_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<bool>("reentrant");
    for (const auto& f : sample_names()) {
      if (f.startsWith("heavy_model")) continue;  // its own test below, with the seed's figures
      QTest::newRow(qPrintable(f + " reentrant")) << f << true;
      QTest::newRow(qPrintable(f + " non-reentrant")) << f << false;
    }
  }
  void everyModuleCheckpointedGivesThePlainGradients() {
    QFETCH(QString, file);
    QFETCH(bool, reentrant);
    auto model = load_model(sample(file));
    Runner runner(model);
    CheckpointConfig base = plain(*model);
    base.input_requires_grad = true;
    CheckpointConfig all = all_modules(*model, reentrant);
    all.input_requires_grad = true;
    QVERIFY(all.modules.size() >= 3);
    const RunResult p = runner.run(base);
    const RunResult c = runner.run(all);
    QVERIFY2(p.ok, p.error.c_str());
    QVERIFY2(c.ok, c.error.c_str());
    QVERIFY(c.trace.counts().recompute > 0);
    QVERIFY(!c.trace.checkpoints().empty());
    QVERIFY(std::abs(c.loss.item() - p.loss.item()) <=
            1e-5 * std::max(1.0, std::abs(p.loss.item())));
    QCOMPARE(c.gradients.size(), p.gradients.size());
    for (const auto& [name, g] : p.gradients) {
      QVERIFY2(c.gradients.count(name), name.c_str());
      const double e = relative_error(c.gradients.at(name), g);
      QVERIFY2(e < 1e-4, qPrintable(QString("%1: %2").arg(QString::fromStdString(name)).arg(e)));
    }
  }

  // Seed 004: the blog's HeavyModel saves nothing, so checkpointing only adds: 999 saved
  // inputs (the first call's is the model input) and 1,000 RNG stashes of 5,056 bytes; the
  // reentrant variant re-runs all 100,000 additions, the non-reentrant one none.
  void seed004HeavyModelCheckpointedCostsAndSavesNothing() {
    auto model = load_model(sample("heavy_model.json"));
    Runner runner(model);
    const RunResult re = runner.run(instances(*model, "heavy_function", true));
    QVERIFY2(re.ok, re.error.c_str());
    QCOMPARE(re.trace.recomputes().size(), std::size_t{1000});
    QCOMPARE(re.trace.counts().recompute, std::int64_t{100000});
    QCOMPARE(at_forward_end(re, MemoryCategory::activation), std::int64_t{0});
    QCOMPARE(at_forward_end(re, MemoryCategory::checkpoint_input), std::int64_t{999 * 4});
    QCOMPARE(at_forward_end(re, MemoryCategory::rng_state), std::int64_t{1000 * 5056});
    QCOMPARE(re.gradients.at("a").item(), 100000.0);
    const RunResult non = runner.run(instances(*model, "heavy_function", false));
    QVERIFY2(non.ok, non.error.c_str());
    QCOMPARE(non.trace.recomputes().size(), std::size_t{0});
    QCOMPARE(non.trace.counts().forward, re.trace.counts().forward);
    QCOMPARE(at_forward_end(non, MemoryCategory::rng_state), std::int64_t{0});
    QCOMPARE(non.gradients.at("a").item(), 100000.0);
  }

  // Seed 004, the variant whose ops save: 100,000 sin inputs kept plainly; checkpointed, one
  // call's 100 at a time, every call recomputed once in both variants.
  void seed004SinVariantTradesComputeForMemory() {
    auto model = load_model(sample("heavy_model_sin.json"));
    Runner runner(model);
    for (bool reentrant : {true, false}) {
      const RunResult r = runner.run(instances(*model, "heavy_function", reentrant));
      QVERIFY2(r.ok, r.error.c_str());
      QCOMPARE(r.trace.recomputes().size(), std::size_t{1000});
      QCOMPARE(r.trace.counts().recompute, std::int64_t{200000});
      QCOMPARE(at_forward_end(r, MemoryCategory::activation), std::int64_t{0});
      QCOMPARE(at_forward_end(r, MemoryCategory::checkpoint_input), std::int64_t{999 * 4});
      QCOMPARE(at_forward_end(r, MemoryCategory::rng_state), std::int64_t{1000 * 5056});
      // In backward at most one call's saved inputs are alive at once.
      std::int64_t most = 0;
      for (std::int64_t k = r.trace.forward_end(); k < r.trace.step_count(); ++k)
        most = std::max(
            most, r.trace.memory_at(k)[static_cast<std::size_t>(MemoryCategory::recomputed)] +
                      r.trace.memory_at(k)[static_cast<std::size_t>(MemoryCategory::activation)]);
      QVERIFY2(most <= 100 * 4 * 2, qPrintable(QString::number(most)));
    }
  }

  // Seed 001: 10 modules in 4 segments; modules 0-5 run twice, 6-9 once.
  void seed001CheckpointSequentialSplitsLike113() {
    auto model = load_model(sample("checkpoint_sequential.json"));
    Runner runner(model);
    CheckpointConfig c = plain(*model);
    c.segments = 4;
    const RunResult r = runner.run(c);
    QVERIFY2(r.ok, r.error.c_str());
    std::map<std::string, int> calls;
    for (std::int64_t k = 0; k < r.trace.step_count(); ++k) {
      const TraceStep s = r.trace.step(k);
      if (s.phase == Phase::forward || s.phase == Phase::recompute) ++calls[s.node];
    }
    const std::vector<int> expected{2, 2, 2, 2, 2, 2, 1, 1, 1, 1};
    for (int i = 0; i < 10; ++i)
      QCOMPARE(calls[std::to_string(i)], expected[static_cast<std::size_t>(i)]);
    QCOMPARE(r.trace.checkpoints().size(), std::size_t{3});
    QCOMPARE(at_forward_end(r, MemoryCategory::rng_state), std::int64_t{3 * 5056});
    // Without the RNG stash the recomputed dropout draws another mask, and the check says where.
    c.preserve_rng_state = false;
    const RunResult d = runner.run(c);
    QVERIFY(!d.ok);
    QVERIFY2(d.error.find("'dropout' (node '5')") != std::string::npos, d.error.c_str());
  }

  // Seed 001: the LSTM's first step has no input that requires grad; with the reentrant
  // variant its outputs do not either, so every step warns and the shared cell weights get
  // no gradient at all. The non-reentrant variant gives the plain run's gradients.
  void seed001LstmReentrantLosesTheCellGradients() {
    auto model = load_model(sample("lstm.json"));
    Runner runner(model);
    const RunResult p = runner.run(plain(*model));
    const RunResult re = runner.run(instances(*model, "lstm.cell", true));
    QVERIFY2(re.ok, re.error.c_str());
    QVERIFY(warned(re, kNoInputGrad));
    QVERIFY(!re.gradients.count("lstm.cell.weight_ih"));
    QVERIFY(re.gradients.count("head.weight"));
    const RunResult non = runner.run(instances(*model, "lstm.cell", false));
    QVERIFY2(non.ok, non.error.c_str());
    QCOMPARE(non.trace.recomputes().size(), std::size_t{12});
    QVERIFY(relative_error(non.gradients.at("lstm.cell.weight_ih"),
                           p.gradients.at("lstm.cell.weight_ih")) < 1e-5);
  }

  // Seed 002, both cases, and the non-reentrant variant that has neither problem.
  void seed002SubNetworkWithoutInputGrad() {
    auto error_model = load_model(sample("subnet_no_grad_inputs.json"));
    Runner a(error_model);
    CheckpointConfig c = plain(*error_model);
    c.modules = {"net"};
    const RunResult failed = a.run(c);
    QVERIFY(!failed.ok);
    QCOMPARE(failed.error, std::string(kElement0));
    QVERIFY(warned(failed, kNoInputGrad));
    c.use_reentrant = false;
    const RunResult fixed = a.run(c);
    QVERIFY2(fixed.ok, fixed.error.c_str());
    QVERIFY(fixed.gradients.count("net.fc_x.weight") && fixed.gradients.count("net.fc_out.bias"));

    auto head_model = load_model(sample("subnet_trainable_head.json"));
    Runner b(head_model);
    CheckpointConfig h = plain(*head_model);
    h.modules = {"net"};
    const RunResult silent = b.run(h);
    QVERIFY2(silent.ok, silent.error.c_str());
    QVERIFY(warned(silent, kNoInputGrad));
    QVERIFY(silent.gradients.count("head.weight"));
    for (const char* p : {"net.fc_x.weight", "net.fc_y.weight", "net.fc_out.weight"})
      QVERIFY2(!silent.gradients.count(p), p);
    QCOMPARE(silent.trace.recomputes().size(), std::size_t{0});
    h.use_reentrant = false;
    const RunResult all = b.run(h);
    QVERIFY2(all.ok, all.error.c_str());
    QCOMPARE(all.gradients.size(), head_model->parameters.size());
  }

  // Seed 003: checkpointing each block keeps only the block inputs; batch norm inside runs
  // twice, so num_batches_tracked is 2 after one step (both variants, as in PyTorch 1.13).
  void seed003ResNetBlocksAndBatchNormTwice() {
    auto model = load_model(sample("resnet.json"));
    Runner runner(model);
    const RunResult p = runner.run(plain(*model));
    CheckpointConfig c = plain(*model);
    for (const char* s : {"stage1", "stage2", "stage3", "stage4"})
      for (const char* b : {".0", ".1"}) c.modules.insert(std::string(s) + b);
    for (bool reentrant : {true, false}) {
      c.use_reentrant = reentrant;
      const RunResult r = runner.run(c);
      QVERIFY2(r.ok, r.error.c_str());
      QCOMPARE(r.trace.recomputes().size(), std::size_t{8});
      QVERIFY(r.trace.peak().bytes < p.trace.peak().bytes);
      QVERIFY(at_forward_end(r, MemoryCategory::activation) <
              at_forward_end(p, MemoryCategory::activation) / 2);
      QCOMPARE(r.buffers.at("stage1.0.bn1.num_batches_tracked").item(), 2.0);
      QCOMPARE(r.buffers.at("stage0.bn.num_batches_tracked").item(), 1.0);
      QCOMPARE(p.buffers.at("stage1.0.bn1.num_batches_tracked").item(), 1.0);
    }
  }

  // Seed 000: checkpointing the bottlenecks drops the concatenations (the memory-efficient
  // DenseNet); their inputs were kept anyway.
  void seed000DenseNetBottlenecks() {
    auto model = load_model(sample("densenet_block.json"));
    Runner runner(model);
    const RunResult p = runner.run(plain(*model));
    CheckpointConfig c = plain(*model);
    for (const Module* m : model->all_modules())
      if (m->name == "bottleneck") c.modules.insert(m->path);
    QCOMPARE(c.modules.size(), std::size_t{12});
    const RunResult r = runner.run(c);
    QVERIFY2(r.ok, r.error.c_str());
    QCOMPARE(r.trace.recomputes().size(), std::size_t{12});
    QVERIFY(at_forward_end(r, MemoryCategory::activation) <
            at_forward_end(p, MemoryCategory::activation));
    QVERIFY(r.trace.peak().bytes < p.trace.peak().bytes);
    const auto cat = r.trace.tensor_index("features.denseblock1.denselayer3.bottleneck.cat");
    QVERIFY(cat >= 0);
    QCOMPARE(r.trace.state_at(cat, r.trace.forward_end()), ActivationState::dropped);
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
