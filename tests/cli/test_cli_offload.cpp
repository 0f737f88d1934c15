// `--offload MODULE` and `--pcie GB/s` as a user runs them: the device's peak and the host's
// memory in the text and JSON, the refusals, and the exported code applied to the PyTorch model
// the ONNX file came from (torchvision's ResNet-18 here), run by PyTorch 1.13.

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "cli_process.hpp"

namespace {

using Result = ckpt::test::CliResult;

QString sample(const char* name) {
  return qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/samples/" + name;
}

QJsonObject json(const Result& r) {
  return QJsonDocument::fromJson(r.out.toUtf8()).object();
}

}  // namespace

class TestCliOffload : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

 private slots:
  void offloadLowersTheDevicePeakAndNamesTheHostMemory() {
    const QStringList base{"run",       sample("gpt_mini.json"), "--device", "cuda",
                           "--dry-run", "--no-baseline",         "--json"};
    const Result plain = ckpt::test::run_cli(base);
    QVERIFY2(plain.code == 0, qPrintable(plain.err));
    QVERIFY(json(plain)["offload"].isNull());
    const Result off = ckpt::test::run_cli(base + QStringList{"--offload", "h.*", "--pcie", "16"});
    QVERIFY2(off.code == 0, qPrintable(off.err));
    const QJsonObject o = json(off)["offload"].toObject();
    QVERIFY(o["to_host_bytes"].toInteger() > 0);
    QCOMPARE(o["to_device_bytes"].toInteger(), o["to_host_bytes"].toInteger());
    QVERIFY(o["host_peak_bytes"].toInteger() > 0);
    QCOMPARE(o["pcie_gb_per_s"].toDouble(), 16.0);
    QVERIFY(qFuzzyCompare(o["copy_ms_estimate"].toDouble(),
                          2.0 * static_cast<double>(o["to_host_bytes"].toInteger()) / 16e9 * 1e3));
    QVERIFY(json(off)["peak"].toObject()["bytes"].toInteger() <
            json(plain)["peak"].toObject()["bytes"].toInteger());
    const Result text = ckpt::test::run_cli(
        {"run", sample("gpt_mini.json"), "--device", "cuda", "--dry-run", "--offload", "h.0"});
    QVERIFY2(text.code == 0, qPrintable(text.err));
    QVERIFY2(text.out.contains("offload    host memory "), qPrintable(text.out));
  }

  void refusalsSayWhy() {
    const Result cpu = ckpt::test::run_cli({"run", sample("gpt_mini.json"), "--offload", "h.0"});
    QVERIFY(cpu.code != 0);
    QVERIFY2(cpu.err.contains("cannot offload to host memory on cpu"), qPrintable(cpu.err));
    const Result none = ckpt::test::run_cli(
        {"run", sample("gpt_mini.json"), "--device", "cuda", "--dry-run", "--offload", "h.9"});
    QCOMPARE(none.code, 2);
    QVERIFY2(none.err.contains("no module 'h.9'"), qPrintable(none.err));
    const Result pcie = ckpt::test::run_cli(
        {"run", sample("gpt_mini.json"), "--device", "cuda", "--dry-run", "--pcie", "0"});
    QCOMPARE(pcie.code, 2);
    QVERIFY2(pcie.err.contains("--pcie"), qPrintable(pcie.err));
  }

  // `plan --weigh-offload` (issue 28): the planner weighs each module's copies to host memory
  // against recomputing it. Copies all but free: it offloads, says so in the text and the JSON,
  // and the exported code wraps those modules in save_on_cpu. At the default 25 GB/s, recompute
  // on the GPU is cheaper: nothing is offloaded. On the cpu it is refused.
  void planWeighsOffloadAgainstRecompute() {
    const QString code = dir_.filePath("weighed_plan.py");
    const QStringList base{
        "plan", sample("gpt_mini.json"), "--device", "cuda", "--batch", "64", "--budget",
        "92%",  "--weigh-offload"};
    const Result fast =
        ckpt::test::run_cli(base + QStringList{"--pcie", "100000", "--json", "--code", code});
    QVERIFY2(fast.code == 0, qPrintable(fast.err));
    const QJsonObject j = json(fast);
    QCOMPARE(j["times"].toString(), QString("estimated-reference-gpu"));
    const QJsonArray offloaded = j["plan"].toObject()["offload"].toArray();
    QVERIFY2(!offloaded.isEmpty(), qPrintable(fast.out.left(2000)));
    QVERIFY(j["plan"].toObject()["transfer_ms"].toDouble() > 0);
    int twins = 0;
    for (const auto& c : j["candidates"].toArray()) twins += c.toObject()["offload"].toBool();
    QCOMPARE(twins, 24);
    QFile f(code);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QString py = QString::fromUtf8(f.readAll());
    QVERIFY2(py.contains("save_on_cpu"), qPrintable(py.left(2000)));
    // Each offloaded module's call in its parent's forward ("h.0.attn": self.attn in a block).
    for (const auto& m : offloaded) {
      const QString call = "offloaded(self." + m.toString().section('.', -1) + ",";
      QVERIFY2(py.contains(call), qPrintable(call + "\n" + py));
    }

    const Result slow = ckpt::test::run_cli(base);
    QVERIFY2(slow.code == 0, qPrintable(slow.err));
    QVERIFY2(slow.out.contains("offload     weighed against recompute (--weigh-offload): 0 of 24 "
                               "modules offloaded"),
             qPrintable(slow.out));
    QVERIFY2(slow.out.contains("a reference GPU's forward times"), qPrintable(slow.out));

    const Result cpu = ckpt::test::run_cli(
        {"plan", sample("gpt_mini.json"), "--budget", "60%", "--weigh-offload"});
    QCOMPARE(cpu.code, 2);
    QVERIFY2(cpu.err.contains("--weigh-offload needs --device cuda"), qPrintable(cpu.err));
  }

  // The ONNX model's code: apply_plan(model) offloads the named modules of the user's own
  // nn.Module (save_on_cpu around their forward) and checkpoints the others; PyTorch runs it.
  void exportedCodeOffloadsInPyTorch() {
    const QString code = dir_.filePath("offload_plan.py");
    const Result r = ckpt::test::run_cli({"code", sample("tiny_resnet.onnx"), "--device", "cuda",
                                          "--offload", "layer1.0", "--checkpoint", "layer2"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QFile f(code);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(r.out.toUtf8());
    f.close();
    const char* script = R"(
import importlib.util, sys, torch, torchvision
spec = importlib.util.spec_from_file_location("plan", sys.argv[1])
plan = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plan)
assert plan.OFFLOAD == ["layer1.0"], plan.OFFLOAD
model = plan.apply_plan(torchvision.models.resnet18())
model(torch.randn(2, 3, 64, 64)).sum().backward()
assert model.layer1[0].forward.__name__ == "offloaded_forward"
assert "layer1.0.conv1.weight" in model.state_dict()
print("ok")
)";
    QProcess py;
    py.start(qEnvironmentVariable("CKPTLAB_PYTHON", "/usr/bin/python3"), {"-c", script, code});
    QVERIFY(py.waitForFinished(300000));
    QVERIFY2(py.exitCode() == 0, py.readAllStandardError().constData());
    QVERIFY(py.readAllStandardOutput().contains("ok"));
  }
};

QTEST_GUILESS_MAIN(TestCliOffload)
#include "test_cli_offload.moc"
