// The plan as PyTorch code, applied to the torchvision model the ONNX file was exported from:
// for every plan on the frontier of ResNet-18 and DenseNet-121 (and ranges nested on a shared
// first module, the case issue 28 found exported in the wrong order), PyTorch 1.13 saves for
// backward what the engine predicts for the plan (PlanEvaluator::saved_for_backward), and the
// gradients are those of the model without the plan. Prints the plan-by-plan table.
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
  if (!p.waitForFinished(600000)) return false;
  *out = QString::fromUtf8(p.readAllStandardOutput()) + QString::fromUtf8(p.readAllStandardError());
  return p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0;
}

const char* kSize[] = {"4", "128",
                       "10"};  // batch, image size, classes: a frontier, quick in PyTorch

}  // namespace

class TestPlanExport : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

  std::shared_ptr<const Model> exported(const QString& name) {
    QString out;
    if (!run_python({source("/samples/export_onnx.py"), "--torchvision", name, "--out", dir_.path(),
                     "--batch", kSize[0], "--size", kSize[1], "--classes", kSize[2]},
                    &out))
      qFatal("%s", qPrintable(out));
    return load_model(dir_.filePath(name + ".onnx").toStdString());
  }

  // Every plan applied in one PyTorch process; each one's bytes against the engine's.
  void check(const QString& name, const Model& model, const PlanEvaluator& ev,
             const std::vector<std::pair<std::string, CheckpointPlan>>& plans) {
    QStringList args{source("/tests/engine/test_plan_export.py"), name, kSize[0], kSize[1],
                     kSize[2]};
    for (std::size_t i = 0; i < plans.size(); ++i) {
      const std::string code = plan_pytorch_code(model, ev.request(plans[i].second));
      QVERIFY(code.find("NOTE") == std::string::npos);  // every name exists in the nn.Module
      const QString file = dir_.filePath(QString("%1_plan%2.py").arg(name).arg(i));
      std::ofstream(file.toStdString()) << code;
      args << file;
    }
    QString out;
    QVERIFY2(run_python(args, &out), qPrintable(out));
    const QStringList lines = out.split('\n', Qt::SkipEmptyParts);
    QVERIFY2(lines.size() >= static_cast<int>(plans.size()) + 1, qPrintable(out));
    const auto torch_plain =
        QJsonDocument::fromJson(lines[0].toUtf8()).object()["plain_saved_bytes"].toInteger();
    QCOMPARE(ev.saved_for_backward(CheckpointPlan{}), torch_plain);
    qInfo("%s, %s: saved for backward, bytes (plain: %lld in both)", qPrintable(name),
          ev.settings().use_reentrant ? "reentrant" : "non-reentrant",
          static_cast<long long>(torch_plain));
    qInfo("  %-26s %12s %12s %9s  %s", "point", "engine", "PyTorch", "grads", "plan");
    for (std::size_t i = 0; i < plans.size(); ++i) {
      const QJsonObject j =
          QJsonDocument::fromJson(lines[static_cast<int>(i) + 1].toUtf8()).object();
      const auto torch_plan = j["planned_saved_bytes"].toInteger();
      const std::int64_t ours = ev.saved_for_backward(plans[i].second);
      std::string text = plans[i].second.key();
      if (text.size() > 90) text = text.substr(0, 87) + "...";
      qInfo("  %-26s %12lld %12lld %9s  %s", plans[i].first.c_str(), static_cast<long long>(ours),
            static_cast<long long>(torch_plan),
            j["gradients_identical"].toBool() ? "identical" : "DIFFER", text.c_str());
      QVERIFY2(j["gradients_identical"].toBool(), plans[i].second.key().c_str());
      QVERIFY2(ours == torch_plan, plans[i].second.key().c_str());
    }
  }

  // The frontier's plans as `ckptlab-cli plan` shows them, plus `extra`.
  void frontierReproducesInPyTorch(const QString& name, bool reentrant,
                                   std::vector<std::pair<std::string, CheckpointPlan>> extra) {
    auto model = exported(name);
    RunSettings settings = scenario_request(*model).settings;
    settings.use_reentrant = reentrant;
    PlanEvaluator ev(model, settings);
    Planner planner(ev);
    const auto points = planner.sweep(ev.baseline().peak_bytes * 7 / 10);
    std::vector<std::pair<std::string, CheckpointPlan>> plans;
    for (const auto& p : pareto_frontier(points))
      if (!p.plan.empty())
        plans.emplace_back(std::string(strategy_name(p.strategy)) + " " + p.detail, p.plan);
    QVERIFY2(plans.size() >= 3, "a frontier of a few plans");
    for (auto& e : extra) {
      QVERIFY2(ev.evaluate(e.second).ok, e.first.c_str());
      plans.push_back(std::move(e));
    }
    check(name, *model, ev, plans);
  }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    QString out;
    if (!run_python({"-c", "import torch, torchvision"}, &out))
      QSKIP("no PyTorch with torchvision at CKPTLAB_PYTHON");
  }

  void resnet18FrontierReproducesInPyTorch() {
    // Issue 28's lowest-peak plan: three ranges sharing their first module, and modules inside
    // and around ranges.
    CheckpointPlan shared;
    shared.ranges = {{"conv1", "bn1"}, {"conv1", "layer1"}, {"conv1", "maxpool"}};
    CheckpointPlan mixed;
    mixed.modules = {"layer2.0", "layer3", "layer4.1", "bn1"};
    mixed.ranges = {{"layer1", "layer2"}, {"conv1", "maxpool"}};
    frontierReproducesInPyTorch("resnet18", false,
                                {{"ranges sharing conv1", shared}, {"modules in ranges", mixed}});
  }

  void resnet18ReentrantNestingReproducesInPyTorch() {
    auto model = exported("resnet18");
    PlanEvaluator ev(model, scenario_request(*model).settings);  // reentrant, as 1.13
    CheckpointPlan plan;
    plan.modules = {"layer2.0", "layer3", "layer4.1"};
    plan.ranges = {{"layer1", "layer2"}, {"layer3", "layer4"}};
    check("resnet18", *model, ev, {{"modules and ranges", plan}});
  }

  void densenet121FrontierReproducesInPyTorch() {
    frontierReproducesInPyTorch("densenet121", false, {});
  }
};

QTEST_GUILESS_MAIN(TestPlanExport)
#include "test_plan_export.moc"
