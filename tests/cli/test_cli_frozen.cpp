// Issue 38: --frozen PATTERN on every command that opens a model, and the load summary that says
// which initializers an ONNX model trains (an ONNX file does not tell buffers from weights).
#include <QtTest>

#include "cli_process.hpp"

using ckpt::test::run_cli;

namespace {

QString sample(const char* name) {
  return qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/samples/" + name;
}

}  // namespace

class TestCliFrozen : public QObject {
  Q_OBJECT
 private slots:
  // The summary on stderr, the whole list under `modules`.
  void summaryListsTrainableInitializers() {
    const auto r = run_cli({"modules", sample("tiny_resnet.onnx")});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(r.err.contains("tiny_resnet.onnx: 47 of 77 initializers trainable: conv1.weight"),
             qPrintable(r.err));
    QVERIFY2(r.err.contains("not trainable (BatchNorm running statistics): bn1.running_mean"),
             qPrintable(r.err));
    QVERIFY2(r.out.contains("\nparameters\n  47 of 77 initializers trainable: conv1.weight, "
                            "bn1.weight, bn1.bias,"),
             qPrintable(r.out));
    QVERIFY(r.out.contains("fc.weight, fc.bias\n"));  // every name, not cut
  }

  // A module path freezes its parameters; the next option of the command still parses.
  void frozenModulesAreNotTrained() {
    const auto r = run_cli(
        {"modules", sample("tiny_resnet.onnx"), "--frozen", "layer1", "--frozen=fc", "--json"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(r.err.contains("33 of 77 initializers trainable"), qPrintable(r.err));
    QVERIFY2(r.err.contains("not trainable (--frozen 'layer1'): layer1.0.conv1.weight"),
             qPrintable(r.err));
    QVERIFY2(r.err.contains("not trainable (--frozen 'fc'): fc.weight, fc.bias"),
             qPrintable(r.err));
    // A frozen model runs, and its frozen parameters get no gradient.
    const QString dump = QDir::temp().filePath("ckptlab_frozen_dump");
    QDir(dump).removeRecursively();
    const auto run = run_cli({"run", sample("tiny_resnet.onnx"), "--frozen", "fc", "--no-baseline",
                              "--threads", "1", "--dump", dump});
    QVERIFY2(run.code == 0, qPrintable(run.err));
    QVERIFY(QFile::exists(dump + "/conv1.weight.npy"));
    QVERIFY(!QFile::exists(dump + "/fc.weight.npy"));
    QDir(dump).removeRecursively();
  }

  void badPatternsSayWhy() {
    const auto none = run_cli({"run", sample("tiny_resnet.onnx"), "--frozen", "nothing.*"});
    QCOMPARE(none.code, 3);
    QVERIFY2(none.err.contains("--frozen 'nothing.*' names no parameter or module of the model"),
             qPrintable(none.err));
    const auto missing = run_cli({"run", sample("tiny_resnet.onnx"), "--frozen"});
    QCOMPARE(missing.code, 2);
    QVERIFY2(missing.err.contains("--frozen needs a PATTERN"), qPrintable(missing.err));
  }
};

QTEST_GUILESS_MAIN(TestCliFrozen)
#include "test_cli_frozen.moc"
