// `ckptlab-cli snapshot` and `run --trace x.pickle` (issue 29), run as a user runs them.
#include <QtTest>

#include <QJsonArray>
#include <QTemporaryDir>

#include "engine/snapshot/measured_timeline.hpp"
#include "engine/snapshot/memory_snapshot.hpp"
#include "tests/cli/cli_process.hpp"

using namespace ckpt;
using namespace ckpt::test;

namespace {

QString source(const QString& rel) {
  return qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/" + rel;
}
QString resnet_snapshot() {
  return source("tests/engine/data/snapshots/resnet__plain.pickle");
}

}  // namespace

class TestCliSnapshot : public QObject {
  Q_OBJECT
 private slots:
  void prints_the_measured_peak() {
    const CliResult r = run_cli({"snapshot", resnet_snapshot(), "--top", "3"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(
        r.out.contains("peak allocated  79,668,736 B (76.0 MiB), after event 539 of 763 (alloc)"),
        qPrintable(r.out));
    QVERIFY(r.out.contains("peak reserved   81,788,928 B"));
    QVERIFY(r.out.contains("at the start    69,206,016 B"));
    QVERIFY(r.out.contains("live at the peak: 206 allocations, the 3 largest:"));
    QVERIFY(r.out.contains("allocated before recording began"));
  }

  void json_and_compare() {
    const CliResult r = run_cli({"snapshot", resnet_snapshot(), "--top", "0", "--compare",
                                 source("samples/resnet.json"), "--batch", "4", "--json"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const QJsonObject j = json_object(r.out);
    QCOMPARE(j["allocated"].toObject()["peak"].toInteger(), 79668736);
    QCOMPARE(j["allocated"].toObject()["start"].toInteger(), 69206016);
    QCOMPARE(j["reserved"].toObject()["peak"].toInteger(), 81788928);
    QVERIFY(j["exact"].toBool());
    QCOMPARE(j["live_at_peak"].toArray().size(), 206);
    std::int64_t sum = 0;
    for (const auto& a : j["live_at_peak"].toArray()) sum += a.toObject()["bytes"].toInteger();
    QCOMPARE(sum, 79668736);
    const QJsonObject c = j["comparison"].toObject();
    QCOMPARE(c["measured_step_peak"].toInteger(), 79668736 - 69206016);
    QVERIFY(c["predicted_peak"].toInteger() > 0);
    // A snapshot is a GPU's: the prediction is the CUDA dry run, whose cuBLAS workspace the
    // measured start holds too (69,206,016 bytes on the H200), so the step's peaks compare.
    QVERIFY2(c["prediction"].toString().contains("PyTorch 2.x"),
             qPrintable(c["prediction"].toString()));
    QCOMPARE(c["predicted_workspace"].toInteger(), 69206016);
    QCOMPARE(c["predicted_step_peak"].toInteger(),
             c["predicted_peak"].toInteger() - c["predicted_workspace"].toInteger());
    QCOMPARE(c["difference"].toInteger(),
             c["measured_step_peak"].toInteger() - c["predicted_step_peak"].toInteger());
    // The prediction is the dry run of the same model: `run --device cuda --dry-run --json`'s peak.
    const CliResult run = run_cli({"run", source("samples/resnet.json"), "--device", "cuda",
                                   "--batch", "4", "--dry-run", "--json", "--no-baseline"});
    QVERIFY2(run.code == 0, qPrintable(run.err));
    QCOMPARE(c["predicted_peak"].toInteger(),
             json_object(run.out)["peak"].toObject()["bytes"].toInteger());
  }

  // The GPU oracle's DenseNet block: the CUDA dry run predicts the H200's step to 0.1 %
  // (33,517,568 predicted, 33,518,080 measured); the CPU's semantics predict no GPU's.
  void cuda_prediction_meets_the_measured_step() {
    const CliResult r =
        run_cli({"snapshot", source("tests/engine/data/snapshots/densenet_block__plain.pickle"),
                 "--json", "--compare", source("samples/densenet_block.json")});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const QJsonObject c = json_object(r.out)["comparison"].toObject();
    QCOMPARE(c["measured_step_peak"].toInteger(), 33518080);
    QVERIFY2(std::abs(c["ratio"].toDouble() - 1.0) < 0.001, qPrintable(r.out.left(400)));
  }

  void bad_input_is_a_clear_error() {
    QTemporaryDir dir;
    const QString bad = dir.filePath("bad.pickle");
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(
        QByteArray("\x80\x04\x8c\x0b"
                   "collections\x94\x93",
                   17));
    f.close();
    CliResult r = run_cli({"snapshot", bad});
    QCOMPARE(r.code, 3);
    QVERIFY2(r.err.contains(bad + ": byte 16: opcode STACK_GLOBAL"), qPrintable(r.err));
    r = run_cli({"snapshot"});
    QCOMPARE(r.code, 2);
    r = run_cli({"snapshot", resnet_snapshot(), "--gpu", "2"});
    QCOMPARE(r.code, 3);
    QVERIFY2(r.err.contains("no device 2 in the snapshot (it has 0)"), qPrintable(r.err));
    r = run_cli({"snapshot", resnet_snapshot(), "--compare", source("samples/resnet.json"),
                 "--checkpoint", "no_such_module"});
    QCOMPARE(r.code, 2);
  }

  // run --trace x.pickle writes a snapshot that reads back, measuring the run's own peak (each
  // allocation rounded to 512 bytes, as a GPU counts).
  void run_writes_a_snapshot() {
    QTemporaryDir dir;
    const QString path = dir.filePath("run.pickle");
    const CliResult r = run_cli({"run", source("samples/mlp.json"), "--dry-run", "--no-baseline",
                                 "--json", "--trace", path});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const MeasuredTimeline t = measure_timeline(read_memory_snapshot(path.toStdString()));
    const std::int64_t peak = json_object(r.out)["peak"].toObject()["bytes"].toInteger();
    QVERIFY(t.peak_allocated >= peak);
    QVERIFY(t.peak_allocated < peak + 512 * 64);
    const CliResult back = run_cli({"snapshot", path});
    QVERIFY2(back.code == 0, qPrintable(back.err));
    QVERIFY(back.out.contains("(forward)") || back.out.contains("(backward)"));
    const CliResult wrong =
        run_cli({"run", source("samples/mlp.json"), "--trace", dir.filePath("x.txt")});
    QCOMPARE(wrong.code, 2);
    QVERIFY(wrong.err.contains(".pickle"));
  }
};

QTEST_GUILESS_MAIN(TestCliSnapshot)
#include "test_cli_snapshot.moc"
