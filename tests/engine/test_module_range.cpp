// Ranges of sibling modules checkpointed as one segment (RunRequest::ranges): the same
// numbers as a plain run, only the range's inputs kept, and clear errors for ranges that are no
// function of their own.
#include <QtTest>

#include "engine/model/loader.hpp"
#include "engine/model/module_range.hpp"
#include "engine/run/runner.hpp"

using namespace ckpt;

namespace {

std::shared_ptr<const Model> plan_model(const char* name) {
  return load_model(
      (qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/tests/engine/data/plan/" + name + ".json")
          .toStdString());
}

std::int64_t saved_at_forward_end(const RunResult& r) {
  const auto bytes = r.trace.memory_at(r.trace.forward_end());
  return bytes[static_cast<std::size_t>(MemoryCategory::activation)] +
         bytes[static_cast<std::size_t>(MemoryCategory::checkpoint_input)];
}

void same_gradients(const RunResult& a, const RunResult& b) {
  QCOMPARE(a.gradients.size(), b.gradients.size());
  for (const auto& [name, g] : a.gradients) {
    QVERIFY2(b.gradients.count(name), name.c_str());
    QVERIFY2(g.to_vector() == b.gradients.at(name).to_vector(), name.c_str());
  }
}

}  // namespace

class TestModuleRange : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { QVERIFY2(!qEnvironmentVariableIsEmpty("CKPTLAB_SOURCE_DIR"), "ctest"); }

  void rangeIsOneSegmentWithTheSameGradients() {
    auto model = plan_model("chain_unequal");
    Runner runner(model);
    RunRequest plain = scenario_request(*model);
    plain.settings.threads = 1;
    RunRequest ranged = plain;
    ranged.plan.ranges = {{"b1", "b3"}};
    const RunResult p = runner.run(plain), r = runner.run(ranged);
    QVERIFY2(p.ok && r.ok, r.error.c_str());
    same_gradients(p, r);
    QCOMPARE(r.trace.checkpoints().size(), std::size_t{1});
    QCOMPARE(r.trace.checkpoints()[0].segment, std::string("b1..b3"));
    QCOMPARE(r.trace.recomputes().size(), std::size_t{1});
    // Kept: only x for the whole range, instead of everything b1..b3 save.
    QVERIFY(saved_at_forward_end(r) < saved_at_forward_end(p));
    // The range keeps less than its three modules checkpointed one by one (their boundaries).
    RunRequest each = plain;
    each.plan.modules = {"b1", "b2", "b3"};
    const RunResult e = runner.run(each);
    QVERIFY2(e.ok, e.error.c_str());
    QVERIFY(saved_at_forward_end(r) < saved_at_forward_end(e));
    QCOMPARE(r.trace.counts().recompute, e.trace.counts().recompute);
  }

  void rangeHoldsCheckpointedModulesAndRunsInsideOne() {
    auto model = plan_model("nested_blocks");
    Runner runner(model);
    RunRequest plain = scenario_request(*model);
    RunRequest c = plain;
    c.plan.ranges = {{"stage1.a", "stage1.b"}, {"stage2", "head"}};
    c.plan.modules = {"stage1", "stage2.a"};
    const RunResult p = runner.run(plain), r = runner.run(c);
    QVERIFY2(r.ok, r.error.c_str());
    same_gradients(p, r);
    QCOMPARE(r.trace.checkpoints().size(), std::size_t{4});
  }

  void opEndpointsMakeRangesNoScopeHolds() {
    auto model = plan_model("conv_stack");
    Runner runner(model);
    const Module r = make_range(*model, "gap", "head");
    QCOMPARE(r.inputs.size(), std::size_t{1});
    QCOMPARE(r.outputs.size(), std::size_t{1});
    QCOMPARE(r.end_op - r.first_op, std::int64_t{3});
    RunRequest c = scenario_request(*model);
    c.plan.ranges = {{"c2.conv", "c2.pool"}};
    const RunResult p = runner.run(scenario_request(*model)), q = runner.run(c);
    QVERIFY2(q.ok, q.error.c_str());
    same_gradients(p, q);
  }

  void badRangesAreErrorsNamingTheProblem() {
    auto model = plan_model("nested_blocks");
    Runner runner(model);
    auto error_of = [&](std::string a, std::string b, std::set<std::string> modules = {}) {
      RunRequest c = scenario_request(*model);
      c.plan.ranges = {{a, b}};
      c.plan.modules = std::move(modules);
      const RunResult r = runner.run(c);
      return r.ok ? std::string() : r.error;
    };
    QVERIFY(error_of("stage1.a", "stage2.b").find("not siblings") != std::string::npos);
    QVERIFY(error_of("stage2", "stage1").find("runs after") != std::string::npos);
    QVERIFY(error_of("stage1", "nope").find("no module or op 'nope'") != std::string::npos);
    QVERIFY(error_of("stage1.b", "stage1.b", {"stage1.b"}).empty());
    QVERIFY(error_of("stage1", "stage2", {"stage2.a"}).empty());
    RunRequest two = scenario_request(*model);
    two.plan.ranges = {{"stage1", "stage2"}, {"stage2", "head"}};
    const RunResult r = runner.run(two);
    QVERIFY(!r.ok);
    QVERIFY2(
        r.error.find("overlaps the checkpointed segment 'stage1..stage2'") != std::string::npos,
        r.error.c_str());
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, parse_range("a.b"));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, parse_range("..b"));
    QCOMPARE(parse_range("features.a..features.b").second, std::string("features.b"));
  }
};

QTEST_GUILESS_MAIN(TestModuleRange)
#include "test_module_range.moc"
