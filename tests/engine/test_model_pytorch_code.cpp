// The PyTorch code written for a configuration is real PyTorch: run by /usr/bin/python3 on the
// engine's weights and inputs, it gives the engine's loss, the same set of parameter gradients
// (including the ones a reentrant checkpoint silently loses) and the same values.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/model/finalize.hpp"
#include "engine/model/loader.hpp"
#include "engine/plan/pytorch_code.hpp"
#include "engine/run/run_request.hpp"
#include "engine/run/runner.hpp"
#include "engine/tensor/init.hpp"
#include "engine/tensor/npy.hpp"
#include "tests/engine/support/relative_error.hpp"

using namespace ckpt;
using ckpt::test::relative_error;

class TestModelPytorchCode : public QObject {
  Q_OBJECT
 private slots:
  void runsInPyTorchWithTheEnginesNumbers_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QStringList>("modules");  // "def:<definition>" for all its instances
    QTest::addColumn<bool>("reentrant");
    QTest::addColumn<QString>("optimizer");    // "": none
    QTest::addColumn<QStringList>("offload");  // offloaded in the code (values are unchanged)
    QTest::newRow("densenet bottlenecks")
        << "densenet_block.json"
        << QStringList{"features.denseblock1.denselayer1.bottleneck",
                       "features.denseblock1.denselayer2.bottleneck",
                       "features.denseblock2.denselayer6.bottleneck"}
        << true << "" << QStringList{};
    QTest::newRow("densenet plain")
        << "densenet_block.json" << QStringList{} << true << "" << QStringList{};
    QTest::newRow("resnet use_checkpoint")
        << "resnet.json" << QStringList{"stage1.0", "stage1.1", "stage2.0", "stage2.1",
                                        "stage3.0", "stage3.1", "stage4.0", "stage4.1"}
        << false << "" << QStringList{};
    QTest::newRow("resnet one block")
        << "resnet.json" << QStringList{"stage2.1"} << true << "" << QStringList{};
    QTest::newRow("heavy model") << "heavy_model.json" << QStringList{"def:heavy_function"} << true
                                 << "" << QStringList{};
    QTest::newRow("lstm reentrant")
        << "lstm.json" << QStringList{"def:lstm.cell"} << true << "" << QStringList{};
    QTest::newRow("lstm non-reentrant")
        << "lstm.json" << QStringList{"def:lstm.cell"} << false << "" << QStringList{};
    QTest::newRow("seed 002 head")
        << "subnet_trainable_head.json" << QStringList{"net"} << true << "" << QStringList{};
    QTest::newRow("seed 002 head, non-reentrant")
        << "subnet_trainable_head.json" << QStringList{"net"} << false << "" << QStringList{};
    // The training step's optimizer, as the code's make_optimizer() builds it: the parameters
    // after torch.optim's step are the engine's.
    QTest::newRow("resnet, SGD with momentum")
        << "resnet.json" << QStringList{"stage1.0"} << false << "momentum" << QStringList{};
    QTest::newRow("resnet, AdamW")
        << "resnet.json" << QStringList{"stage2.1"} << true << "adamw" << QStringList{};
    // save_on_cpu around the blocks: the same numbers in PyTorch (the engine offloads only on a
    // GPU, where host memory is apart; its values do not depend on where saved tensors wait).
    QTest::newRow("resnet, blocks offloaded")
        << "resnet.json" << QStringList{"stage2.1"} << false << ""
        << QStringList{"stage1.0", "stage3.0", "stage3.1"};
    QTest::newRow("densenet, Adam")
        << "densenet_block.json" << QStringList{} << true << "adam" << QStringList{};
  }
  void runsInPyTorchWithTheEnginesNumbers() {
    QFETCH(QString, file);
    QFETCH(QStringList, modules);
    QFETCH(bool, reentrant);
    QFETCH(QString, optimizer);
    QFETCH(QStringList, offload);
    const auto exported = [&](RunRequest r) {
      for (const auto& m : offload) r.plan.offload.insert(m.toStdString());
      return r;
    };
    auto model =
        load_model((qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/samples/" + file).toStdString());
    RunRequest c = scenario_request(*model);
    c.settings.threads = 1;
    c.settings.use_reentrant = reentrant;
    if (!optimizer.isEmpty())
      c.settings.optimizer.kind = optimizer_from_name(optimizer.toStdString());
    for (const auto& m : modules) {
      if (m.startsWith("def:"))
        for (const Module* i : model->instances_of(m.mid(4).toStdString()))
          c.plan.modules.insert(i->path);
      else
        c.plan.modules.insert(m.toStdString());
    }
    // Inputs drawn here and handed to both sides.
    Generator gen(11);
    nlohmann::json inputs = nlohmann::json::array();
    for (const auto& in : model->inputs) {
      const Shape s = resolve_input_shape(in, model->scenario.batch);
      c.settings.inputs.push_back(in.classes > 0 ? class_indices(s, in.classes, gen)
                                                 : normal_tensor(s, 0, 1, gen));
      inputs.push_back({{"name", in.name},
                        {"requires_grad", !in.is_target && in.requires_grad},
                        {"target", in.is_target}});
    }
    const RunResult r = Runner(model).run(c);
    QVERIFY2(r.ok, r.error.c_str());

    QTemporaryDir dir;
    if (qEnvironmentVariableIsSet("CKPTLAB_ORACLE_KEEP")) {
      dir.setAutoRemove(false);
      qInfo("kept in %s", qPrintable(dir.path()));
    }
    const std::string d = dir.path().toStdString();
    std::ofstream(d + "/code.py") << pytorch_code(*model, exported(c));
    nlohmann::json names = nlohmann::json::array();
    for (std::size_t i = 0; i < model->parameters.size(); ++i) {
      names.push_back(model->parameters[i].name);
      save_npy(d + "/param_" + std::to_string(i) + ".npy", model->parameters[i].initial);
    }
    for (std::size_t i = 0; i < c.settings.inputs.size(); ++i)
      save_npy(d + "/input_" + std::to_string(i) + ".npy", c.settings.inputs[i]);
    const char* loss = model->scenario.loss == LossKind::model  ? "cross_entropy"
                       : model->scenario.loss == LossKind::mean ? "mean"
                                                                : "sum";
    std::ofstream(d + "/case.json") << nlohmann::json{
        {"parameters", names},
        {"inputs", inputs},
        {"loss", loss},
        {"optimizer",
         !optimizer.isEmpty()}}.dump();
    QProcess p;
    p.setProcessChannelMode(QProcess::MergedChannels);
    p.start(
        qEnvironmentVariable("CKPTLAB_PYTHON", "/usr/bin/python3"),
        {qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/tests/engine/test_model_pytorch_code.py",
         dir.path()});
    QVERIFY(p.waitForFinished(300000));
    const QByteArray log = p.readAll();
    if (p.exitCode() != 0) {
      qWarning("%s", pytorch_code(*model, exported(c)).c_str());
      QFAIL(log.constData());
    }
    const double torch_loss = load_npy(d + "/loss.npy").item();
    QVERIFY2(std::abs(torch_loss - r.loss.item()) <= 1e-4 * std::max(1.0, std::abs(torch_loss)),
             qPrintable(QString("loss %1, PyTorch %2").arg(r.loss.item()).arg(torch_loss)));
    double largest = 0;
    for (const auto& [name, g] : r.gradients)
      for (double v : g.to_vector()) largest = std::max(largest, std::abs(v));
    int compared = 0;
    for (std::size_t i = 0; i < model->parameters.size(); ++i) {
      const auto& name = model->parameters[i].name;
      const QString f = QString::fromStdString(d + "/grad_" + std::to_string(i) + ".npy");
      QVERIFY2(QFile::exists(f) == (r.gradients.count(name) > 0),
               qPrintable(QString("%1: PyTorch %2 a gradient, the engine %3")
                              .arg(QString::fromStdString(name))
                              .arg(QFile::exists(f) ? "has" : "has no")
                              .arg(r.gradients.count(name) ? "has one" : "has none")));
      if (!QFile::exists(f)) continue;
      const double e =
          relative_error(r.gradients.at(name), load_npy(f.toStdString()), 1e-3 * largest);
      QVERIFY2(e < 2e-4, qPrintable(QString("%1: %2").arg(QString::fromStdString(name)).arg(e)));
      ++compared;
    }
    QVERIFY(compared > 0);
    if (!optimizer.isEmpty()) {
      // After the step each parameter the engine stepped is PyTorch's, to 1e-3 of how far the
      // step moved it. Adam's first step moves a weight by lr * g / (|g| + eps): about lr for
      // any gradient well above eps, so a weight whose gradient is a cancellation (1e-3 of its
      // tensor's largest, where the two sides' float32 rounding differs in relative terms) can
      // move by anything up to lr on either side; those are held to that bound only (as the
      // gradients above are compared to 1e-3 of the model's largest).
      const bool adam = optimizer.startsWith("adam");
      int stepped = 0;
      for (std::size_t i = 0; i < model->parameters.size(); ++i) {
        const auto& name = model->parameters[i].name;
        if (!r.parameters.count(name)) continue;
        const std::string f = d + "/stepped_" + std::to_string(i) + ".npy";
        QVERIFY2(QFile::exists(QString::fromStdString(f)), name.c_str());
        const auto before = model->parameters[i].initial.to_vector();
        const auto engine = r.parameters.at(name).to_vector(), torch = load_npy(f).to_vector();
        const auto grad = load_npy(d + "/grad_" + std::to_string(i) + ".npy").to_vector();
        QCOMPARE(engine.size(), torch.size());
        double moved = 1e-12;
        for (std::size_t k = 0; k < engine.size(); ++k)
          moved = std::max(moved, std::abs(torch[k] - before[k]));
        for (std::size_t k = 0; k < engine.size(); ++k) {
          const bool cancellation = adam && std::abs(grad[k]) < 1e-3 * largest;
          const double bound = cancellation ? 2 * moved : 1e-3 * moved;
          QVERIFY2(std::abs(engine[k] - torch[k]) <= bound,
                   qPrintable(QString("%1[%2] after the step: engine %3, PyTorch %4 (before %5, "
                                      "gradient %6)")
                                  .arg(QString::fromStdString(name))
                                  .arg(k)
                                  .arg(engine[k])
                                  .arg(torch[k])
                                  .arg(before[k])
                                  .arg(grad[k])));
        }
        ++stepped;
      }
      QVERIFY(stepped > 0);
    }
    // The warnings PyTorch gave are the ones the engine gave.
    QFile w(dir.filePath("warnings.txt"));
    QVERIFY(w.open(QIODevice::ReadOnly));
    const bool torch_warned = w.readAll().contains("None of the inputs have requires_grad=True");
    bool engine_warned = false;
    for (const auto& m : r.trace.messages())
      engine_warned |= m.text.find("None of the inputs have requires_grad=True") == 0;
    QCOMPARE(engine_warned, torch_warned);
  }

  // Issue 31: the code is the training step the run assumed: its optimizer, torch.autocast
  // around the forward and the loss, and for float16 on CUDA the gradient scaler. The CPU's
  // bf16 step runs as written (its usage part, as __main__) in PyTorch 1.13.
  void writesTheTrainingStepItAssumed() {
    auto model =
        load_model((qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/samples/densenet_block.json")
                       .toStdString());
    RunRequest c = scenario_request(*model);
    c.plan.modules.insert("features.denseblock1.denselayer1.bottleneck");
    c.settings.optimizer.kind = OptimizerKind::adamw;
    c.settings.amp = AmpMode::bf16;
    const std::string cpu = pytorch_code(*model, c);
    for (const char* line : {"    return torch.optim.AdamW(model.parameters(), lr=",
                             "optimizer = make_optimizer(model)\n",
                             "with torch.autocast(\"cpu\", dtype=torch.bfloat16):\n",
                             "    loss.backward()\n    optimizer.step()\n"})
      QVERIFY2(cpu.find(line) != std::string::npos, (std::string(line) + "\n" + cpu).c_str());
    QTemporaryDir dir;
    const QString path = dir.filePath("step.py");
    std::ofstream(path.toStdString()) << cpu;
    QProcess p;
    p.setProcessChannelMode(QProcess::MergedChannels);
    p.start(qEnvironmentVariable("CKPTLAB_PYTHON", "/usr/bin/python3"), {path});
    QVERIFY(p.waitForFinished(300000));
    QVERIFY2(p.exitCode() == 0, (p.readAll().toStdString() + "\n" + cpu).c_str());

    c.settings.device = Device::cuda;
    c.settings.amp = AmpMode::fp16;
    const std::string cuda = pytorch_code(*model, c);
    for (const char* line :
         {".cuda()", "device=\"cuda\"", "scaler = torch.cuda.amp.GradScaler()\n",
          "with torch.autocast(\"cuda\", dtype=torch.float16):\n",
          "    scaler.scale(loss).backward()\n    scaler.step(optimizer)\n    scaler.update()\n"})
      QVERIFY2(cuda.find(line) != std::string::npos, (std::string(line) + "\n" + cuda).c_str());
    // Without an optimizer or autocast, the step is today's: loss.backward() alone.
    c.settings.optimizer.kind = OptimizerKind::none;
    c.settings.amp = AmpMode::off;
    const std::string plain = pytorch_code(*model, c);
    QVERIFY(plain.find("torch.autocast") == std::string::npos &&
            plain.find("optimizer") == std::string::npos &&
            plain.find("loss.backward()\n") != std::string::npos);
  }
};

QTEST_GUILESS_MAIN(TestModelPytorchCode)
#include "test_model_pytorch_code.moc"
