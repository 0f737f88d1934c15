// ckptlab-cli's reliability options (issue 17): a NaN loss is never printed quietly,
// --detect-anomaly names the op that made it, --fail-allocation fails a run on purpose.

#include <QProcess>
#include <QtTest>

#include "cli_process.hpp"

namespace {

using Result = ckpt::test::CliResult;

Result cli(const QStringList& args) {
  return ckpt::test::run_cli(args);
}

}  // namespace

class TestCliReliability : public QObject {
  Q_OBJECT
  QString model_;

 private slots:
  void initTestCase() {
    // log of a linear layer's output: NaN wherever that output is negative.
    model_ = qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/tests/engine/data/log_of_negative.json";
    QVERIFY2(QFile::exists(model_), qPrintable(model_));
  }
  void aNanLossIsAWarning() {
    const Result r = cli({"run", model_, "--no-baseline"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(r.err.contains("warning: the loss is nan") && r.err.contains("--detect-anomaly"),
             qPrintable(r.err));
  }
  void detectAnomalyNamesTheOp() {
    const Result r = cli({"run", model_, "--no-baseline", "--detect-anomaly"});
    QCOMPARE(r.code, 4);
    QVERIFY2(r.err.contains("Function 'log' returned nan values in its 0th output (forward of "
                            "'block.log'"),
             qPrintable(r.err));
  }
  void detectAnomalyPassesAFiniteRun() {
    const QString sample = qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/samples/mlp.json";
    const Result r =
        cli({"run", sample, "--detect-anomaly", "--checkpoint-all", "--variant", "non-reentrant"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(!r.err.contains("warning: the loss"), qPrintable(r.err));
  }
  void failAllocationFailsTheRunNamingTheOp() {
    const QString sample = qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/samples/mlp.json";
    Result r = cli({"run", sample, "--checkpoint-all", "--variant", "non-reentrant",
                    "--fail-allocation", "40"});
    QCOMPARE(r.code, 4);
    QVERIFY2(
        r.err.contains("injected allocation failure: allocation #40") && r.err.contains(" in "),
        qPrintable(r.err));
    r = cli({"run", sample, "--fail-allocation", "0"});
    QCOMPARE(r.code, 2);
  }
};

QTEST_GUILESS_MAIN(TestCliReliability)
#include "test_cli_reliability.moc"
