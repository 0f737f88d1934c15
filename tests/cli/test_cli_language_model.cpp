// A causal language model as a user exports it from PyTorch (issue 27): int64 token ids in,
// an nn.TransformerEncoder under a causal mask filled with -inf. Every command works without
// --input (the ids are drawn in the embedding's range), and the model runs plain and with every
// depth of modules checkpointed, in both variants: the recompute check takes the mask's -inf
// for the values they are.
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "cli_process.hpp"

namespace {

using Result = ckpt::test::CliResult;

Result cli(const QStringList& args) {
  return ckpt::test::run_cli(args);
}

// nanoGPT's shape at toy size: token and position embeddings, pre-LN blocks with GELU, the
// square subsequent mask (0 below the diagonal, -inf above), a final LayerNorm and a head.
const char* kExport = R"(
import sys, warnings
import torch, torch.nn as nn
warnings.filterwarnings("ignore")

class TinyGPT(nn.Module):
    def __init__(self, vocab=50, dim=16, seq=8, heads=2, layers=2):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(seq, dim)
        layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, 0.0, "gelu", batch_first=True,
                                           norm_first=True)
        self.h = nn.TransformerEncoder(layer, layers)
        self.ln_f = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(t))
        mask = nn.Transformer.generate_square_subsequent_mask(t)
        return self.head(self.ln_f(self.h(x, mask=mask)))

torch.manual_seed(0)
torch.onnx.export(TinyGPT(), (torch.randint(0, 50, (2, 8)),), sys.argv[1], opset_version=17,
                  input_names=["idx"], output_names=["logits"],
                  training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
)";

QJsonObject json_of(const Result& r) {
  return QJsonDocument::fromJson(r.out.toUtf8()).object();
}

}  // namespace

class TestCliLanguageModel : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString model_;

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    model_ = dir_.filePath("gpt.onnx");
    QProcess py;
    py.setProcessChannelMode(QProcess::MergedChannels);
    py.start(qEnvironmentVariable("CKPTLAB_PYTHON"), {"-c", kExport, model_});
    QVERIFY(py.waitForFinished(300000));
    QVERIFY2(py.exitCode() == 0, py.readAll().constData());
  }

  // Token ids without --input: modules, a dry run and a real run.
  void tokenIdsNeedNoInput() {
    auto r = cli({"modules", model_});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains("wte") && r.out.contains("layers"), qPrintable(r.out));
    r = cli({"run", model_, "--dry-run", "--no-baseline"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    r = cli({"run", model_, "--no-baseline", "--json"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY(json_of(r)["ok"].toBool());
  }

  // Plain, then every depth in both variants: the same loss, real recomputation. Checkpointing
  // the top level reentrantly fails as in PyTorch: the embeddings' inputs (token ids, positions)
  // do not require grad, so their checkpoints' outputs do not either, and nothing after them
  // does; the CLI says so and how to fix it.
  void checkpointedAtEveryDepthInBothVariants() {
    const auto plain = cli({"run", model_, "--no-baseline", "--json"});
    QVERIFY2(plain.code == 0, qPrintable(plain.err));
    const double loss = json_of(plain)["loss"].toDouble();
    int depth = 1;
    for (;; ++depth) {
      const QString d = QString::number(depth);
      bool none = false;
      for (const char* variant : {"reentrant", "non-reentrant"}) {
        const auto r = cli({"run", model_, "--checkpoint-depth", d, "--variant", variant,
                            "--no-baseline", "--json"});
        if (r.code == 2 && r.err.contains("no modules at depth")) {
          none = true;
          break;
        }
        const QString what = QString("depth %1, %2: %3").arg(d, variant, r.err);
        if (depth == 1 && QString(variant) == "reentrant") {
          QVERIFY2(r.code == 4, qPrintable(what));
          QVERIFY2(r.err.contains("element 0 of tensors does not require grad"), qPrintable(what));
          QVERIFY2(r.err.contains("--variant non-reentrant"), qPrintable(what));
          continue;
        }
        QVERIFY2(r.code == 0, qPrintable(what));
        const QJsonObject j = json_of(r);
        QVERIFY2(j["ok"].toBool(), qPrintable(what));
        QVERIFY2(j["checkpoints"].toInt() > 0, qPrintable(what));
        QVERIFY2(j["executions"].toObject()["recompute"].toInt() > 0, qPrintable(what));
        QCOMPARE(j["loss"].toDouble(), loss);
      }
      if (none) break;
    }
    // wte/wpe/h/ln_f/head, h.layers, h.layers.N, their children: four depths at least.
    QVERIFY2(depth > 4, qPrintable(QString("stopped at depth %1").arg(depth)));
  }
};

QTEST_GUILESS_MAIN(TestCliLanguageModel)
#include "test_cli_language_model.moc"
