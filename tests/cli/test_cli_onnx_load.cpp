// Issue 38: --frozen PATTERN on every command that opens a model, the load summary that says
// which initializers an ONNX model trains (an ONNX file does not tell buffers from weights), and
// a file whose external data file is absent, saved so by onnx.save_model.
#include <QJsonArray>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "cli_process.hpp"

using ckpt::test::run_cli;

namespace {

QString sample(const char* name) {
  return qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/samples/" + name;
}

}  // namespace

class TestCliOnnxLoad : public QObject {
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

  // onnx.save_model(..., save_as_external_data=True), then the data file removed: a dry run is
  // the whole file's, a real run runs on weights made as torch.nn makes them, and says so.
  void absentExternalDataRunsSayingSo() {
    QTemporaryDir dir;
    const QString path = dir.filePath("resnet.onnx");
    QProcess py;
    py.setProcessChannelMode(QProcess::MergedChannels);
    py.start(qEnvironmentVariable("CKPTLAB_PYTHON"),
             {"-c",
              "import onnx, os, sys; m = onnx.load(sys.argv[1]); "
              "onnx.save_model(m, sys.argv[2], save_as_external_data=True, "
              "all_tensors_to_one_file=True, location='resnet.data', size_threshold=0); "
              "os.remove(os.path.join(os.path.dirname(sys.argv[2]), 'resnet.data'))",
              sample("tiny_resnet.onnx"), path});
    QVERIFY(py.waitForFinished(120000));
    QVERIFY2(py.exitCode() == 0, qPrintable(QString(py.readAll())));
    const auto whole = run_cli({"run", sample("tiny_resnet.onnx"), "--dry-run", "--json"});
    const auto dry = run_cli({"run", path, "--dry-run", "--json"});
    QVERIFY2(dry.code == 0, qPrintable(dry.err));
    QVERIFY2(dry.err.contains("77 of 77 weights absent (its external data file 'resnet.data' is "
                              "absent): dry runs are exact; a real run makes them"),
             qPrintable(dry.err));
    const auto peak = [](const QString& json) {
      return ckpt::test::json_object(json)["peak"].toObject()["bytes"].toInteger();
    };
    QVERIFY(peak(dry.out) > 0);
    QCOMPARE(peak(dry.out), peak(whole.out));
    const auto real = run_cli({"run", path, "--no-baseline", "--threads", "1", "--json"});
    QVERIFY2(real.code == 0, qPrintable(real.err));
    QCOMPARE(peak(real.out), peak(dry.out));
    QVERIFY(real.err.contains("conv1.weight: kaiming_uniform(a=√5), fan_in 27 (Conv)"));
    // --json carries the same summary.
    const QJsonArray load = ckpt::test::json_object(real.out)["load"].toArray();
    QCOMPARE(load.size(), 3);  // trainable, BatchNorm's statistics, the weights made up
    QVERIFY(load[0].toString().startsWith("47 of 77 initializers trainable"));
    QVERIFY(load[2].toString().startsWith("77 of 77 weights absent"));
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

QTEST_GUILESS_MAIN(TestCliOnnxLoad)
#include "test_cli_onnx_load.moc"
