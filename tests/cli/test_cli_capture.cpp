// ckptlab-cli and captures (issue 37): capture-script writes the module this build embeds, the
// written copy captures a model with Debian's python3, and the commands open the capture as any
// model; capture-ops lists what a capture may contain.
#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include "cli_process.hpp"

using namespace ckpt::test;

class TestCliCapture : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    const CliResult r = run_cli({"capture-script", dir_.filePath("env")});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    script_ = dir_.filePath("env/ckptlab_capture.py");
    QFile written(script_),
        source(qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/resources/python/ckptlab_capture.py");
    QVERIFY(written.open(QIODevice::ReadOnly) && source.open(QIODevice::ReadOnly));
    QCOMPARE(written.readAll(), source.readAll());  // the module, byte for byte

    // The written copy, as a user's environment imports it, on a small residual MLP.
    QProcess py;
    py.setWorkingDirectory(dir_.filePath("env"));
    py.start(qEnvironmentVariable("CKPTLAB_PYTHON"),
             {"-c",
              "import sys, torch, torch.nn as nn, ckptlab_capture\n"
              "torch.manual_seed(0)\n"
              "class Block(nn.Module):\n"
              "    def __init__(self):\n"
              "        super().__init__()\n"
              "        self.fc1, self.fc2 = nn.Linear(8, 16), nn.Linear(16, 8)\n"
              "    def forward(self, x):\n"
              "        return x + self.fc2(torch.relu(self.fc1(x)))\n"
              "model = nn.Sequential(Block(), Block(), nn.LayerNorm(8), nn.Linear(8, 3))\n"
              "ckptlab_capture.capture(model, torch.randn(4, 8), sys.argv[1], weights=True)\n",
              dir_.filePath("mlp.capture.json")});
    QVERIFY(py.waitForFinished(120000));
    QVERIFY2(py.exitCode() == 0, py.readAllStandardError().constData());
  }

  void commandsOpenACapture() {
    const QString model = dir_.filePath("mlp.capture.json");
    CliResult r = run_cli({"run", model, "--json", "--no-baseline"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY(json_object(r.out)["ok"].toBool());
    r = run_cli({"modules", model});
    QVERIFY2(r.code == 0 && r.out.contains("Block") && r.out.contains("fc1"), qPrintable(r.out));
    r = run_cli({"code", model, "--checkpoint", "0"});
    QVERIFY2(
        r.code == 0 && r.out.contains("captured from a PyTorch model") && r.out.contains("\"0\""),
        qPrintable(r.out + r.err));
    r = run_cli({"compare", model, "--config", "plain:", "--config",
                 "blocks: --checkpoint 0 "
                 "--checkpoint 1"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
  }

  void captureOpsListsTheTranslatedOps() {
    const CliResult r = run_cli({"capture-ops"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const QStringList ops = r.out.split('\n', Qt::SkipEmptyParts);
    for (const char* op : {"aten::addmm", "aten::convolution", "aten::native_batch_norm",
                           "aten::native_layer_norm", "aten::_softmax", "aten::embedding"})
      QVERIFY2(ops.contains(op), op);
    QVERIFY(std::is_sorted(ops.begin(), ops.end()));
  }

 private:
  QTemporaryDir dir_;
  QString script_;
};

QTEST_GUILESS_MAIN(TestCliCapture)
#include "test_cli_capture.moc"
