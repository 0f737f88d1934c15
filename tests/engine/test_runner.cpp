// The Runner without checkpointing: real forward, loss and backward over a loaded model, the
// same numbers as the engine's ops called by hand, determinism, threads, cancellation.
#include <QtTest>

#include <thread>

#include "engine/kernels/kernels.hpp"
#include "engine/model/loader.hpp"
#include "engine/ops/ops.hpp"
#include "engine/run/runner.hpp"

using namespace ckpt;

namespace {

const char* kMlp = R"({
  "name": "mlp", "seed": 7, "batch": 3,
  "inputs": [{"name": "x", "shape": ["batch", 4], "requires_grad": true}],
  "model": {"type": "sequential", "layers": [
    {"type": "linear", "name": "fc1", "in": 4, "out": 8},
    {"type": "relu", "name": "act1"},
    {"type": "sequential", "name": "block", "layers": [
      {"type": "linear", "name": "fc", "in": 8, "out": 8},
      {"type": "gelu"}
    ]},
    {"type": "linear", "name": "head", "in": 8, "out": 2, "bias": false}
  ]}
})";

std::string heavy(const char* op, int calls, int ops) {
  const std::string body = std::string(op) == "add"
                               ? R"({"type": "add", "param": "a"})"
                               : R"({"type": "function", "name": "f", "layers": [
          {"type": "sin"}, {"type": "add", "param": "a"}]})";
  return R"({"name": "heavy", "inputs": [{"name": "x", "shape": [], "requires_grad": true}],
    "model": {"type": "sequential", "parameters": {"a": {"shape": [], "init": 1.0}},
    "layers": [{"type": "repeat", "count": )" +
         std::to_string(calls) + R"(, "body": {"type": "function", "name": "heavy_function",
       "layers": [{"type": "repeat", "count": )" +
         std::to_string(ops) + R"(, "body": )" + body + "}]}}]}}";
}

std::shared_ptr<const Model> mlp() {
  return load_model_json_text(kMlp, "mlp.json");
}

}  // namespace

class TestRunner : public QObject {
  Q_OBJECT
 private slots:
  void mlpGivesLossOutputsAndEveryGradient() {
    Runner runner(mlp());
    const RunResult r = runner.run(scenario_request(runner.model()));
    QVERIFY2(r.ok, r.error.c_str());
    QCOMPARE(r.outputs.size(), std::size_t{1});
    QCOMPARE(r.outputs[0].shape(), (Shape{3, 2}));
    QCOMPARE(r.loss.numel(), std::int64_t{1});
    for (const char* p :
         {"fc1.weight", "fc1.bias", "block.fc.weight", "block.fc.bias", "head.weight"}) {
      QVERIFY2(r.gradients.count(p), p);
      QCOMPARE(r.gradients.at(p).shape(), runner.model().find_parameter(p)->initial.shape());
    }
    QVERIFY(r.input_gradients.count("x"));
    QVERIFY(r.times.total_ms > 0);
  }

  void sameNumbersAsTheOpsCalledByHand() {
    auto model = mlp();
    Runner runner(model);
    RunRequest config = scenario_request(*model);
    Tensor x = Tensor::from_vector(
        std::vector<float>{0.5f, -1.f, 2.f, 0.f, 1.f, 1.f, -2.f, 0.25f, 3.f, -0.5f, 0.f, 1.5f},
        {3, 4});
    config.settings.inputs = {x};
    const RunResult r = runner.run(config);
    QVERIFY2(r.ok, r.error.c_str());

    auto leaf = [&](const char* name) {
      return contiguous_copy(model->find_parameter(name)->initial).set_requires_grad(true);
    };
    Tensor w1 = leaf("fc1.weight"), b1 = leaf("fc1.bias"), w2 = leaf("block.fc.weight"),
           b2 = leaf("block.fc.bias"), w3 = leaf("head.weight");
    Tensor xi = contiguous_copy(x).set_requires_grad(true);
    Tensor y = linear(gelu(linear(relu(linear(xi, w1, b1)), w2, b2)), w3);
    Tensor loss = sum(y);
    loss.backward();
    QCOMPARE(r.loss.item(), loss.item());
    QCOMPARE(r.outputs[0].to_vector(), y.to_vector());
    QCOMPARE(r.gradients.at("fc1.weight").to_vector(), w1.grad().to_vector());
    QCOMPARE(r.gradients.at("block.fc.bias").to_vector(), b2.grad().to_vector());
    QCOMPARE(r.gradients.at("head.weight").to_vector(), w3.grad().to_vector());
    QCOMPARE(r.input_gradients.at("x").to_vector(), xi.grad().to_vector());
  }

  void repeatedAndConcurrentRunsAreBitIdentical() {
    Runner runner(mlp());
    const RunRequest config = scenario_request(runner.model());
    const RunResult first = runner.run(config);
    const RunResult again = runner.run(config);
    QCOMPARE(again.loss.item(), first.loss.item());
    QCOMPARE(again.gradients.at("fc1.weight").to_vector(),
             first.gradients.at("fc1.weight").to_vector());
    QCOMPARE(again.trace.step_count(), first.trace.step_count());
    QCOMPARE(again.trace.peak().bytes, first.trace.peak().bytes);
    // Two Runners on two threads, each with its own ledger and generator.
    Runner other(runner.model_ptr());
    RunResult a, b;
    std::thread ta([&] { a = runner.run(config); });
    std::thread tb([&] { b = other.run(config); });
    ta.join();
    tb.join();
    QVERIFY(a.ok && b.ok);
    QCOMPARE(a.loss.item(), first.loss.item());
    QCOMPARE(b.gradients.at("block.fc.weight").to_vector(),
             first.gradients.at("block.fc.weight").to_vector());
    QCOMPARE(a.trace.peak().bytes, first.trace.peak().bytes);
    // Another seed draws other inputs.
    RunRequest reseeded = config;
    reseeded.settings.seed = config.settings.seed + 1;
    QVERIFY(runner.run(reseeded).loss.item() != first.loss.item());
  }

  void traceNamesNodesAndValues() {
    Runner runner(mlp());
    const RunResult r = runner.run(scenario_request(runner.model()));
    QVERIFY(r.ok);
    QStringList nodes;
    for (std::int64_t k = 0; k <= r.trace.forward_end(); ++k)
      nodes << QString::fromStdString(r.trace.step(k).node);
    QCOMPARE(nodes, (QStringList{"fc1", "act1", "block.fc", "block.gelu", "head", "loss"}));
    QVERIFY(r.trace.tensor_index("block.gelu") >= 0);
    QVERIFY(r.trace.tensor_index("fc1.weight") >= 0);
    QVERIFY(r.trace.counts().backward > 0);
    QCOMPARE(r.trace.counts().recompute, std::int64_t{0});
  }

  void heavyModelAsTheBlogWroteItSavesNothing() {
    // x = x + a saves nothing for backward; x = sin(x) + a saves every sin's input.
    auto plain = load_model_json_text(heavy("add", 10, 10), "heavy.json");
    auto with_sin = load_model_json_text(heavy("sin", 10, 10), "heavy_sin.json");
    QCOMPARE(plain->ops.size(), std::size_t{100});
    Runner a(plain), b(with_sin);
    const RunResult ra = a.run(scenario_request(*plain));
    const RunResult rb = b.run(scenario_request(*with_sin));
    QVERIFY2(ra.ok, ra.error.c_str());
    QVERIFY2(rb.ok, rb.error.c_str());
    const auto act = static_cast<std::size_t>(MemoryCategory::activation);
    QCOMPARE(ra.trace.memory_at(ra.trace.forward_end())[act], std::int64_t{0});
    // 100 sins save their input; the first one's is the model input x (category input).
    QCOMPARE(rb.trace.memory_at(rb.trace.forward_end())[act], std::int64_t{99 * 4});
    // d/dx of x + 100 a is 1, d/da is 100.
    QCOMPARE(ra.input_gradients.at("x").item(), 1.0);
    QCOMPARE(ra.gradients.at("a").item(), 100.0);
  }

  void cancelledRunSaysSo() {
    Runner runner(mlp());
    std::atomic<bool> cancel{true};
    const RunResult r = runner.run(scenario_request(runner.model()), &cancel);
    QVERIFY(!r.ok);
    QCOMPARE(r.error, std::string("cancelled"));
    QVERIFY(r.cancelled());
    QVERIFY(r.status == RunStatus::cancelled);
    const RunResult done = runner.run(scenario_request(runner.model()));
    QVERIFY(done.status == RunStatus::ok && done.ok && !done.cancelled());
    RunRequest bad = scenario_request(runner.model());
    bad.plan.modules = {"act2"};
    const RunResult failed = runner.run(bad);
    QVERIFY(failed.status == RunStatus::failed && !failed.ok && !failed.cancelled());
  }

  // One comparison for every field of plan, settings and hooks: the app's kept results, its
  // ghost and pins are keyed by it.
  void requestsCompareEveryField() {
    const RunRequest base = scenario_request(*mlp());
    RunRequest c = base;
    QVERIFY(same_run(c, base));
    c.settings.threads = 2;
    QVERIFY(!same_run(c, base));
    c = base;
    c.settings.dry_run = true;
    QVERIFY(!same_run(c, base));
    c = base;
    c.plan.ranges = {{"a", "b"}};
    QVERIFY(!same_run(c, base));
    c = base;
    c.plan.policy = SelectivePolicy::save_matmul();
    QVERIFY(!same_run(c, base));
    c = base;
    c.hooks.fail_allocation_at = 3;
    QVERIFY(!same_run(c, base));
    c = base;
    c.settings.device = Device::cuda;
    QVERIFY(!same_run(c, base));
    // Explicit inputs compare by identity: the same tensors are the same run.
    const Tensor x = Tensor::zeros({3, 4});
    RunRequest a = base, b = base;
    a.settings.inputs = {x};
    b.settings.inputs = {x};
    QVERIFY(same_run(a, b));
    b.settings.inputs = {Tensor::zeros({3, 4})};
    QVERIFY(!same_run(a, b));
  }

  // A plan's key is its identity: the same plans, whatever the order of their ranges, and
  // without() takes one module or range away, or everything.
  void planKeysAndWithout() {
    CheckpointPlan a;
    a.modules = {"b1", "b2"};
    a.ranges = {{"x", "y"}, {"p", "q"}};
    CheckpointPlan b = a;
    b.ranges = {{"p", "q"}, {"x", "y"}};
    QCOMPARE(a.key(), b.key());
    b.policy = SelectivePolicy::save_matmul();
    QVERIFY(a.key() != b.key());
    QVERIFY(!a.empty());
    QVERIFY(a.without().empty());
    QCOMPARE(a.without("b1").modules, std::set<std::string>{"b2"});
    QCOMPARE(a.without("x..y").ranges.size(), std::size_t{1});
    QCOMPARE(a.without("nothing"), a);
    CheckpointPlan policy_only;
    policy_only.policy = SelectivePolicy::save_matmul();
    QVERIFY(policy_only.empty());
  }

  // A per-op policy's spelling and its parse are inverses; the kinds are the op table's, a bad
  // spelling names what is wrong and the kinds there are.
  void policySpellingsRoundTrip() {
    for (const char* text :
         {"none", "save-matmul", "save:mm", "save:mm,sdpa", "save:mm/2", "save:conv,mm/3"})
      QCOMPARE(SelectivePolicy::parse(text).spelling(), std::string(text));
    QCOMPARE(SelectivePolicy::parse("save:sdpa,mm,mm").spelling(), std::string("save:mm,sdpa"));
    QCOMPARE(SelectivePolicy::parse("save:conv,mm,sdpa"), SelectivePolicy::save_matmul());
    QCOMPARE(SelectivePolicy::parse("save:mm/1"), SelectivePolicy::parse("save:mm"));
    QCOMPARE(SelectivePolicy::parse("save:mm/2").every, 2);
    QVERIFY(SelectivePolicy::parse("none").empty());
    for (const auto& [text, says] : std::vector<std::pair<std::string, std::string>>{
             {"save:matmul", "unknown op kind 'matmul'"},
             {"save:", "an empty op kind"},
             {"save:mm/-1", "'/-1' is not a whole number"},
             {"save:mm/", "'/' is not a whole number"},
             {"save:mm/99999999999", "is not a whole number"},
             {"keep", "not a policy"}}) {
      try {
        SelectivePolicy::parse(text);
        QFAIL(qPrintable(QString::fromStdString(text + " parsed")));
      } catch (const std::invalid_argument& e) {
        const std::string what = e.what();
        QVERIFY2(what.find(says) != std::string::npos, e.what());
        QVERIFY2(what.find("op kinds conv, mm, sdpa") != std::string::npos, e.what());
      }
    }
  }

  void overridesBatchInputsRequiresGradAndLoss() {
    Runner runner(mlp());
    RunRequest c = scenario_request(runner.model());
    c.settings.batch = 5;
    c.settings.input_requires_grad = false;
    c.settings.loss = LossKind::mean;
    const RunResult r = runner.run(c);
    QVERIFY2(r.ok, r.error.c_str());
    QCOMPARE(r.outputs[0].shape(), (Shape{5, 2}));
    QVERIFY(!r.input_gradients.count("x"));
    QVERIFY(std::abs(r.loss.item() - (sum(r.outputs[0]).item() / 10)) < 1e-6);
  }

  void nestedModulesAreBothCheckpointed() {
    Runner runner(mlp());
    RunRequest c = scenario_request(runner.model());
    c.settings.threads = 1;
    c.settings.use_reentrant = false;
    c.plan.modules = {"block", "block.fc"};
    const RunResult r = runner.run(c);
    QVERIFY2(r.ok, r.error.c_str());
    QCOMPARE(r.trace.checkpoints().size(), std::size_t{2});
    const RunResult p = runner.run(scenario_request(runner.model()));
    QCOMPARE(r.gradients.at("block.fc.weight").to_vector(),
             p.gradients.at("block.fc.weight").to_vector());
  }

  void checkpointSequentialNeedsAChainOfOneTensor() {
    auto model = load_model_json_text(R"({"name": "two",
      "inputs": [{"name": "x", "shape": [2, 3]}, {"name": "y", "shape": [2, 3]}],
      "model": {"type": "sequential", "layers": [
        {"type": "function", "name": "f", "inputs": ["x", "y"], "layers": [{"type": "add"}]},
        {"type": "relu", "name": "g"}]}})",
                                      "two.json");
    Runner runner(model);
    RunRequest c = scenario_request(*model);
    c.plan.segments = 2;
    const RunResult r = runner.run(c);
    QVERIFY(!r.ok);
    QVERIFY2(r.error.find("checkpoint_sequential passes one tensor from each top-level module "
                          "to the next, but module 'f' takes (x, y)") != std::string::npos,
             r.error.c_str());
  }

  void errorsComeBackInTheResult() {
    Runner runner(mlp());
    RunRequest c = scenario_request(runner.model());
    c.settings.inputs = {Tensor::zeros({3, 4}), Tensor::zeros({3, 4})};
    RunResult r = runner.run(c);
    QVERIFY(!r.ok);
    QVERIFY2(r.error.find("2 explicit inputs given, mlp.json takes 1") != std::string::npos,
             r.error.c_str());
    c.settings.inputs.clear();
    c.plan.modules = {"act2"};
    r = runner.run(c);
    QVERIFY(!r.ok);
    QCOMPARE(r.error, std::string("cannot checkpoint 'act2': mlp.json has no such module"));
    c.plan.modules.clear();
    c.settings.max_memory = 512;
    r = runner.run(c);
    QVERIFY(!r.ok);
    QVERIFY(!r.error.empty());
    QVERIFY(!r.trace.messages().empty());
  }
};

QTEST_GUILESS_MAIN(TestRunner)
#include "test_runner.moc"
