// Speech, audio and video networks (issue 38): 1-D and 3-D convolutional models exported by
// PyTorch 1.13 (nd_models_oracle.py) load, keep for backward what the eager module keeps — to
// the byte, or by the differences the script names — give PyTorch's outputs and gradients, run
// dry exactly as they run, and give the same gradients with a block checkpointed in either
// variant.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include "engine/autograd/saved_tensors.hpp"
#include "engine/model/loader.hpp"
#include "engine/run/runner.hpp"
#include "engine/tensor/npy.hpp"
#include "tests/engine/support/trace_difference.hpp"
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

RunRequest request(const Model& model, const Tensor& input) {
  RunRequest c = scenario_request(model);
  c.plan.modules.clear();
  c.settings.inputs = {input};
  c.settings.loss = LossKind::sum;
  c.settings.threads = 1;
  return c;
}

}  // namespace

class TestOracleNdModels : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QVERIFY(oracle::prepare_scratch(dir_));
    const QString err = oracle::run_script(
        {oracle::source_dir() + "/tests/oracle/nd_models_oracle.py", dir_.path()});
    QVERIFY2(err.isEmpty(), qPrintable(err));
    cases_ = oracle::script_cases(dir_);
    QCOMPARE(cases_.size(), 26);  // 13 families, opsets 13 and 17
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

    // Saved for backward: the eager module's storages, to the byte but for named differences.
    RunRequest forward_only = request(*model, input);
    forward_only.settings.backward = false;
    const RunResult forward = Runner(model).run(forward_only);
    QVERIFY2(forward.ok, forward.error.c_str());
    std::int64_t ours = 0;
    for (const auto& s : saved_tensor_storages(forward.outputs)) ours += s.bytes;
    const QJsonObject saved = meta["saved"].toObject();
    std::int64_t expected = saved["bytes"].toInteger();
    for (const auto& diff : meta["differences"].toArray())
      expected += diff.toObject()["bytes"].toInteger();
    qInfo("%s: saved for backward %lld bytes (eager module %lld)", qPrintable(name),
          static_cast<long long>(ours), static_cast<long long>(saved["bytes"].toInteger()));
    QCOMPARE(ours, expected);

    // PyTorch's outputs and gradients (float64).
    const RunRequest plain = request(*model, input);
    const RunResult r = Runner(model).run(plain);
    QVERIFY2(r.ok, r.error.c_str());
    const double w =
        worst(r.outputs.at(0), load_npy((d + "/output.npy").toStdString()), 1e-7, 1e-5);
    QVERIFY2(w <= 1, qPrintable(QString("output differs (%1)").arg(w)));
    const std::string grads =
        oracle::gradient_differences(*model, r.gradients, d.toStdString(), 1e-7, 1e-5);
    QVERIFY2(grads.empty(), grads.c_str());

    // The dry run is the run, event for event.
    RunRequest dry = plain;
    dry.settings.dry_run = true;
    const RunResult dr = Runner(model).run(dry);
    QVERIFY2(dr.ok, dr.error.c_str());
    const std::string diff = test::first_event_difference(r.trace, dr.trace);
    QVERIFY2(diff.empty(), diff.c_str());

    // A block checkpointed, in both variants: the plain run's gradients, the block recomputed.
    const std::string block = meta["block"].toString().toStdString();
    for (const bool reentrant : {true, false}) {
      RunRequest c = plain;
      c.plan.modules = {block};
      c.settings.use_reentrant = reentrant;
      const RunResult cr = Runner(model).run(c);
      QVERIFY2(cr.ok, cr.error.c_str());
      QVERIFY2(!cr.trace.recomputes().empty(), block.c_str());
      for (const auto& [param, g] : r.gradients) {
        const double gw = worst(cr.gradients.at(param), g, 1e-12, 1e-12);
        QVERIFY2(gw <= 1, qPrintable(QString("%1 (%2, reentrant %3): gradient differs (%4)")
                                         .arg(param.c_str(), block.c_str())
                                         .arg(reentrant)
                                         .arg(gw)));
      }
    }
  }

 private:
  QTemporaryDir dir_;
  QStringList cases_;
};

QTEST_GUILESS_MAIN(TestOracleNdModels)
#include "test_oracle_nd_models.moc"
