// Per-op checkpoint policies (issue 28) as a user spells them: `--policy save:mm,sdpa`,
// `--policy save:mm/2`; bad spellings are usage errors naming the problem; the code export
// writes PyTorch 2.4+'s create_selective_checkpoint_contexts, which compiles and decides as the
// engine ran.

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>
#include <map>

#include "cli_process.hpp"

namespace {

using Result = ckpt::test::CliResult;

Result cli(const QStringList& args) {
  return ckpt::test::run_cli(args);
}

QString sample(const char* name) {
  return qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/samples/" + name;
}

Result python(const QStringList& args) {
  QProcess p;
  p.start(qEnvironmentVariable("CKPTLAB_PYTHON", "/usr/bin/python3"), args);
  Result r;
  if (!p.waitForFinished(120000)) return r;
  r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2;
  r.out = QString::fromUtf8(p.readAllStandardOutput());
  r.err = QString::fromUtf8(p.readAllStandardError());
  return r;
}

// The export's policy helper run with stand-ins for PyTorch 2.4's names: the decisions it makes
// for a sequence of aten ops, forward then recomputation.
const char* const kDecisions = R"(import enum, sys, types
src = open(sys.argv[1]).read()
start = src.index("SAVE_KINDS = {")
end = src.index("    return context_fn\n") + len("    return context_fn\n")
class CheckpointPolicy(enum.Enum):
    MUST_SAVE = 0
    PREFER_RECOMPUTE = 1
names = ["mm", "addmm", "bmm", "convolution", "gelu", "_scaled_dot_product_flash_attention"]
aten = types.SimpleNamespace(**{n: types.SimpleNamespace(default=n) for n in names})
ns = {"torch": types.SimpleNamespace(ops=types.SimpleNamespace(aten=aten)),
      "CheckpointPolicy": CheckpointPolicy, "create_selective_checkpoint_contexts": lambda p: p}
exec(src[start:end], ns)
policy = ns["selective"](tuple(sys.argv[2].split(",")), every=int(sys.argv[3]))()
ops = ["addmm", "gelu", "mm", "_scaled_dot_product_flash_attention", "addmm", "convolution", "mm"]
for recompute in (False, True):
    ctx = types.SimpleNamespace(is_recompute=recompute)
    print(" ".join("S" if policy(ctx, op) == CheckpointPolicy.MUST_SAVE else "r" for op in ops))
)";

}  // namespace

class TestCliPolicy : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

 private slots:
  void badPoliciesAreUsageErrorsNamingTheProblem() {
    const QString gpt = sample("gpt_mini.json");
    const struct {
      const char* policy;
      const char* says;
    } cases[] = {
        {"save:matmul", "unknown op kind 'matmul'"},
        {"save:mm,", "an empty op kind"},
        {"save:mm/0", "'/0' is not a whole number"},
        {"save:mm/x", "'/x' is not a whole number"},
        {"keep:mm", "not a policy"},
    };
    for (const auto& c : cases) {
      const Result r = cli({"run", gpt, "--checkpoint", "h.*", "--policy", c.policy, "--dry-run"});
      QCOMPARE(r.code, 2);
      QVERIFY2(r.err.contains(c.says), qPrintable(r.err));
      // The kinds there are, from the op table.
      QVERIFY2(r.err.contains("op kinds conv, mm, sdpa"), qPrintable(r.err));
    }
  }

  // Inside GPT blocks checkpointed non-reentrant, each policy keeps more at the end of the
  // forward and recomputes less: none < save:mm/2 < save:mm. The native samples spell attention
  // as matmuls (kind mm) and have no convolution, so save:mm,sdpa and save-matmul are save:mm.
  void policiesKeepWhatTheyName() {
    std::map<QString, std::pair<qint64, qint64>> at;  // end of forward, outputs reused
    const QRegularExpression reused("(\\d+) op outputs reused from the forward");
    for (const char* policy : {"none", "save:mm/2", "save:mm", "save:mm,sdpa", "save-matmul"}) {
      const Result r = cli({"run", sample("gpt_mini.json"), "--checkpoint", "h.*", "--variant",
                            "non-reentrant", "--policy", policy, "--json", "--no-baseline"});
      QVERIFY2(r.code == 0, qPrintable(r.err));
      const QJsonObject j = ckpt::test::json_object(r.out);
      qint64 outputs = 0;
      for (const auto& m : j["messages"].toArray()) {
        const auto match = reused.match(m.toObject()["text"].toString());
        if (match.hasMatch()) outputs += match.captured(1).toLongLong();
      }
      at[policy] = {j["end_of_forward"].toObject()["bytes"].toInteger(), outputs};
      qInfo(
          "gpt_mini, h.* non-reentrant, --policy %-13s end of forward %lld bytes, %lld op "
          "outputs reused in the recompute",
          policy, static_cast<long long>(at[policy].first),
          static_cast<long long>(at[policy].second));
    }
    QVERIFY(at["none"].first < at["save:mm/2"].first);
    QVERIFY(at["save:mm/2"].first < at["save:mm"].first);
    QCOMPARE(at["save:mm,sdpa"], at["save:mm"]);
    QCOMPARE(at["save-matmul"], at["save:mm"]);
    QCOMPARE(at["none"].second, 0);
    QVERIFY(at["save:mm/2"].second > 0);
    // The 1st, 3rd, ... of each block's matmuls: half of them, rounded up per block.
    QVERIFY(at["save:mm/2"].second * 2 >= at["save:mm"].second);
    QVERIFY(at["save:mm/2"].second < at["save:mm"].second);
  }

  void codeExportWritesSelectiveCheckpointing() {
    const Result r =
        cli({"code", sample("gpt_mini.json"), "--checkpoint", "h.*", "--policy", "save:mm/2"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    for (const char* s :
         {"needs PyTorch >= 2.4", "create_selective_checkpoint_contexts",
          "CheckpointPolicy.MUST_SAVE", "CheckpointPolicy.PREFER_RECOMPUTE", "\"mm\": (",
          "\"addmm\"", "\"sdpa\": (", "_scaled_dot_product_flash_attention",
          "use_reentrant=False, context_fn=selective((\"mm\", ), every=2))"})
      QVERIFY2(r.out.contains(s), s);
    QVERIFY(!r.out.contains("use_reentrant=True"));  // PyTorch's policies are non-reentrant
    const QString file = dir_.filePath("gpt_policy.py");
    QFile f(file);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(r.out.toUtf8());
    f.close();
    const Result compiled = python({"-m", "py_compile", file});
    QVERIFY2(compiled.code == 0, qPrintable(compiled.err));
    // Every second op of the named kinds saved, in the forward and again in the recompute.
    const Result every2 = python({"-c", kDecisions, file, "mm", "2"});
    QVERIFY2(every2.code == 0, qPrintable(every2.err));
    QCOMPARE(every2.out, QString("S r r r S r r\nS r r r S r r\n"));
    const Result both = python({"-c", kDecisions, file, "mm,sdpa", "1"});
    QVERIFY2(both.code == 0, qPrintable(both.err));
    QCOMPARE(both.out, QString("S r S S S r S\nS r S S S r S\n"));
    // The planner chooses the policy per region and says so; its --code export gives each
    // checkpoint() the region's own: as many context_fn as regions under the policy.
    const QString planned = dir_.filePath("gpt_plan.py");
    const Result plan = cli({"plan", sample("gpt_mini.json"), "--budget", "60%", "--variant",
                             "non-reentrant", "--policy", "save:mm", "--code", planned, "--json"});
    QVERIFY2(plan.code == 0, qPrintable(plan.err));
    const QJsonObject chosen =
        QJsonDocument::fromJson(plan.out.toUtf8()).object()["plan"].toObject();
    const QJsonObject regions = chosen["policies"].toObject();
    QCOMPARE(regions.size(),
             chosen["modules"].toArray().size() + chosen["ranges"].toArray().size());
    int under = 0;
    for (const QString& region : regions.keys())
      under += regions[region].toString() == "save:mm" ? 1 : 0;
    QVERIFY2(under > 0 && under < regions.size(), qPrintable(plan.out));
    QFile pf(planned);
    QVERIFY(pf.open(QIODevice::ReadOnly));
    const QString code = QString::fromUtf8(pf.readAll());
    QVERIFY2(code.contains("use_reentrant=False)\n"), qPrintable(code));  // a whole region
    QVERIFY(code.contains("use_reentrant=False, context_fn=selective((\"mm\", )))\n"));
    QVERIFY2(python({"-m", "py_compile", planned}).code == 0, qPrintable(planned));
    const Result text = cli({"plan", sample("gpt_mini.json"), "--budget", "60%", "--variant",
                             "non-reentrant", "--policy", "save:mm"});
    QVERIFY2(
        text.out.contains(
            QString("policy      save:mm offered per region (--policy): %1 of %2 regions under it")
                .arg(under)
                .arg(regions.size())),
        qPrintable(text.out));
    // No policy: no helper, nothing that needs PyTorch 2.4.
    const Result plain = cli({"code", sample("gpt_mini.json"), "--checkpoint", "h.*"});
    QVERIFY2(plain.code == 0, qPrintable(plain.err));
    QVERIFY(!plain.out.contains("create_selective_checkpoint_contexts"));
  }
};

QTEST_GUILESS_MAIN(TestCliPolicy)
#include "test_cli_policy.moc"
