// Optimizer oracle (issue 31): the engine's SGD, momentum, Adam and AdamW against torch.optim in
// PyTorch 1.13 (tests/oracle/optim_oracle.py, /usr/bin/python3), for values and state:
//  - three steps on the same parameters and gradients, both implementations (for-loop, what
//    1.13 runs by default; foreach, PyTorch 2.x's default on CUDA), with and without weight decay;
//  - the training step of whole runs (samples and a torchvision ResNet-18 exported at test time):
//    PyTorch's step on the run's parameters and gradients must leave the parameters and the
//    state the run left.
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>

#include "engine/kernels/kernels.hpp"
#include "engine/model/loader.hpp"
#include "engine/run/optimizer.hpp"
#include "engine/run/runner.hpp"
#include "engine/tensor/npy.hpp"
#include "tests/oracle/support/closeness.hpp"
#include "tests/oracle/support/oracle_process.hpp"

using namespace ckpt;

namespace {

using oracle::run_script;
using oracle::source_dir;

using oracle::worst;  // the oracles' one closeness rule

QJsonObject read_json(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return QJsonDocument::fromJson(f.readAll()).object();
}

std::string npy(const QString& dir, const QString& name) {
  return QDir(dir).filePath(name + ".npy").toStdString();
}

OptimizerSettings settings_of(const QJsonObject& m) {
  OptimizerSettings s;
  s.kind = optimizer_from_name(m["kind"].toString().toStdString());
  s.lr = m["lr"].toDouble();
  if (!m["weight_decay"].isNull()) s.weight_decay = m["weight_decay"].toDouble();
  return s;
}

// The parameters, gradients and state of a run's step, for optim_oracle.py check.
void write_run_case(const QString& dir, const Model& model, const RunResult& r,
                    const RunSettings& s) {
  QDir().mkpath(dir);
  QJsonObject m;
  m["kind"] = optimizer_name(s.optimizer.kind);
  const OptimizerHyper h = optimizer_hyper(s.optimizer);
  m["lr"] = h.lr;
  m["weight_decay"] = h.weight_decay;
  QJsonArray names;
  int i = 0;
  for (const auto& p : model.parameters) {
    if (!r.parameters.count(p.name)) continue;
    names.append(QString::fromStdString(p.name));
    const QString k = QString::number(i++);
    save_npy(npy(dir, "before" + k), p.initial);
    save_npy(npy(dir, "after" + k), r.parameters.at(p.name));
    if (r.gradients.count(p.name)) save_npy(npy(dir, "grad" + k), r.gradients.at(p.name));
    if (r.optimizer_state.count(p.name))
      for (const auto& [state, t] : r.optimizer_state.at(p.name))
        save_npy(npy(dir, "state" + k + "." + QString::fromStdString(state)), t);
  }
  m["parameters"] = names;
  QFile f(QDir(dir).filePath("manifest.json"));
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write(QJsonDocument(m).toJson());
}

}  // namespace

class TestOracleOptim : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QVERIFY(oracle::prepare_scratch(dir_));
    const QString err =
        run_script({source_dir() + "/tests/oracle/optim_oracle.py", "steps", dir_.path()});
    QVERIFY2(err.isEmpty(), qPrintable(err));
  }

  // Three steps of every optimizer and implementation: values and state after each.
  void stepsAsTorchOptim_data() {
    QTest::addColumn<QString>("name");
    QFile index(dir_.filePath("index.txt"));
    QVERIFY(index.open(QIODevice::ReadOnly));
    for (const auto& n : QString(index.readAll()).split('\n', Qt::SkipEmptyParts))
      QTest::newRow(qPrintable(n)) << n;
  }
  void stepsAsTorchOptim() {
    QFETCH(QString, name);
    const QString d = dir_.filePath(name);
    const QJsonObject m = read_json(QDir(d).filePath("manifest.json"));
    const StepImplementation impl = m["implementation"].toString() == "foreach"
                                        ? StepImplementation::foreach
                                        : StepImplementation::for_loop;
    std::vector<TrainableParameter> params;
    for (int i = 0; i < m["params"].toInt(); ++i) {
      Tensor p = load_npy(npy(d, "param" + QString::number(i)));
      p.set_requires_grad(true);
      std::string pname = "p";  // not "p" + ...: GCC 12's -Wrestrict misfires on that
      pname += std::to_string(i);
      params.push_back({pname, p});
    }
    Optimizer opt(settings_of(m), impl, params);
    double w = 0;
    int compared = 0;
    for (int s = 0; s < 3; ++s) {
      const QString step = "step" + QString::number(s);
      for (std::size_t i = 0; i < params.size(); ++i) {
        Tensor g = load_npy(npy(d, step + ".grad" + QString::number(i)));
        if (i == 2) g = transpose_raw(contiguous_copy(transpose_raw(g, 0, 2)), 0, 2);  // strided
        params[i].tensor.set_grad(g);
      }
      opt.step();
      const auto state = opt.state();
      for (std::size_t i = 0; i < params.size(); ++i) {
        const QString k = QString::number(i);
        w = std::max(w, worst(params[i].tensor, load_npy(npy(d, step + ".param" + k)), 1e-7, 1e-5));
        ++compared;
        for (const char* sname : {"momentum_buffer", "exp_avg", "exp_avg_sq", "step"}) {
          const std::string path = npy(d, step + ".state" + k + "." + sname);
          const bool theirs = QFile::exists(QString::fromStdString(path));
          const auto& ours = state.count(params[i].name) ? state.at(params[i].name)
                                                         : std::map<std::string, Tensor>{};
          QVERIFY2(theirs == (ours.count(sname) > 0),
                   qPrintable(name + ": state " + sname + " of p" + k + " on one side only"));
          if (!theirs) continue;
          w = std::max(w, worst(ours.at(sname), load_npy(path), 1e-7, 1e-5));
          ++compared;
        }
      }
    }
    qInfo("%s: %d tensors over 3 steps, worst %.3g of the tolerance", qPrintable(name), compared,
          w);
    QVERIFY2(w <= 1, qPrintable(name + ": worst " + QString::number(w)));
  }

  // The training step of whole runs: the samples and torchvision's ResNet-18.
  void runsStepAsTorchOptim() {
    QStringList cases;
    const QString onnx = dir_.filePath("resnet18.onnx");
    const QString err =
        run_script({source_dir() + "/samples/export_onnx.py", "--torchvision", "resnet18",
                    "--batch", "2", "--size", "32", "--classes", "10", "--out", dir_.path()});
    QVERIFY2(err.isEmpty(), qPrintable(err));
    struct Run {
      QString label;
      QString model;
      OptimizerKind kind;
    };
    const std::vector<Run> runs = {
        {"mlp_sgd", source_dir() + "/samples/mlp.json", OptimizerKind::sgd},
        {"mlp_momentum", source_dir() + "/samples/mlp.json", OptimizerKind::momentum},
        {"resnet_adamw", source_dir() + "/samples/resnet.json", OptimizerKind::adamw},
        {"gpt_mini_adam", source_dir() + "/samples/gpt_mini.json", OptimizerKind::adam},
        {"transformer_block_adamw", source_dir() + "/samples/transformer_block.json",
         OptimizerKind::adamw},
        {"resnet18_momentum", onnx, OptimizerKind::momentum},
        {"resnet18_adamw", onnx, OptimizerKind::adamw},
    };
    const QString checks = dir_.filePath("runs");
    for (const Run& run : runs) {
      auto model = load_model(run.model.toStdString());
      RunRequest req = scenario_request(*model);
      req.settings.optimizer.kind = run.kind;
      const RunResult r = Runner(model).run(req);
      QVERIFY2(r.ok, qPrintable(run.label + ": " + QString::fromStdString(r.error)));
      QVERIFY(!r.parameters.empty());
      write_run_case(QDir(checks).filePath(run.label), *model, r, req.settings);
      cases << run.label;
    }
    QFile index(QDir(checks).filePath("index.txt"));
    QVERIFY(index.open(QIODevice::WriteOnly));
    index.write((cases.join('\n') + '\n').toUtf8());
    index.close();
    const QString check =
        run_script({source_dir() + "/tests/oracle/optim_oracle.py", "check", checks});
    QVERIFY2(check.isEmpty(), qPrintable(check));
    for (const QString& c : cases) {
      const QJsonObject r = read_json(QDir(checks).filePath(c + "/result.json"));
      QVERIFY2(!r.isEmpty(), qPrintable(c + ": no result"));
      QStringList failures;
      for (const auto& f : r["failures"].toArray()) failures << f.toString();
      qInfo("%s: %d tensors, worst %.3g of the tolerance", qPrintable(c), r["compared"].toInt(),
            r["worst"].toDouble());
      QVERIFY2(failures.isEmpty(), qPrintable(c + ": " + failures.join("; ")));
      QVERIFY(r["compared"].toInt() > 0);
    }
  }

 private:
  QTemporaryDir dir_;
};

QTEST_GUILESS_MAIN(TestOracleOptim)
#include "test_oracle_optim.moc"
