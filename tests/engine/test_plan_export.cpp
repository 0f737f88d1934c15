// The plan as PyTorch code, applied to the torchvision model the ONNX file was exported from:
// PyTorch 1.13 saves for backward what the engine predicts for the plan (within 1 %), and the
// gradients are those of the model without the plan.
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

#include "engine/model/loader.hpp"
#include "engine/plan/plan_code.hpp"
#include "engine/plan/planner.hpp"

using namespace ckpt;

namespace {

QString python() {
  return qEnvironmentVariable("CKPTLAB_PYTHON", "/usr/bin/python3");
}
QString source(const QString& rel) {
  return qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + rel;
}

bool run_python(const QStringList& args, QString* out) {
  QProcess p;
  p.start(python(), args);
  if (!p.waitForFinished(300000)) return false;
  *out = QString::fromUtf8(p.readAllStandardOutput()) + QString::fromUtf8(p.readAllStandardError());
  return p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0;
}

}  // namespace

class TestPlanExport : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  std::shared_ptr<const Model> model_;

  void check(const CheckpointPlan& plan, const PlanEvaluator& ev) {
    const std::string code = plan_pytorch_code(*model_, ev.request(plan));
    QVERIFY(code.find("apply_activation_checkpointing(") != std::string::npos);
    QVERIFY(code.find("NOTE") == std::string::npos);  // every name exists in the nn.Module
    const QString file = dir_.filePath("plan.py");
    std::ofstream(file.toStdString()) << code;
    QString out;
    QVERIFY2(
        run_python({source("/tests/engine/test_plan_export.py"), file, "resnet18", "2", "32", "10"},
                   &out),
        qPrintable(out));
    const QJsonObject j = QJsonDocument::fromJson(out.section(QChar('\n'), 0, 0).toUtf8()).object();
    QVERIFY2(j["gradients_identical"].toBool(), qPrintable(out));
    const double torch_plain = j["plain_saved_bytes"].toDouble();
    const double torch_plan = j["planned_saved_bytes"].toDouble();
    const auto ours_plain = static_cast<double>(ev.saved_for_backward(CheckpointPlan{}));
    const auto ours_plan = static_cast<double>(ev.saved_for_backward(plan));
    qInfo("%s: saved for backward, engine %.0f bytes, PyTorch %.0f (plain: %.0f, %.0f)",
          plan.key().c_str(), ours_plan, torch_plan, ours_plain, torch_plain);
    QVERIFY2(torch_plan < torch_plain, "the plan saves less in PyTorch too");
    QVERIFY2(std::abs(ours_plan - torch_plan) <= 0.01 * torch_plan, qPrintable(out));
    QVERIFY2(std::abs(ours_plain - torch_plain) <= 0.01 * torch_plain, qPrintable(out));
  }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    QString out;
    if (!run_python({"-c", "import torch, torchvision"}, &out))
      QSKIP("no PyTorch with torchvision at CKPTLAB_PYTHON");
    QVERIFY2(run_python({source("/samples/export_onnx.py"), "--torchvision", "resnet18", "--out",
                         dir_.path(), "--batch", "2", "--size", "32", "--classes", "10"},
                        &out),
             qPrintable(out));
    model_ = load_model(dir_.filePath("resnet18.onnx").toStdString());
  }

  void optimalPlanReproducesInPyTorch() {
    PlanEvaluator ev(model_, scenario_request(*model_).settings);
    Planner planner(ev, CandidateOptions{1, true, 12});
    const std::int64_t low = planner.lowest().eval.peak_bytes;
    const PlanPoint p = planner.plan(Strategy::optimal, low + (ev.baseline().peak_bytes - low) / 2);
    QVERIFY2(p.fits, p.note.c_str());
    QVERIFY(!p.chosen.empty());
    check(p.plan, ev);
  }

  void modulesRangesAndNestingReproduceInPyTorch() {
    PlanEvaluator ev(model_, scenario_request(*model_).settings);
    CheckpointPlan plan;
    plan.modules = {"layer2.0", "layer3", "layer4.1"};
    plan.ranges = {{"layer1", "layer2"}};
    QVERIFY2(ev.evaluate(plan).ok, ev.evaluate(plan).error.c_str());
    check(plan, ev);
  }
};

QTEST_GUILESS_MAIN(TestPlanExport)
#include "test_plan_export.moc"
