// Fusion oracle (issue 27): modules whose export PyTorch writes as chains of small ops (GELU,
// LayerNorm below opset 17, SiLU, Mish, Hardswish, Hardsigmoid, rsqrt, the attention core) load
// as the fused ops, keep for backward what the eager module keeps — to the byte, or by the
// differences fusion_oracle.py names — and give PyTorch's outputs and gradients. Issue 38 adds a
// Llama-family decoder whose rotary tables and mask are buffers, named in the file, and F.glu
// (Split, Sigmoid, Mul: the pattern matches on the Split's second output).
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <map>

#include "engine/autograd/saved_tensors.hpp"
#include "engine/model/loader.hpp"
#include "engine/run/runner.hpp"
#include "engine/tensor/npy.hpp"
#include "tests/oracle/support/closeness.hpp"
#include "tests/oracle/support/oracle_process.hpp"

using namespace ckpt;

namespace {

using oracle::worst;

QJsonObject read_json(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return QJsonDocument::fromJson(f.readAll()).object();
}

// The one place this test runs the engine: the model on PyTorch's input, forward only (the
// graph kept, for its saved tensors) or with backward (sum of the output).
RunResult run_case(const std::shared_ptr<const Model>& model, const Tensor& input, bool backward) {
  RunRequest c = scenario_request(*model);
  c.settings.inputs = {input};
  c.settings.loss = LossKind::sum;
  c.settings.threads = 1;
  c.settings.backward = backward;
  return Runner(model).run(c);
}

}  // namespace

class TestOracleFusion : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QVERIFY(oracle::prepare_scratch(dir_));
    const QString err =
        oracle::run_script({oracle::source_dir() + "/tests/oracle/fusion_oracle.py", dir_.path()});
    QVERIFY2(err.isEmpty(), qPrintable(err));
    cases_ = oracle::script_cases(dir_);
    QCOMPARE(cases_.size(), 24);  // 12 families, opsets 13 and 17
  }

  void asTheEagerModule_data() {
    QTest::addColumn<QString>("name");
    for (const auto& c : cases_) QTest::newRow(qPrintable(c)) << c;
  }
  void asTheEagerModule() {
    QFETCH(QString, name);
    const QString d = dir_.filePath(name);
    const QJsonObject meta = read_json(d + "/case.json");
    QVERIFY(!meta.isEmpty());
    std::shared_ptr<const Model> model = load_model((d + "/model.onnx").toStdString());
    const Tensor input = load_npy((d + "/input.npy").toStdString());

    // The subgraphs became the ops, each in the module the subgraph belonged to.
    std::map<std::string, int> fused;
    for (const OpNode& op : model->ops)
      if (!op.fused.empty()) ++fused[op.op_type];
    std::map<std::string, int> expected;
    const QJsonObject want = meta["fused"].toObject();
    for (auto it = want.begin(); it != want.end(); ++it)
      expected[it.key().toStdString()] = it.value().toInt();
    QString got;
    for (const auto& [type, n] : fused) got += QString(" %1×%2").arg(n).arg(type.c_str());
    QVERIFY2(fused == expected, qPrintable("fused ops:" + got));

    // Saved for backward: the eager module's storages, to the byte but for named differences.
    const RunResult forward = run_case(model, input, false);
    QVERIFY2(forward.ok, forward.error.c_str());
    const auto storages = saved_tensor_storages(forward.outputs);
    std::int64_t ours = 0;
    for (const auto& s : storages) ours += s.bytes;
    const QJsonObject saved = meta["saved"].toObject();
    std::int64_t expected_bytes = saved["bytes"].toInteger();
    for (const auto& diff : meta["differences"].toArray())
      expected_bytes += diff.toObject()["bytes"].toInteger();
    if (ours != expected_bytes) {
      QString detail = QString("engine %1 bytes, eager module %2 (%3 with the named differences)")
                           .arg(ours)
                           .arg(saved["bytes"].toInteger())
                           .arg(expected_bytes);
      detail += "\n  engine:";
      for (const auto& s : storages)
        detail += QString("\n    %1 %2 %3 (%4)")
                      .arg(s.bytes)
                      .arg(QString::fromStdString(shape_str(s.shape)))
                      .arg(QString::fromStdString(s.node))
                      .arg(dtype_name(s.dtype));
      detail += "\n  eager:";
      for (const auto& s : saved["storages"].toArray()) {
        const QJsonObject o = s.toObject();
        detail +=
            QString("\n    %1 %2 %3 (%4)")
                .arg(o["bytes"].toInteger())
                .arg(QString(QJsonDocument(o["shape"].toArray()).toJson(QJsonDocument::Compact)))
                .arg(o["module"].toString(), o["dtype"].toString());
      }
      QFAIL(qPrintable(detail));
    }

    if (!meta["grads"].toBool()) return;
    const RunResult r = run_case(model, input, true);
    QVERIFY2(r.ok, r.error.c_str());
    const double w =
        worst(r.outputs.at(0), load_npy((d + "/output.npy").toStdString()), 1e-7, 1e-5);
    QVERIFY2(w <= 1, qPrintable(QString("output differs (%1)").arg(w)));
    const std::string grads =
        oracle::gradient_differences(*model, r.gradients, d.toStdString(), 1e-7, 1e-5);
    QVERIFY2(grads.empty(), grads.c_str());
  }

 private:
  QTemporaryDir dir_;
  QStringList cases_;
};

QTEST_GUILESS_MAIN(TestOracleFusion)
#include "test_oracle_fusion.moc"
