// ONNX backend node tests shipped by Debian's libonnx-testdata: every case that uses an op type
// the importer supports is run (forward, on the case's inputs) and must match the case's
// outputs, or is listed as out of scope with the importer's reason.
#include <onnx/onnx_pb.h>

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "engine/model/loader.hpp"
#include "engine/model/onnx_import.hpp"
#include "engine/run/runner.hpp"

using namespace ckpt;

namespace {

const char* kNodeTests = "/usr/share/libonnx-testdata/data/node";

std::string read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

Tensor read_tensor(const std::string& path) {
  onnx::TensorProto t;
  if (!t.ParseFromString(read(path))) throw std::runtime_error(path + ": not a TensorProto");
  return onnx_import::tensor_from_proto(t, path);
}

// The ONNX backend's comparison: |a - b| <= atol + rtol * |b|, NaNs equal.
bool close(const Tensor& a, const Tensor& b, std::string& why) {
  if (a.shape() != b.shape()) {
    why = "shape " + shape_str(a.shape()) + ", expected " + shape_str(b.shape());
    return false;
  }
  const auto va = a.to_vector(), vb = b.to_vector();
  for (std::size_t i = 0; i < va.size(); ++i) {
    if (std::isnan(va[i]) && std::isnan(vb[i])) continue;
    if (!(std::abs(va[i] - vb[i]) <= 1e-5 + 1e-3 * std::abs(vb[i]))) {
      why = "element " + std::to_string(i) + " is " + std::to_string(va[i]) + ", expected " +
            std::to_string(vb[i]);
      return false;
    }
  }
  return true;
}

}  // namespace

class TestOnnxConformance : public QObject {
  Q_OBJECT
 private slots:
  void nodeTestsOfSupportedOps() {
    const QDir root(kNodeTests);
    if (!root.exists()) QSKIP("libonnx-testdata is not installed");
    const auto supported = supported_onnx_ops();
    int run = 0, passed = 0, bound_cases = 0;
    QStringList out_of_scope, failures;
    for (const QString& name : root.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name)) {
      const std::string dir = root.filePath(name).toStdString();
      onnx::ModelProto proto;
      if (!proto.ParseFromString(read(dir + "/model.onnx"))) continue;
      std::set<std::string> ours, others;
      for (const auto& n : proto.graph().node())
        (std::binary_search(supported.begin(), supported.end(), n.op_type()) ? ours : others)
            .insert(n.op_type());
      if (ours.empty()) continue;  // a case for an op we do not claim
      // Integer and one-element inputs are the op's shape, axes, bounds or ratio: bound at
      // load time, as an exporter would write them.
      const QString data = root.filePath(name) + "/test_data_set_0/";
      std::map<std::string, Tensor> bind;
      std::vector<std::string> graph_inputs;
      int k = 0;
      for (const auto& in : proto.graph().input()) {
        const auto file = (data + QString("input_%1.pb").arg(k++)).toStdString();
        graph_inputs.push_back(in.name());
        if (!QFile::exists(QString::fromStdString(file))) continue;
        try {
          const Tensor t = read_tensor(file);
          if (t.dtype() == DType::i64 || t.numel() == 1) bind[in.name()] = t;
        } catch (const std::exception&) {
          // An element type the engine does not have: the loader says so below.
        }
      }
      std::shared_ptr<Model> model;
      try {
        model = load_model_onnx_bytes(read(dir + "/model.onnx"), dir + "/model.onnx", bind);
      } catch (const std::exception& e) {
        std::string why = e.what();
        why = why.substr(
            why.find("model.onnx: ") == std::string::npos ? 0 : why.find("model.onnx: ") + 12);
        // The importer's message lists every supported op; the count above says it once.
        if (const auto list = why.find(" (supported: "); list != std::string::npos) why.erase(list);
        out_of_scope << name + ": " + QString::fromStdString(why);
        continue;
      }
      // The importer runs the node otherwise than the file says (a BatchNorm in inference form
      // runs in training mode: the engine measures a training step), and said so.
      if (!model->load_notes.warnings.empty()) {
        out_of_scope << name + ": " + QString::fromStdString(model->load_notes.warnings.front());
        continue;
      }
      // A training-mode dropout draws its mask from the engine's generator, the case's from
      // NumPy's: no comparison is possible.
      if (std::any_of(model->ops.begin(), model->ops.end(),
                      [](const OpNode& op) { return op.op_type == "dropout"; })) {
        out_of_scope << name +
                            ": a training-mode dropout's mask is random (drawn from another "
                            "generator than the case's)";
        continue;
      }
      ++run;
      if (!bind.empty()) ++bound_cases;
      try {
        RunRequest c = scenario_request(*model);
        c.settings.backward = false;
        c.settings.threads = 1;
        for (const auto& in : model->inputs) {
          const auto at = std::find(graph_inputs.begin(), graph_inputs.end(), in.name);
          c.settings.inputs.push_back(read_tensor(
              (data + QString("input_%1.pb").arg(at - graph_inputs.begin())).toStdString()));
        }
        const RunResult r = Runner(model).run(c);
        if (!r.ok) throw std::runtime_error(r.error);
        std::string why;
        bool ok = r.outputs.size() == static_cast<std::size_t>(proto.graph().output_size());
        if (!ok) why = "made " + std::to_string(r.outputs.size()) + " outputs";
        for (std::size_t k = 0; ok && k < r.outputs.size(); ++k)
          ok = close(r.outputs[k],
                     read_tensor((data + QString("output_%1.pb").arg(k)).toStdString()), why);
        if (ok)
          ++passed;
        else
          failures << name + ": " + QString::fromStdString(why);
      } catch (const std::exception& e) {
        failures << name + ": " + e.what();
      }
    }
    qInfo(
        "ONNX node tests for the %d supported op types: %d run, %d passed, %d out of scope "
        "(%d cases had integer or one-element inputs bound at load time)",
        static_cast<int>(supported.size()), run, passed, static_cast<int>(out_of_scope.size()),
        bound_cases);
    for (const auto& s : out_of_scope) qInfo("  out of scope: %s", qPrintable(s));
    for (const auto& s : failures) qWarning("  FAILED: %s", qPrintable(s));
    QVERIFY(run > 100);
    QCOMPARE(failures.size(), 0);
  }
};

QTEST_GUILESS_MAIN(TestOnnxConformance)
#include "test_onnx_conformance.moc"
