// ckptlab-cli as a user runs it: through a process, checking exit codes, messages and files,
// and that its figures equal the engine's for the same run.

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>

#include "cli_process.hpp"

#include "engine/model/loader.hpp"
#include "engine/report/run_summary.hpp"
#include "engine/run/runner.hpp"
#include "engine/tensor/npy.hpp"

using namespace ckpt;

using ckpt::test::json_object;

namespace {

const char* kModel = R"({
  "format": "checkpoint-lab-model", "version": 1,
  "name": "cli-mlp", "seed": 3, "batch": 4,
  "inputs": [{"name": "x", "shape": ["batch", 16], "requires_grad": false}],
  "model": {"type": "sequential", "layers": [
    {"type": "linear", "name": "fc1", "in": 16, "out": 32},
    {"type": "sequential", "name": "block", "layers": [
      {"type": "linear", "name": "fc", "in": 32, "out": 32},
      {"type": "tanh"},
      {"type": "linear", "name": "fc2", "in": 32, "out": 32},
      {"type": "sin"}
    ]},
    {"type": "linear", "name": "head", "in": 32, "out": 2}
  ]}
})";

using Result = ckpt::test::CliResult;

Result cli(const QStringList& args) {
  return ckpt::test::run_cli(args);
}

}  // namespace

class TestCli : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString model_;

  QString path(const QString& name) const { return dir_.filePath(name); }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    model_ = path("model.json");
    QFile f(model_);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(kModel);
  }

  void versionHelpAndUsage() {
    auto r = cli({"--version"});
    QCOMPARE(r.code, 0);
    QVERIFY(r.out.startsWith("ckptlab-cli "));
    r = cli({"--help"});
    QCOMPARE(r.code, 0);
    QVERIFY(r.out.contains("compare MODEL"));
    r = cli({});
    QCOMPARE(r.code, 2);
    // Every command's --help, `help COMMAND`, the reference and the man page are printed from
    // one table: each option --help lists is in the reference and the man page too.
    const auto reference = cli({"help", "--markdown"});
    QCOMPARE(reference.code, 0);
    const auto man = cli({"help", "--man"});
    QCOMPARE(man.code, 0);
    QVERIFY(man.out.startsWith(".\\\" Generated"));
    QVERIFY(man.out.contains(".TH CKPTLAB\\-CLI 1"));
    for (const char* c : {"run", "modules", "compare", "code", "plan", "snapshot", "help"}) {
      r = cli({c, "--help"});
      QCOMPARE(r.code, 0);
      QVERIFY2(r.out.startsWith(QStringLiteral("usage: ckptlab-cli %1 ").arg(c)), c);
      QCOMPARE(cli({"help", c}).out, r.out);
      QVERIFY2(reference.out.contains(QStringLiteral("### ckptlab-cli %1").arg(c)), c);
      static const QRegularExpression flag(QStringLiteral("^  (--[a-z0-9-]+)"),
                                           QRegularExpression::MultilineOption);
      int flags = 0;
      for (auto m = flag.globalMatch(r.out); m.hasNext(); ++flags) {
        const QString f = m.next().captured(1);
        QVERIFY2(reference.out.contains("`" + f), qPrintable(f));
        QVERIFY2(man.out.contains("\\fB" + QString(f).replace("-", "\\-")), qPrintable(f));
      }
      QVERIFY2(std::string_view(c) == "run" ? flags > 30 : flags > 0, c);
    }
    r = cli({"help", "frobnicate"});
    QCOMPARE(r.code, 2);
    r = cli({"frobnicate"});
    QCOMPARE(r.code, 2);
    QVERIFY(r.err.contains("unknown command 'frobnicate'"));
  }

  void badArgumentsAreUsageErrors() {
    auto r = cli({"run", model_, "--batch", "zero"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("--batch expects a number, got 'zero'"), qPrintable(r.err));
    r = cli({"run", model_, "--variant", "sideways"});
    QCOMPARE(r.code, 2);
    r = cli({"run", model_, "--amp", "half", "--dry-run"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("--amp must be off, bf16 or fp16, got 'half'"), qPrintable(r.err));
    r = cli({"run", model_, "--checkpoint", "blok"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("no module 'blok'"), qPrintable(r.err));
    r = cli({"run", model_, "--frob"});
    QCOMPARE(r.code, 2);
    QVERIFY(r.err.contains("unknown option --frob"));
    r = cli({"run", model_, "--trace", path("t.txt")});
    QCOMPARE(r.code, 2);
    r = cli({"run", model_, "--input", path("missing.npy")});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("missing.npy"), qPrintable(r.err));
  }

  void badModelsExitThreeNamingTheFile() {
    auto r = cli({"run", path("nope.json")});
    QCOMPARE(r.code, 3);
    QVERIFY2(r.err.contains("nope.json"), qPrintable(r.err));
    QFile bad(path("broken.json"));
    QVERIFY(bad.open(QIODevice::WriteOnly));
    bad.write("{\n  \"name\": \"x\",\n  \"model\": {\n");
    bad.close();
    r = cli({"run", bad.fileName()});
    QCOMPARE(r.code, 3);
    QVERIFY2(r.err.contains("broken.json"), qPrintable(r.err));
    QVERIFY2(r.err.contains("broken.json:4:1"), qPrintable(r.err));  // line and column
  }

  void runJsonEqualsTheEngine() {
    const auto r = cli({"run", model_, "--json", "--seed", "5"});
    QCOMPARE(r.code, 0);
    const QJsonObject j = json_object(r.out);
    QVERIFY(j["ok"].toBool());

    auto model = load_model(model_.toStdString());
    RunRequest c;
    c.settings.seed = 5;
    const RunResult run = Runner(model).run(c);
    QVERIFY(run.ok);
    const RunSummary s = summarize(*model, run, "plain");
    QCOMPARE(j["peak"].toObject()["bytes"].toInteger(), s.peak.bytes);
    QCOMPARE(j["peak"].toObject()["step"].toInteger(), s.peak.step);
    QCOMPARE(j["end_of_forward"].toObject()["bytes"].toInteger(), s.end_of_forward_total);
    QCOMPARE(j["executions"].toObject()["forward"].toInteger(), s.executions.forward);
    QCOMPARE(j["executions"].toObject()["backward"].toInteger(), s.executions.backward);
    QCOMPARE(j["loss"].toDouble(), s.loss);
    const auto cats = j["peak"].toObject()["by_category"].toObject();
    for (std::size_t i = 0; i < kMemoryCategoryCount; ++i)
      QCOMPARE(cats[category_name(static_cast<MemoryCategory>(i))].toInteger(),
               s.peak.by_category[i]);
    // The baseline ran in the same process.
    QVERIFY(j["baseline"].isObject());
    QCOMPARE(j["baseline"].toObject()["peak_bytes"].toInteger(), s.peak.bytes);
  }

  void textSummaryNamesTheFigures() {
    const auto r = cli({"run", model_});
    QCOMPARE(r.code, 0);
    for (const char* key :
         {"peak", "end of forward", "op executions", "wall time", "vs no checkpointing"})
      QVERIFY2(r.out.contains(key), key);
  }

  // The lessons the app shows beside a run, after the summary and in --json: the LSTM's cells
  // checkpointed inside the checkpointed LSTM each stash the CPU generator's state (5,056 bytes
  // in PyTorch 1.13), and the outer segment is never recomputed (non-reentrant).
  void runPrintsTheLessons() {
    const QString lstm = qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/samples/lstm.json";
    const QStringList args = {"run", lstm, "--checkpoint-all", "--variant", "non-reentrant"};
    const auto r = cli(args);
    QCOMPARE(r.code, 0);
    const auto at = r.out.indexOf("\nlessons\n");
    QVERIFY2(at > 0, qPrintable(r.out));
    QVERIFY2(r.out.mid(at).contains("Each checkpoint stashes the RNG state: 4.9 KiB per segment"),
             qPrintable(r.out));
    QVERIFY2(r.out.mid(at).contains("lstm is checkpointed but never recomputed"),
             qPrintable(r.out));
    const auto json = json_object(cli(QStringList(args) << "--json").out);
    const QJsonArray lessons = json["lessons"].toArray();
    QJsonObject rng;
    for (const auto& l : lessons)
      if (l.toObject()["title"].toString().contains("RNG")) rng = l.toObject();
    QCOMPARE(rng["title"].toString(),
             QString("Each checkpoint stashes the RNG state: 4.9 KiB per segment"));
    QCOMPARE(rng["step"].toInt(), 2);
    QCOMPARE(rng["from_message"].toBool(), false);
  }

  void dumpWritesNpyThatNumpyReads() {
    const QString d = path("dump");
    const auto r = cli({"run", model_, "--dump", d, "--no-baseline"});
    QCOMPARE(r.code, 0);
    auto model = load_model(model_.toStdString());
    const RunResult run = Runner(model).run(scenario_request(*model));
    QVERIFY(!run.gradients.empty());
    for (const auto& [name, g] : run.gradients) {
      const QString f = d + "/" + QString::fromStdString(name) + ".npy";
      QVERIFY2(QFile::exists(f), qPrintable(f));
      QCOMPARE(load_npy(f.toStdString()).to_vector(), g.to_vector());
    }
    // numpy (the interpreter that has torch) reads them too.
    QProcess py;
    py.start(qEnvironmentVariable("CKPTLAB_PYTHON"),
             {"-c", "import numpy, sys; a = numpy.load(sys.argv[1]); print(a.shape, a.dtype)",
              d + "/fc1.weight.npy"});
    QVERIFY(py.waitForFinished(60000));
    QCOMPARE(py.exitCode(), 0);
    QCOMPARE(QString(py.readAllStandardOutput()).trimmed(), QString("(32, 16) float32"));
    QVERIFY(QFile::exists(d + "/loss.npy"));
  }

  // The issue's promise to PyTorch users: the dumped gradients of an ONNX model are PyTorch's.
  // PyTorch runs samples/export_onnx.py's tiny ResNet on the .onnx file's weights and the same
  // input, and compares every parameter's gradient with the .npy file of the same name.
  void dumpOfAnOnnxSampleMatchesPyTorch() {
    const QString src = qEnvironmentVariable("CKPTLAB_SOURCE_DIR");
    const QString onnx = src + "/samples/tiny_resnet.onnx";
    const QString input = path("resnet_input.npy"), d = path("resnet_dump");
    QProcess make;
    make.start(qEnvironmentVariable("CKPTLAB_PYTHON"),
               {"-c",
                "import numpy, sys; numpy.save(sys.argv[1], numpy.random.default_rng(3)"
                ".standard_normal((2, 3, 16, 16)).astype(numpy.float32))",
                input});
    QVERIFY(make.waitForFinished(60000));
    QCOMPARE(make.exitCode(), 0);
    const auto r = cli({"run", onnx, "--input", input, "--loss", "sum", "--threads", "1", "--dump",
                        d, "--no-baseline"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const char* compare = R"(
import sys, numpy, onnx, onnx.numpy_helper, torch
src, onnx_path, x_path, dump = sys.argv[1:5]
sys.path.insert(0, src + "/samples")
import export_onnx
m = export_onnx.MODELS["tiny_resnet"]()
weights = {t.name: torch.from_numpy(onnx.numpy_helper.to_array(t).copy())
           for t in onnx.load(onnx_path).graph.initializer}
m.load_state_dict(weights, strict=False)
m.train()
m(torch.from_numpy(numpy.load(x_path))).sum().backward()
n = 0
for name, p in m.named_parameters():
    ours = numpy.load(dump + "/" + name + ".npy")
    if not numpy.allclose(ours, p.grad.numpy(), rtol=1e-4, atol=2e-3):
        sys.exit(name + " differs by " + str(numpy.abs(ours - p.grad.numpy()).max()))
    n += 1
print(n)
)";
    QProcess py;
    py.setProcessChannelMode(QProcess::MergedChannels);
    py.start(qEnvironmentVariable("CKPTLAB_PYTHON"), {"-c", compare, src, onnx, input, d});
    QVERIFY(py.waitForFinished(120000));
    const QString out = QString(py.readAll()).trimmed();
    QVERIFY2(py.exitCode() == 0, qPrintable(out));
    QVERIFY2(out.toInt() >= 10, qPrintable(out));  // every conv, BatchNorm and fc parameter
  }

  // An engineer's path for their own network: export_onnx.py --torchvision, then the CLI
  // lists its modules under PyTorch's names and checkpoints one of them.
  void torchvisionExportRunsCheckpointed() {
    const QString src = qEnvironmentVariable("CKPTLAB_SOURCE_DIR");
    QProcess py;
    py.setProcessChannelMode(QProcess::MergedChannels);
    py.start(qEnvironmentVariable("CKPTLAB_PYTHON"),
             {src + "/samples/export_onnx.py", "--torchvision", "resnet18", "--batch", "2",
              "--size", "32", "--classes", "10", "--out", dir_.path()});
    QVERIFY(py.waitForFinished(300000));
    const QString log = QString(py.readAll());
    if (log.contains("No module named 'torchvision'")) QSKIP("python3-torchvision is missing");
    QVERIFY2(py.exitCode() == 0, qPrintable(log));
    const QString onnx = path("resnet18.onnx");
    auto r = cli({"modules", onnx});
    QCOMPARE(r.code, 0);
    QVERIFY2(r.out.contains("layer4") && r.out.contains("downsample"), qPrintable(r.out));
    r = cli({"run", onnx, "--checkpoint", "layer3", "--variant", "non-reentrant", "--json"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const auto j = QJsonDocument::fromJson(r.out.toUtf8()).object();
    QVERIFY(j["ok"].toBool());
    QCOMPARE(j["checkpoints"].toInt(), 1);
    // At this size parameters and gradients dominate: layer3's recompute is real, but it does
    // not lower the peak (which happens in backward) — a lesson the figures must not hide.
    QCOMPARE(j["executions"].toObject()["recompute"].toInt(), 16);
    QVERIFY(j["baseline"].toObject().contains("memory_saved_bytes"));
  }

  void traceExportsParse() {
    const QString perf = path("t.perfetto.json");
    QCOMPARE(cli({"run", model_, "--trace", perf, "--no-baseline"}).code, 0);
    QFile f(perf);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const auto doc = QJsonDocument::fromJson(f.readAll());
    QVERIFY(!doc.isNull());
    const QJsonArray events = doc.isArray() ? doc.array() : doc.object()["traceEvents"].toArray();
    QVERIFY(events.size() > 10);
    bool counter = false, slice = false;
    for (const auto& e : events) {
      const auto o = e.toObject();
      counter = counter || (o["ph"].toString() == "C" && o["name"].toString().startsWith("memory"));
      slice = slice || o["ph"].toString() == "X";
    }
    QVERIFY(counter);
    QVERIFY(slice);

    const QString csv = path("t.csv");
    QCOMPARE(cli({"run", model_, "--trace", csv, "--no-baseline"}).code, 0);
    QFile c(csv);
    QVERIFY(c.open(QIODevice::ReadOnly));
    const auto lines = QString(c.readAll()).trimmed().split('\n');
    auto model = load_model(model_.toStdString());
    const RunResult run = Runner(model).run({});
    QCOMPARE(lines.size(), int(run.trace.step_count()) + 2);  // header + before + steps
  }

  void plotWritesPngAndSvg() {
    for (const char* ext : {"png", "svg"}) {
      const QString p = path(QString("plot.") + ext);
      const auto r = cli({"run", model_, "--plot", p});
      QCOMPARE(r.code, 0);
      QVERIFY(QFileInfo(p).size() > 1000);
    }
    QFile svg(path("plot.svg"));
    QVERIFY(svg.open(QIODevice::ReadOnly));
    QVERIFY(svg.readAll().contains("<svg"));
  }

  void compareSideBySide() {
    auto r = cli({"compare", model_, "--config", "plain:", "--config", "b2: --batch 2"});
    QCOMPARE(r.code, 0);
    QVERIFY(r.out.contains("plain"));
    QVERIFY(r.out.contains("b2"));
    r = cli(
        {"compare", model_, "--config", "one: --seed 1", "--config", "two: --seed 2", "--json"});
    QCOMPARE(r.code, 0);
    const auto a = QJsonDocument::fromJson(r.out.toUtf8()).array();
    QCOMPARE(a.size(), 2);
    QCOMPARE(a[0].toObject()["label"].toString(), QString("one"));
    r = cli({"compare", model_});
    QCOMPARE(r.code, 2);
  }

  // A long label keeps the figures in columns, and the twelve per-bottleneck BatchNorm warnings
  // of a configuration are shown once, counted.
  void compareAlignsColumnsAndGroupsMessages() {
    const QString densenet =
        qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/samples/densenet_block.json";
    auto r = cli({"compare", densenet, "--config", "none:", "--config",
                  "bottlenecks, non-reentrant: --checkpoint features.*.*.bottleneck --variant "
                  "non-reentrant"});
    QCOMPARE(r.code, 0);
    const QStringList lines = r.out.split('\n');
    QVERIFY2(lines.size() > 3, qPrintable(r.out));
    QVERIFY2(lines[0].startsWith("config ") && lines[2].startsWith("bottlenecks, non-reentrant "),
             qPrintable(r.out));
    QCOMPARE(lines[1].size(), lines[0].size());
    QCOMPARE(lines[2].size(), lines[0].size());
    QCOMPARE(r.out.count("batch_norm ran again"), 1);
    QVERIFY2(r.out.contains("(and 11 more like it"), qPrintable(r.out));
  }

  void runFailuresExitFour() {
    auto r = cli({"run", model_, "--device", "cuda"});
    QCOMPARE(r.code, 4);
    QVERIFY2(r.err.contains("cuda"), qPrintable(r.err));
    r = cli(
        {"run", model_, "--max-memory", "2000", "--no-baseline", "--trace", path("capped.json")});
    // The memory guard refuses before anything runs (the ledger's own cap, which a run that
    // starts anyway would hit, is tested in test_engine_ledger and test_engine_trace).
    QCOMPARE(r.code, 4);
    QVERIFY2(r.err.contains("not run") && r.err.contains("--dry-run"), qPrintable(r.err));
    QVERIFY(!QFileInfo::exists(path("capped.json")));
  }

  // Reentrant checkpointing of every module with no input requiring grad fails as PyTorch
  // does; its figures must never read as a saving, and the message says why and what fixes it.
  void aFailedRunIsNoSaving() {
    auto r = cli({"run", model_, "--checkpoint-all"});
    QCOMPARE(r.code, 4);
    QVERIFY2(r.out.contains("RUN FAILED"), qPrintable(r.out));
    QVERIFY2(r.out.contains("why      reentrant checkpoint"), qPrintable(r.out));
    QVERIFY2(r.out.contains("non-reentrant") && r.out.contains("--input-requires-grad"),
             qPrintable(r.out));
    QVERIFY2(r.out.contains("not compared: this run failed"), qPrintable(r.out));
    QVERIFY2(!r.out.contains("(saves ") && !r.out.contains(QRegularExpression("ratio \\d")),
             qPrintable(r.out));
    QVERIFY2(!r.out.contains("step -1"), qPrintable(r.out));
    QVERIFY2(r.out.contains("[warning, no step]") || r.out.contains("[warning @ step"),
             qPrintable(r.out));
    QVERIFY2(r.err.contains("to fix it:"), qPrintable(r.err));

    r = cli({"run", model_, "--checkpoint-all", "--json"});
    QCOMPARE(r.code, 4);
    const QJsonObject j = json_object(r.out);
    QCOMPARE(j["ok"].toBool(), false);
    const QJsonObject f = j["failure"].toObject();
    QVERIFY(f["why"].toString().contains("requires grad"));
    QVERIFY(f["fix"].toString().contains("--variant non-reentrant"));
    const QJsonObject b = j["baseline"].toObject();
    QCOMPARE(b["comparable"].toBool(), false);
    QVERIFY(b["memory_saved_bytes"].isNull());
    QVERIFY(b["time_ratio"].isNull());
    QVERIFY(b["peak_bytes"].toInteger() > 0);

    // Each fix the message names makes the same configuration run.
    for (const QStringList& fix :
         {QStringList{"--variant", "non-reentrant"}, QStringList{"--input-requires-grad"}}) {
      const auto fixed = cli(QStringList{"run", model_, "--checkpoint-all", "--json"} + fix);
      QCOMPARE(fixed.code, 0);
      QVERIFY(json_object(fixed.out)["failure"].isNull());
      QCOMPARE(json_object(fixed.out)["baseline"].toObject()["comparable"].toBool(), true);
    }

    const auto cmp =
        cli({"compare", model_, "--config", "all: --checkpoint-all", "--config", "plain:"});
    QCOMPARE(cmp.code, 4);
    const QString row = cmp.out.section('\n', 1, 1);
    QVERIFY2(row.startsWith("all") && row.contains("FAILED"), qPrintable(cmp.out));
    QVERIFY2(cmp.out.contains("fix: use the non-reentrant variant"), qPrintable(cmp.out));
  }

  void checkpointingASampleSavesMemory() {
    const QString sample =
        qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/samples/densenet_block.json";
    const auto r = cli({"run", sample, "--checkpoint", "features.*.*.bottleneck", "--json"});
    QCOMPARE(r.code, 0);
    const QJsonObject j = json_object(r.out);
    QCOMPARE(j["checkpoints"].toInt(), 12);
    QVERIFY(j["executions"].toObject()["recompute"].toInteger() > 0);
    const auto b = j["baseline"].toObject();
    QVERIFY(b["memory_saved_bytes"].toInteger() > 0);
    QVERIFY(b["peak_ratio"].toDouble() < 1.0);
    // BatchNorm's double update inside a checkpoint is reported, as a lesson.
    bool bn_note = false;
    for (const auto& m : j["messages"].toArray())
      bn_note = bn_note || m.toObject()["text"].toString().contains("batch_norm ran again");
    QVERIFY(bn_note);
    // `*` is one path segment: the six dense layers of block 1, not also their bottlenecks.
    const auto layers =
        cli({"run", sample, "--checkpoint", "features.denseblock1.*", "--json", "--no-baseline"});
    QCOMPARE(layers.code, 0);
    QCOMPARE(json_object(layers.out)["checkpoints"].toInt(), 6);
    const auto none = cli({"run", sample, "--checkpoint", "features.*.nothing*"});
    QCOMPARE(none.code, 2);
    QVERIFY2(none.err.contains("no checkpointable module matches"), qPrintable(none.err));
  }

  // --dry-run: the real run's bytes to the byte (the engine's dry run is checked event by event
  // in test_engine_dry_run), marked as such, with no loss; at a batch no machine could run.
  void dryRunGivesTheRealPeakWithoutValues() {
    const QString sample =
        qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/samples/densenet_block.json";
    const QStringList ckpt{"--checkpoint", "features.*.*.bottleneck", "--json"};
    const auto real = cli(QStringList{"run", sample} + ckpt);
    const auto dry = cli(QStringList{"run", sample, "--dry-run"} + ckpt);
    QCOMPARE(real.code, 0);
    QCOMPARE(dry.code, 0);
    const QJsonObject r = json_object(real.out), d = json_object(dry.out);
    QVERIFY(d["dry_run"].toBool() && d["times_estimated"].toBool());
    QVERIFY(!r["dry_run"].toBool());
    QVERIFY(d["loss"].isNull());
    QCOMPARE(d["peak"].toObject()["bytes"].toInteger(), r["peak"].toObject()["bytes"].toInteger());
    QCOMPARE(d["peak"].toObject()["step"].toInteger(), r["peak"].toObject()["step"].toInteger());
    QCOMPARE(d["baseline"].toObject()["peak_bytes"].toInteger(),
             r["baseline"].toObject()["peak_bytes"].toInteger());
    QCOMPARE(d["executions"].toObject()["recompute"].toInteger(),
             r["executions"].toObject()["recompute"].toInteger());
    const auto text = cli({"run", sample, "--dry-run", "--batch", "4096"});
    QCOMPARE(text.code, 0);
    QVERIFY2(text.out.contains("31.46 GiB") && text.out.contains("not available in a dry run") &&
                 text.out.contains("est. time"),
             qPrintable(text.out));
  }

  // --device cuda --dry-run: what PyTorch 2.x holds on an NVIDIA GPU, on a machine without one
  // (issue 26). GPT-2 small at batch 32 x 1,024, plain: the H200 held 90,776,505,344 bytes
  // (docs/reference/gpu-oracle.md; the oracle test checks every case); within 1 %.
  void cudaDryRunIsTheGpusMemory() {
    const QString gpt2 = qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/samples/gpt2_small.json";
    const auto r = cli({"run", gpt2, "--device", "cuda", "--dry-run", "--no-baseline", "--json"});
    QCOMPARE(r.code, 0);
    const QJsonObject j = json_object(r.out);
    const double peak = static_cast<double>(j["peak"].toObject()["bytes"].toInteger());
    QVERIFY2(std::abs(peak / 90776505344.0 - 1) < 0.01, qPrintable(QString::number(peak)));
    const double reserved = static_cast<double>(j["reserved_peak"].toInteger());
    QVERIFY2(reserved >= peak && reserved < 1.2 * peak, qPrintable(r.out.left(2000)));
    QVERIFY(j["gpu"].toObject()["capacity_bytes"].toInteger() == 80LL << 30);
    QVERIFY(!j["gpu"].toObject()["fits"].toBool());  // 90.8 GB on an 80 GiB card
    QVERIFY(j["memory_of"].toString().contains("CUDA"));
    // The CPU's figures are not the GPU's: dropout masks are float there.
    const auto cpu = cli({"run", gpt2, "--dry-run", "--no-baseline", "--json"});
    QVERIFY(json_object(cpu.out)["reserved_peak"].isNull());
    QVERIFY(json_object(cpu.out)["peak"].toObject()["bytes"].toInteger() > peak * 1.1);
    // Text: whose memory, reserved and the GPU's verdict.
    const auto t = cli(
        {"run", gpt2, "--device", "cuda", "--dry-run", "--no-baseline", "--gpu-memory", "141GiB"});
    QVERIFY2(t.out.contains("memory     as PyTorch 2.x on an NVIDIA GPU") &&
                 t.out.contains("reserved   ") && t.out.contains(": fits") &&
                 t.out.contains("(estimate)"),
             qPrintable(t.out));
    // GPT-2 has no convolution: no cuDNN workspace at its peak, and no such line.
    QCOMPARE(j["reserved"].toObject()["cudnn_workspace_at_peak_bytes"].toInteger(), 0);
    QVERIFY(!t.out.contains("cudnn      "));
    // A real cuda run here: exit 4, pointing to --dry-run.
    const auto real = cli({"run", gpt2, "--device", "cuda"});
    QCOMPARE(real.code, 4);
    QVERIFY2(real.err.contains("--dry-run"), qPrintable(real.err));
  }

  // Issue 31's training step on a GPU: GPT-2 small at batch 8 with AdamW under bf16 autocast.
  // The H200 held 18,974,176,768 bytes at the forward+backward peak and 3,420,175,360 during
  // the optimizer's step (tests/oracle/data/gpu_oracle_train.json); within 2 %. Float32's peak
  // (22,932,491,264) is what autocast lowers: the run really casts.
  void cudaTrainingStepUnderBf16Autocast() {
    const QString gpt2 = qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/samples/gpt2_small.json";
    const QStringList step{"run",   gpt2,        "--batch",     "8",     "--device",
                           "cuda",  "--dry-run", "--optimizer", "adamw", "--no-baseline",
                           "--json"};
    const auto r = cli(step + QStringList{"--amp", "bf16"});
    QCOMPARE(r.code, 0);
    const QJsonObject phases = json_object(r.out)["step_phases"].toObject();
    const auto near = [](const QJsonValue& v, double oracle) {
      return std::abs(static_cast<double>(v.toInteger()) / oracle - 1) <= 0.02;
    };
    QVERIFY2(near(phases["peak_forward_backward"], 18974176768.0), qPrintable(r.out.left(2000)));
    QVERIFY2(near(phases["peak_optimizer_step"], 3420175360.0), qPrintable(r.out.left(2000)));
    QVERIFY2(near(phases["start"], 2089912320.0), qPrintable(r.out.left(2000)));
    const auto fp32 = cli(step);
    QCOMPARE(fp32.code, 0);
    QVERIFY(near(json_object(fp32.out)["step_phases"].toObject()["peak_forward_backward"],
                 22932491264.0));
  }

  // The memory guard: a real run whose dry run does not fit is never started.
  void memoryGuardRefusesWhatWouldNotFit() {
    const QString sample =
        qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/samples/densenet_block.json";
    const auto r = cli({"run", sample, "--max-memory", "10MiB"});
    QCOMPARE(r.code, 4);
    QVERIFY2(r.err.contains("not run") && r.err.contains("31.90 MiB") &&
                 r.err.contains("10.00 MiB") && r.err.contains("--dry-run"),
             qPrintable(r.err));
    QVERIFY(r.out.isEmpty());
    QCOMPARE(cli({"run", sample, "--max-memory", "1GiB", "--no-baseline"}).code, 0);
    QCOMPARE(cli({"run", sample, "--max-memory", "lots"}).code, 2);
    QCOMPARE(cli({"run", sample, "--max-memory", "50%"}).code, 2);
    // compare shows what would not fit as a dry run, labelled so.
    const auto c = cli({"compare", sample, "--config", "plain: --max-memory 10MiB", "--json"});
    QCOMPARE(c.code, 0);
    const auto a = QJsonDocument::fromJson(c.out.toUtf8()).array();
    QCOMPARE(a.size(), 1);
    QVERIFY(a[0].toObject()["dry_run"].toBool());
    QVERIFY(a[0].toObject()["label"].toString().endsWith("(dry)"));
  }

  void modulesListsTheTree() {
    const auto r = cli({"modules", model_});
    QCOMPARE(r.code, 0);
    QVERIFY(r.out.contains("block"));
    QVERIFY(r.out.contains("fc2"));
    const auto j = cli({"modules", model_, "--json"});
    QCOMPARE(j.code, 0);
    const auto a = QJsonDocument::fromJson(j.out.toUtf8()).array();
    QVERIFY(a.size() >= 5);
  }

  // What the modules keep adds up to what the run holds saved at the end of its forward: the
  // copies an op saves itself (a 4-D matmul's contiguous q, k and v) count too. Only the loss,
  // outside every module, keeps the few bytes that are left (it listed 84 % before).
  void modulesKeepWhatTheForwardSaves() {
    const QString vit = qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/samples/vit_tiny.json";
    const auto m = cli({"modules", vit, "--json"});
    QCOMPARE(m.code, 0);
    double top_level = 0;
    for (const auto& v : QJsonDocument::fromJson(m.out.toUtf8()).array()) {
      const auto o = v.toObject();
      if (!o["path"].toString().contains('.')) top_level += o["saved_bytes"].toDouble();
    }
    const auto r = cli({"run", vit, "--no-baseline", "--json"});
    QCOMPARE(r.code, 0);
    const double saved = QJsonDocument::fromJson(r.out.toUtf8())
                             .object()["end_of_forward"]
                             .toObject()["by_category"]
                             .toObject()["activation"]
                             .toDouble();
    QVERIFY2(
        top_level <= saved && top_level >= 0.999 * saved,
        qPrintable(QString("modules keep %1 B, the forward saved %2 B").arg(top_level).arg(saved)));
  }
};

QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"
