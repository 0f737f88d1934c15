// `ckptlab-cli plan` and `--checkpoint-range` as a user runs them: exit codes, the plan and its
// figures equal to the engine's evaluation of the same config, JSON, the frontier's SVG and the
// PyTorch code.

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include "cli_process.hpp"

#include "engine/model/loader.hpp"
#include "engine/plan/planner.hpp"

using namespace ckpt;

namespace {

using Result = ckpt::test::CliResult;

Result cli(const QStringList& args) {
  return ckpt::test::run_cli(args);
}

QString data(const char* name) {
  return qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/tests/engine/data/plan/" + name;
}

}  // namespace

class TestCliPlan : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

 private slots:
  void planPrintsThePlanItsPeakAndTheFrontier() {
    const Result r = cli({"plan", data("nested_blocks.json"), "--budget", "95%"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    for (const char* s : {"strategy    optimal", "plan        ", "fits", "recompute   ",
                          "frontier: peak against recompute", "  * none"})
      QVERIFY2(r.out.contains(s), s);
  }

  void jsonFiguresAreTheEnginesAndEveryPointIsOnBudgetOrMarked() {
    const QString svg = dir_.filePath("frontier.svg"), code = dir_.filePath("plan.py");
    const Result r = cli({"plan", data("wide_narrow.json"), "--budget", "97%", "--strategy",
                          "greedy", "--json", "--plot", svg, "--code", code});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const QJsonObject j = QJsonDocument::fromJson(r.out.toUtf8()).object();
    const QJsonObject plan = j["plan"].toObject();
    QCOMPARE(plan["strategy"].toString(), QString("greedy"));
    QVERIFY(plan["fits"].toBool());
    QVERIFY(plan["peak_bytes"].toInteger() <= j["budget_bytes"].toInteger());
    QCOMPARE(j["budget_bytes"].toInteger(), j["plain_peak_bytes"].toInteger() * 97 / 100);
    // The same config evaluated here gives the same peak: the CLI printed a run, not a model.
    auto model = load_model(data("wide_narrow.json").toStdString());
    PlanEvaluator ev(model, scenario_request(*model).settings);
    CheckpointPlan c;
    for (const auto& m : plan["modules"].toArray()) c.modules.insert(m.toString().toStdString());
    for (const auto& r2 : plan["ranges"].toArray())
      c.ranges.emplace_back(r2.toArray()[0].toString().toStdString(),
                            r2.toArray()[1].toString().toStdString());
    QCOMPARE(ev.evaluate(c).peak_bytes, plan["peak_bytes"].toInteger());
    QVERIFY(j["candidates"].toArray().size() >= 5);
    const QJsonArray front = j["frontier"].toArray();
    QVERIFY(front.size() >= 2);
    for (const auto& a : front)
      for (const auto& b : j["points"].toArray()) {
        const auto pa = a.toObject(), pb = b.toObject();
        const bool beaten = pb["peak_bytes"].toInteger() <= pa["peak_bytes"].toInteger() &&
                            pb["recompute_ms"].toDouble() <= pa["recompute_ms"].toDouble() &&
                            (pb["peak_bytes"].toInteger() < pa["peak_bytes"].toInteger() ||
                             pb["recompute_ms"].toDouble() < pa["recompute_ms"].toDouble());
        QVERIFY(!beaten);
      }
    QFile f(svg);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray s = f.readAll();
    QVERIFY(s.startsWith("<svg") && s.contains("<polyline") && s.contains("greedy"));
    QFile py(code);
    QVERIFY(py.open(QIODevice::ReadOnly));
    QVERIFY(py.readAll().contains("checkpoint("));
  }

  // Issue 28: the table stars each frontier plan once (a plan two strategies found is one
  // point), no starred row is beaten by another, and no row that fits the budget recomputes
  // less than the plan chosen.
  void tableStarsEachFrontierPointOnceAndTheChoiceIsTheCheapestThatFits() {
    const Result r =
        cli({"plan", qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/samples/densenet_block.json",
             "--budget", "70%"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const QStringList lines = r.out.split('\n');
    auto mib = [](const QString& s) { return s.section(' ', 0, 0).toDouble(); };
    double budget = 0, chosen = 0;
    struct Row {
      bool star;
      double peak, recompute;
    };
    std::vector<Row> rows;
    // "  * optimal     search                     21.98 MiB          4.042     23  plan..."
    const QRegularExpression row(R"(^  ([* ]) (\S+)\s.*?\s([0-9.]+) MiB\s+([0-9.]+)\s+\d+  )");
    for (const QString& l : lines) {
      if (l.startsWith("budget ")) budget = mib(l.mid(12).trimmed());
      if (l.startsWith("recompute ")) chosen = mib(l.mid(12).trimmed());
      const auto m = row.match(l);
      if (m.hasMatch())
        rows.push_back({m.captured(1) == "*", m.captured(3).toDouble(), m.captured(4).toDouble()});
    }
    QVERIFY(budget > 0 && chosen > 0);
    QVERIFY2(rows.size() >= 6, qPrintable(r.out));
    for (const Row& a : rows) {
      if (a.peak <= budget) QVERIFY2(a.recompute >= chosen, qPrintable(r.out));
      if (!a.star) continue;
      for (const Row& b : rows) {
        const bool beaten = b.peak <= a.peak && b.recompute <= a.recompute &&
                            (b.peak < a.peak || b.recompute < a.recompute);
        QVERIFY2(!beaten, qPrintable(r.out));
        if (&a != &b && b.star)
          QVERIFY2(b.peak != a.peak || b.recompute != a.recompute, qPrintable(r.out));
      }
    }
  }

  // With --device cuda the budget is the card: the chosen plan's reserved peak plus the CUDA
  // context fits it, and the reserved figure is the one `run --device cuda --dry-run` gives for
  // the same checkpoints. GPT mini takes ~596 MiB of a card unplanned (76 MiB reserved).
  void cudaBudgetIsTheCard() {
    const QString model = qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/samples/gpt_mini.json";
    const Result r = cli({"plan", model, "--device", "cuda", "--budget", "594MiB", "--json"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const QJsonObject j = QJsonDocument::fromJson(r.out.toUtf8()).object();
    const QJsonObject gpu = j["gpu"].toObject();
    const QJsonObject plan = j["plan"].toObject();
    const std::int64_t card = std::int64_t{594} << 20;
    QCOMPARE(gpu["card_bytes"].toInteger(), card);
    QCOMPARE(gpu["total_bytes"].toInteger(), gpu["reserved_peak_bytes"].toInteger() +
                                                 gpu["cuda_context_bytes_estimate"].toInteger());
    QVERIFY2(gpu["total_bytes"].toInteger() <= card, qPrintable(r.out.left(600)));
    QVERIFY(gpu["fits"].toBool() && plan["fits"].toBool());
    QVERIFY(plan["ranges"].toArray().isEmpty() || !plan["modules"].toArray().isEmpty());
    QStringList args{"run", model, "--device", "cuda", "--dry-run", "--json", "--no-baseline"};
    for (const auto& m : plan["modules"].toArray()) args << "--checkpoint" << m.toString();
    for (const auto& range : plan["ranges"].toArray())
      args << "--checkpoint-range"
           << range.toArray()[0].toString() + ".." + range.toArray()[1].toString();
    const Result run = cli(args);
    QVERIFY2(run.code == 0, qPrintable(run.err));
    const QJsonObject rj = QJsonDocument::fromJson(run.out.toUtf8()).object();
    QCOMPARE(rj["reserved_peak"].toInteger(), gpu["reserved_peak_bytes"].toInteger());
    QCOMPARE(rj["peak"].toObject()["bytes"].toInteger(), plan["peak_bytes"].toInteger());
  }

  // A training step's plan: the optimizer's state is part of every point's peak (so a budget
  // below the state plus the parameters is unreachable), and the forward-only runs the planner
  // makes for what a plan saves carry no optimizer (a step needs gradients). An ONNX model's plan
  // takes those runs; its code says which optimizer its figures assume.
  void trainingStepPlanCountsTheOptimizersState() {
    const QString model = qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/samples/tiny_resnet.onnx";
    const QString code = dir_.filePath("train_plan.py");
    const Result none =
        cli({"plan", model, "--variant", "non-reentrant", "--budget", "95%", "--json"});
    QVERIFY2(none.code == 0, qPrintable(none.err));
    const Result adam = cli({"plan", model, "--variant", "non-reentrant", "--budget", "95%",
                             "--optimizer", "adam", "--json", "--code", code});
    QVERIFY2(adam.code == 0, qPrintable(adam.err));
    const QJsonObject a = QJsonDocument::fromJson(adam.out.toUtf8()).object();
    const QJsonObject n = QJsonDocument::fromJson(none.out.toUtf8()).object();
    QVERIFY2(a["plain_peak_bytes"].toInteger() > n["plain_peak_bytes"].toInteger(),
             qPrintable(adam.out.left(400)));
    QVERIFY(a["plan"].toObject()["fits"].toBool());
    QFile f(code);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QVERIFY(f.readAll().contains("torch.optim.Adam(model.parameters()"));
  }

  void impossibleBudgetNamesTheLowestPeak() {
    const Result r = cli({"plan", data("chain_unequal.json"), "--budget", "1KiB"});
    QCOMPARE(r.code, 4);
    QVERIFY2(r.err.contains("fits 1.0 KiB; the lowest peak reached is"), qPrintable(r.err));
    QVERIFY(r.out.contains("OVER BUDGET"));
  }

  void usageErrors() {
    auto r = cli({"plan", data("chain_unequal.json")});
    QCOMPARE(r.code, 2);
    QVERIFY(r.err.contains("needs --budget"));
    r = cli({"plan", data("chain_unequal.json"), "--budget", "lots"});
    QCOMPARE(r.code, 2);
    QVERIFY(r.err.contains("budget 'lots'"));
    r = cli({"plan", data("chain_unequal.json"), "--budget", "50%", "--strategy", "rotor"});
    QCOMPARE(r.code, 2);
    QVERIFY(
        r.err.contains("the strategies are none, all, every-k, sqrt, uniform-n, greedy, "
                       "knapsack, optimal"));
    r = cli({"plan", "/nonexistent.json", "--budget", "50%"});
    QCOMPARE(r.code, 3);
  }

  void checkpointRangeRunsOneSegment() {
    auto r = cli({"run", data("chain_unequal.json"), "--checkpoint-range", "b1..b3", "--json"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const QJsonObject j = QJsonDocument::fromJson(r.out.toUtf8()).object();
    QCOMPARE(j["checkpoints"].toInteger(), 1);
    r = cli({"run", data("chain_unequal.json"), "--checkpoint-range", "b3..b1"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("'b3' runs after 'b1'"), qPrintable(r.err));
    r = cli({"run", data("chain_unequal.json"), "--checkpoint-range", "b1-b3"});
    QCOMPARE(r.code, 2);
    QVERIFY(r.err.contains("FIRST..LAST"));
  }
};

QTEST_GUILESS_MAIN(TestCliPlan)
#include "test_cli_plan.moc"
