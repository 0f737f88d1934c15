// ONNX oracle: models exported by PyTorch (at test time, at several opsets, and the committed
// samples) give PyTorch's outputs and parameter gradients on the same weights and input.
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>

#include "engine/model/loader.hpp"
#include "engine/run/runner.hpp"
#include "engine/tensor/npy.hpp"
#include "tests/oracle/support/closeness.hpp"
#include "tests/oracle/support/oracle_process.hpp"

using namespace ckpt;
using oracle::worst;

class TestOracleOnnx : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QVERIFY(oracle::prepare_scratch(dir_));
    const QString err =
        oracle::run_script({oracle::source_dir() + "/tests/oracle/onnx_oracle.py", dir_.path()});
    QVERIFY2(err.isEmpty(), qPrintable(err));
    cases_ = oracle::script_cases(dir_);
    QVERIFY(cases_.size() >= 10);
  }

  void committedSamplesAreSmall() {
    const QString src = qEnvironmentVariable("CKPTLAB_SOURCE_DIR");
    for (const char* f : {"tiny_densenet.onnx", "tiny_resnet.onnx"}) {
      QFileInfo info(src + "/samples/" + f);
      QVERIFY2(info.exists(), f);
      QVERIFY(info.size() < 2 * 1024 * 1024);
    }
  }

  void sameOutputsAndGradientsAsPyTorch_data() {
    QTest::addColumn<QString>("name");
    for (const auto& c : cases_) QTest::newRow(qPrintable(c)) << c;
  }
  void sameOutputsAndGradientsAsPyTorch() {
    QFETCH(QString, name);
    const std::string d = dir_.filePath(name).toStdString();
    auto model = load_model(d + "/model.onnx");
    QCOMPARE(model->format, std::string("onnx"));
    Runner runner(model);
    RunRequest c = scenario_request(*model);
    c.settings.inputs = {load_npy(d + "/input.npy")};
    for (int i = 1;
         QFile::exists(QString::fromStdString(d + "/input" + std::to_string(i) + ".npy")); ++i)
      c.settings.inputs.push_back(load_npy(d + "/input" + std::to_string(i) + ".npy"));
    c.settings.loss = LossKind::sum;
    c.settings.threads = 1;
    const RunResult r = runner.run(c);
    QVERIFY2(r.ok, r.error.c_str());
    // float64 cases (torchvision's networks) are held to float64 rounding.
    const bool f64 = r.outputs.at(0).dtype() == DType::f64;
    const double w =
        worst(r.outputs.at(0), load_npy(d + "/output.npy"), f64 ? 1e-7 : 1e-4, f64 ? 1e-5 : 1e-4);
    QVERIFY2(w <= 1, qPrintable(QString("output differs (%1)").arg(w)));
    // Gradients through batch norm in f32: both sides round differently at 1e-5.
    const std::string grads =
        oracle::gradient_differences(*model, r.gradients, d, f64 ? 1e-7 : 1e-4, f64 ? 1e-5 : 2e-3);
    QVERIFY2(grads.empty(), grads.c_str());
    // Parameters keep their PyTorch names, and node scopes become the module tree.
    QVERIFY(!model->root.children.empty());
  }

 private:
  QTemporaryDir dir_;
  QStringList cases_;
};

QTEST_GUILESS_MAIN(TestOracleOnnx)
#include "test_oracle_onnx.moc"
