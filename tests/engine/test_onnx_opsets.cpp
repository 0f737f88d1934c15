// Issue 38: the ONNX that PyTorch 2.9+ writes (opsets 18 to 20). tests/engine/onnx_opset_pairs.py
// writes each graph with onnx.helper (PyTorch 1.13 cannot export them) beside the same
// computation at opset 13; here both load and run: outputs, the input's and the parameters'
// gradients, and the bytes kept for backward must agree, the newer file must load as the ops
// and with the warning the case names. Then the attribute values of opsets 18 to 20 that the
// importer refuses, each refused with the file, the node and the attribute named.
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <cmath>
#include <map>

#include "engine/autograd/saved_tensors.hpp"
#include "engine/model/loader.hpp"
#include "engine/run/runner.hpp"
#include "tests/oracle/support/oracle_process.hpp"

using namespace ckpt;

namespace {

struct Outcome {
  RunResult run;
  std::int64_t saved = 0;
};

Tensor input_of(const Shape& shape) {
  std::vector<float> v;
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  for (std::int64_t i = 0; i < n; ++i)
    v.push_back(0.37f * std::sin(1.3f * static_cast<float>(i)) + 0.05f * static_cast<float>(i % 5));
  return Tensor::from_vector(v, shape);
}

Outcome run(const std::shared_ptr<const Model>& model, const Tensor& x) {
  RunRequest r = scenario_request(*model);
  r.settings.inputs = {x};
  r.settings.input_requires_grad = true;
  r.settings.threads = 1;
  r.settings.backward = false;
  Outcome o;
  const RunResult forward = Runner(model).run(r);
  if (forward.ok) o.saved = saved_tensor_bytes(forward.outputs);
  r.settings.backward = true;
  o.run = Runner(model).run(r);
  return o;
}

double max_difference(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return INFINITY;
  const auto va = a.to_vector(), vb = b.to_vector();
  double worst = 0;
  for (std::size_t i = 0; i < va.size(); ++i) worst = std::max(worst, std::abs(va[i] - vb[i]));
  return worst;
}

// The two files compute the same: outputs, gradients and saved bytes (but for a difference the
// case names).
void same(const std::shared_ptr<const Model>& a, const std::shared_ptr<const Model>& b,
          const Shape& x_shape, std::int64_t expected_ops, std::int64_t expected_saved,
          std::int64_t saved_difference) {
  const Tensor x = input_of(x_shape);
  const Outcome ra = run(a, x), rb = run(b, x);
  QVERIFY2(ra.run.ok, ra.run.error.c_str());
  QVERIFY2(rb.run.ok, rb.run.error.c_str());
  QCOMPARE(ra.run.outputs.size(), rb.run.outputs.size());
  for (std::size_t k = 0; k < ra.run.outputs.size(); ++k)
    QVERIFY2(max_difference(ra.run.outputs[k], rb.run.outputs[k]) < 1e-5,
             qPrintable(QString("output %1 differs").arg(k)));
  QVERIFY(ra.run.input_gradients.count("x"));
  QVERIFY(max_difference(ra.run.input_gradients.at("x"), rb.run.input_gradients.at("x")) < 1e-5);
  QCOMPARE(ra.run.gradients.size(), rb.run.gradients.size());
  for (const auto& [name, g] : ra.run.gradients)
    QVERIFY2(max_difference(g, rb.run.gradients.at(name)) < 1e-5, name.c_str());
  QCOMPARE(ra.saved, rb.saved + saved_difference);
  if (expected_saved >= 0) QCOMPARE(ra.saved, expected_saved);
  if (expected_ops >= 0) QCOMPARE(static_cast<std::int64_t>(a->ops.size()), expected_ops);
}

QJsonObject read_json(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return QJsonDocument::fromJson(f.readAll()).object();
}

Shape shape_of(const QJsonArray& dims) {
  Shape s;
  for (const auto& d : dims) s.push_back(d.toInteger());
  return s;
}

}  // namespace

class TestOnnxOpsets : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QVERIFY(oracle::prepare_scratch(dir_));
    const QString err = oracle::run_script(
        {oracle::source_dir() + "/tests/engine/onnx_opset_pairs.py", dir_.path()}, 60000);
    QVERIFY2(err.isEmpty(), qPrintable(err));
    for (const QString& name : oracle::script_cases(dir_)) {
      const QJsonObject c = read_json(dir_.filePath(name + "/case.json"));
      QVERIFY2(!c.isEmpty(), qPrintable(name));
      (c.contains("refused") ? refusals_ : pairs_).append(name);
    }
    // Reduce* 15, Split 3, Pad 4, Resize 5, Gelu 3, Mish, LayerNormalization,
    // GroupNormalization, BatchNormalization, CastLike, attention, rsqrt.
    QCOMPARE(pairs_.size(), 37);
    QCOMPARE(refusals_.size(), 9);
  }

  void asAtOpset13_data() { rows(pairs_); }
  void asAtOpset13() {
    QFETCH(QString, name);
    const QString d = dir_.filePath(name);
    const QJsonObject c = read_json(d + "/case.json");
    std::shared_ptr<const Model> newer, older;
    try {
      newer = load_model((d + "/" + c["newer"].toString()).toStdString());
      older = load_model((d + "/" + c["older"].toString()).toStdString());
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
    same(newer, older, shape_of(c["input"].toArray()), c["ops"].toInteger(), c["saved"].toInteger(),
         c["saved_difference"].toInteger());
    const std::string warning = c["warning"].toString().toStdString();
    if (warning.empty()) {
      const auto& w = newer->load_notes.warnings;
      QVERIFY2(w.empty(), w.empty() ? "" : w.front().c_str());
    } else {
      QCOMPARE(newer->load_notes.warnings.size(), std::size_t(1));
      QVERIFY2(newer->load_notes.warnings[0].rfind(warning, 0) == 0,
               newer->load_notes.warnings[0].c_str());
    }
    QVERIFY(older->load_notes.warnings.empty());
  }

  void refusedByName_data() { rows(refusals_); }
  void refusedByName() {
    QFETCH(QString, name);
    const QJsonObject r = read_json(dir_.filePath(name + "/case.json"))["refused"].toObject();
    const QString file = dir_.filePath(name + "/" + r["file"].toString());
    std::string error;
    try {
      load_model(file.toStdString());
    } catch (const std::exception& e) {
      error = e.what();
    }
    QVERIFY2(!error.empty(), "loaded");
    // "<path>: node '<name>' (<type>): <what>", the attribute named in what.
    QVERIFY2(error.rfind(file.toStdString() + ": ", 0) == 0, error.c_str());
    const std::string node = r["node"].toString().toStdString();
    if (!node.empty())
      QVERIFY2(error.find(": node '" + node + "' (") != std::string::npos, error.c_str());
    QVERIFY2(error.find(r["attribute"].toString().toStdString()) != std::string::npos,
             error.c_str());
    QVERIFY2(error.find(r["message"].toString().toStdString()) != std::string::npos, error.c_str());
  }

 private:
  static void rows(const QStringList& names) {
    QTest::addColumn<QString>("name");
    for (const auto& n : names) QTest::newRow(qPrintable(n)) << n;
  }

  QTemporaryDir dir_;
  QStringList pairs_, refusals_;
};

QTEST_GUILESS_MAIN(TestOnnxOpsets)
#include "test_onnx_opsets.moc"
