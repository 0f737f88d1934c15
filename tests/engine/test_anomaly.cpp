// "No silent wrong answer" (issue 17): with detect_anomaly a NaN or Inf fails the run naming
// the op that first made it and the phase, in PyTorch's words; without it the run goes on (as
// PyTorch's does) and the loss says so.
#include <QtTest>

#include <cmath>

#include "engine/autograd/anomaly.hpp"
#include "engine/model/loader.hpp"
#include "engine/run/runner.hpp"

using namespace ckpt;

namespace {

// sqrt(relu(x)): finite forward (sqrt(0) = 0), and SqrtBackward0 divides by sqrt(0) = 0, the
// first backward node to return a non-finite gradient. PyTorch 1.13 under anomaly mode:
// "Function 'SqrtBackward0' returned nan values in its 0th output." for sqrt(x) * 0 at x = 0.
const char* kSqrtAtZero = R"({
  "name": "sqrt_at_zero", "seed": 3, "batch": 4,
  "inputs": [{"name": "x", "shape": ["batch", 4], "requires_grad": true}],
  "model": {"type": "sequential", "layers": [
    {"type": "linear", "name": "fc", "in": 4, "out": 8},
    {"type": "relu", "name": "act"},
    {"type": "sqrt", "name": "root"},
    {"type": "linear", "name": "head", "in": 8, "out": 2}
  ]}
})";

// log of a linear layer's output: NaN in the forward wherever that output is negative.
std::shared_ptr<Model> log_of_negative() {
  return load_model(qEnvironmentVariable("CKPTLAB_SOURCE_DIR").toStdString() +
                    "/tests/engine/data/log_of_negative.json");
}

std::shared_ptr<Model> sqrt_at_zero() {
  return load_model_json_text(kSqrtAtZero, "sqrt_at_zero.json");
}

RunResult run(std::shared_ptr<Model> model, bool detect, bool reentrant_checkpoint = false) {
  Runner runner(std::move(model));
  RunRequest c = scenario_request(runner.model());
  c.hooks.detect_anomaly = detect;
  if (reentrant_checkpoint) c.plan.modules.insert("block");
  return runner.run(c);
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

class TestAnomaly : public QObject {
  Q_OBJECT
 private slots:
  void withoutDetectionTheRunGoesOnAndTheLossIsNan() {
    const RunResult r = run(log_of_negative(), false);
    QVERIFY2(r.ok, r.error.c_str());
    QVERIFY(std::isnan(r.loss.item()));
    QCOMPARE(std::string(non_finite_kind(r.loss)), std::string("nan"));
  }
  void forwardNanNamesTheOpAndNode() {
    const RunResult r = run(log_of_negative(), true);
    QVERIFY(!r.ok);
    QVERIFY2(contains(r.error,
                      "Function 'log' returned nan values in its 0th output (forward of "
                      "'block.log'"),
             r.error.c_str());
  }
  void checkpointedForwardNanIsCaughtBeforeTheRecompute() {
    const RunResult r = run(log_of_negative(), true, true);
    QVERIFY(!r.ok);
    QVERIFY2(contains(r.error, "'log' returned nan") && contains(r.error, "forward of"),
             r.error.c_str());
  }
  void backwardInfNamesTheBackwardNode() {
    QVERIFY2(run(sqrt_at_zero(), false).ok, "the forward of sqrt(relu(x)) is finite");
    const RunResult r = run(sqrt_at_zero(), true);
    QVERIFY(!r.ok);
    QVERIFY2(contains(r.error,
                      "Function 'SqrtBackward0' returned inf values in its 0th output "
                      "(backward of 'root'"),
             r.error.c_str());
  }
  void dryRunsHaveNoValuesToCheck() {
    Runner runner(log_of_negative());
    RunRequest c = scenario_request(runner.model());
    c.hooks.detect_anomaly = true;
    c.settings.dry_run = true;
    const RunResult r = runner.run(c);
    QVERIFY2(r.ok, r.error.c_str());
  }
  void finiteValuesPass() {
    QCOMPARE(
        std::string(non_finite_kind(Tensor::from_vector(std::vector<float>{1.f, -2.f}, Shape{2}))),
        std::string());
    QCOMPARE(std::string(non_finite_kind(
                 Tensor::from_vector(std::vector<double>{1.0, -INFINITY}, Shape{2}))),
             std::string("inf"));
  }
};

QTEST_GUILESS_MAIN(TestAnomaly)
#include "test_anomaly.moc"
