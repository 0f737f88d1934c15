// Issue 26: the engine's CUDA memory semantics (a dry run standing in for a CUDA run of PyTorch
// 2.x) against what PyTorch 2.11 held on an NVIDIA H200 (docs/reference/gpu-oracle.md; the
// figures this test needs are committed in data/gpu_oracle_memory.json). Every oracle case whose
// model the project has: the samples (plain, and depth 2 non-reentrant or checkpoint_sequential
// with 2 segments, as the cases' code/*.py were written by `ckptlab-cli code`) and the
// torchvision models (ResNet-34 also with layer1..layer4 checkpointed) and the six-layer
// nn.TransformerEncoder, exported by Debian's torch 1.13 with samples/export_onnx.py at the
// oracle's sizes (batch 8, 224 x 224; 16 x 256 x 512; about 110 s for the six exports).
//
// Compared: peak within 1 % and peak - residue within 2 %, end of forward - residue within 2 %,
// reserved within 3 %. A case that cannot meet a bound names why in kExpected below, with the
// ratio it has: the test then checks that ratio (to 0.1 %), so a change in either direction
// shows, and prints the reason. The table is printed at the end (`ctest -V`), and the guide's
// table of every case is checked against this run's (readmeTable).
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/model/loader.hpp"
#include "engine/run/runner.hpp"
#include "engine/tensor/memory_semantics.hpp"

using namespace ckpt;

namespace {

QString source_dir() {
  return qEnvironmentVariable("CKPTLAB_SOURCE_DIR");
}

struct OracleCase {
  std::string name;
  std::int64_t residue = 0, peak = 0, end_fwd = 0, reserved = 0;
};

std::map<std::string, OracleCase> load_oracle() {
  const std::string path =
      (source_dir() + "/tests/oracle/data/gpu_oracle_memory.json").toStdString();
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  const auto j = nlohmann::json::parse(in);
  std::map<std::string, OracleCase> cases;
  for (const auto& c : j.at("cases")) {
    OracleCase o;
    o.name = c.at("case").get<std::string>();
    o.residue = c.at("residue").get<std::int64_t>();
    o.peak = c.at("peak").get<std::int64_t>();
    o.end_fwd = c.at("end_fwd").get<std::int64_t>();
    o.reserved = c.at("reserved").get<std::int64_t>();
    cases[o.name] = o;
  }
  return cases;
}

enum class Metric { peak, peak_less_residue, end_fwd, reserved };
const char* metric_name(Metric m) {
  switch (m) {
    case Metric::peak:
      return "peak";
    case Metric::peak_less_residue:
      return "peak - residue";
    case Metric::end_fwd:
      return "end_fwd - residue";
    case Metric::reserved:
      return "reserved";
  }
  return "?";
}
double bound(Metric m) {
  switch (m) {
    case Metric::peak:
      return 0.01;
    case Metric::peak_less_residue:
    case Metric::end_fwd:
      return 0.02;
    case Metric::reserved:
      return 0.03;
  }
  return 0;
}

// A case that cannot meet a bound: the ratio (engine / PyTorch) it has, and why.
// Why a figure cannot meet its bound: a short label (the guide's table) and the cause.
struct Reason {
  const char* label;
  const char* text;
};

struct ExpectedDeviation {
  const char* case_name;
  Metric metric;
  double ratio;
  const Reason* why;
};

const Reason kCudnnWorkspaces{
    "cuDNN's workspaces",
    "cuDNN's heuristics pick each convolution's plan and its workspace; the engine takes the "
    "NHWC transforms of input, output and filter (+16 B), the oracle's most frequent size, and "
    "the weight-gradient plans take split-K workspaces up to 3.4 times that (at this peak, and "
    "in the segments of 10 MiB and more they make the allocator reserve)"};
const Reason kAfterFusion{
    "backward temporaries around depthwise and 7x7 convolutions",
    "with the importer's fused ops (issue 27) the forward's activations agree (end of forward "
    "within 1 %); the rest is in the backward's temporaries and the segments they make the "
    "allocator reserve, around this model's depthwise and 7x7 convolutions (cuDNN's plans and "
    "workspaces, not yet broken down by snapshot)"};

const Reason kReservedAfterFusion{
    "the order of the backward's temporaries",
    "with the importer's fused ops (issue 27; nn.Linear on windows from issue 40, 0.9365 "
    "before) the peak agrees within 1 %; the segments the "
    "allocator reserves follow the order and sizes of the backward's temporaries (its "
    "attention's, here), which no snapshot of this case shows yet"};

const Reason kReservedOrder{
    "the order of 1.6 GB blocks' frees",
    "every block checkpointed: the step frees and reallocates blocks of up to 1.6 GB, and the "
    "segments the allocator keeps depend on that order; the simulation replays the oracle's own "
    "snapshots exactly, so the difference is in the engine's order of allocations here, which "
    "no snapshot of this case shows (peak and end of forward agree within 0.03 %)"};

const Reason kLossBlocksOrder{
    "the order of the loss's 6.6 GB blocks (no snapshot)",
    "the allocated peak agrees to 0.0001 and the simulation replays the oracle's own snapshots "
    "exactly (test_engine_caching_allocator), so the 4.25 GB PyTorch reserved beyond the engine "
    "come from the order of its allocations and frees, most likely around the loss, whose logits, "
    "log-softmax and their two gradients are the only blocks of 6.6 GB (32,768 x 50,257 "
    "float32); no snapshot of this case shows that order"};

const Reason kFusedAttentionBackward{
    "the last layer's backward (no snapshot)",
    "with PyTorch 2.x's memory-efficient kernel the forward agrees (end of forward 0.997), and the "
    "attention's backward takes what _efficient_attention_backward takes (the gradients, delta "
    "and its float32 temporaries, and its 8 MiB split-keys workspace as kernel_backward.h sizes "
    "it, which does not reach the peak). The engine's peak is in the last layer's "
    "feed-forward backward, 19 MiB below the H200's; no snapshot of this case shows where "
    "PyTorch's peak is, nor the order of the backward's temporaries that reserved follows"};

const ExpectedDeviation kExpected[] = {
    {"gpt2_small__plain", Metric::reserved, 0.9553, &kLossBlocksOrder},
    {"tv_efficientnet_b0__plain", Metric::reserved, 0.9529, &kAfterFusion},
    {"tv_resnet34__layers", Metric::reserved, 0.9504, &kCudnnWorkspaces},
    {"nn_transformer_encoder__plain", Metric::peak, 0.9824, &kFusedAttentionBackward},
    {"nn_transformer_encoder__plain", Metric::reserved, 0.9577, &kFusedAttentionBackward},
    {"gpt2_small__depth2", Metric::reserved, 0.8568, &kReservedOrder},
    {"tv_resnet34__plain", Metric::reserved, 0.8967, &kCudnnWorkspaces},
    {"tv_regnet_y_400mf__plain", Metric::reserved, 0.8762, &kCudnnWorkspaces},
    {"tv_convnext_tiny__plain", Metric::reserved, 0.8448, &kAfterFusion},
    {"tv_swin_t__plain", Metric::reserved, 0.9430, &kReservedAfterFusion},
    {"resnet__plain", Metric::peak_less_residue, 0.9530, &kCudnnWorkspaces},
    {"resnet__depth2", Metric::peak_less_residue, 0.9724, &kCudnnWorkspaces},
    {"densenet_block__depth2", Metric::peak, 0.9888, &kCudnnWorkspaces},
    {"densenet_block__depth2", Metric::peak_less_residue, 0.9604, &kCudnnWorkspaces},
    {"tv_resnet34__plain", Metric::peak, 0.9762, &kCudnnWorkspaces},
    {"tv_resnet34__plain", Metric::peak_less_residue, 0.9733, &kCudnnWorkspaces},
    {"tv_regnet_y_400mf__plain", Metric::peak, 0.9849, &kCudnnWorkspaces},
};

const ExpectedDeviation* expected(const std::string& name, Metric m) {
  for (const auto& e : kExpected)
    if (name == e.case_name && m == e.metric) return &e;
  return nullptr;
}

struct Row {
  std::string name;
  std::int64_t engine[4];
  std::int64_t torch[4];
};
std::vector<Row> g_rows;

double ratio(std::int64_t engine, std::int64_t torch) {
  return torch ? static_cast<double>(engine) / static_cast<double>(torch) : 0.0;
}

std::string megabytes(std::int64_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", static_cast<double>(bytes) / 1e6);
  return b;
}

// The guide's table (docs/guide/gpu-memory.md, between its cuda-oracle-table markers): every case,
// peak and reserved, the engine's against the H200's, and the named reason of a figure outside its
// bound.
std::string readme_table() {
  std::string t =
      "| case | peak, engine (MB) | peak, H200 (MB) | ratio | reserved, engine (MB) | "
      "reserved, H200 (MB) | ratio | outside 1 % (peak) or 3 % (reserved) because |\n"
      "|---|---:|---:|---:|---:|---:|---:|---|\n";
  for (const Row& r : g_rows) {
    std::string why;
    for (const auto m : {Metric::peak, Metric::reserved})
      if (const ExpectedDeviation* e = expected(r.name, m))
        why += std::string(why.empty() ? "" : "; ") + metric_name(m) + ": " + e->why->label;
    char line[512];
    std::snprintf(line, sizeof line, "| `%s` | %s | %s | %.4f | %s | %s | %.4f | %s |\n",
                  r.name.c_str(), megabytes(r.engine[0]).c_str(), megabytes(r.torch[0]).c_str(),
                  ratio(r.engine[0], r.torch[0]), megabytes(r.engine[3]).c_str(),
                  megabytes(r.torch[3]).c_str(), ratio(r.engine[3], r.torch[3]), why.c_str());
    t += line;
  }
  return t;
}

int depth_of(const std::string& path) {
  return path.empty() ? 0 : 1 + static_cast<int>(std::count(path.begin(), path.end(), '.'));
}

// The configuration of an oracle case's code/*.py (`ckptlab-cli code` with the case's options).
RunRequest case_config(const Model& model, const std::string& sample, const std::string& variant) {
  RunRequest c = scenario_request(model);
  c.plan.modules.clear();
  c.plan.segments = 0;
  if (variant == "depth2") {
    if (sample == "checkpoint_sequential") {
      c.plan.segments = 2;
    } else {
      for (const Module* m : model.all_modules())
        if (depth_of(m->path) == 2 && m->checkpointable) c.plan.modules.insert(m->path);
      c.settings.use_reentrant = false;
    }
  }
  c.settings.device = Device::cuda;
  c.settings.dry_run = true;
  return c;
}

// What the allocator's blocks hold at the end of step k (the events' block bytes summed).
std::int64_t blocks_at(const Trace& t, const std::vector<std::int64_t>& block_bytes,
                       std::int64_t k) {
  std::int64_t total = 0;
  for (std::int64_t i = 0; i < t.first_event(k + 1); ++i) {
    const TraceEvent e = t.event(i);
    if (e.kind == TraceEventKind::alloc) total += block_bytes[static_cast<std::size_t>(i)];
    if (e.kind == TraceEventKind::free) total -= block_bytes[static_cast<std::size_t>(i)];
  }
  return total;
}

void compare(const OracleCase& o, const std::shared_ptr<const Model>& model,
             const RunRequest& config) {
  const RunResult r = Runner(model).run(config);
  QVERIFY2(r.ok, r.error.c_str());
  QVERIFY(r.reserved.has_value());
  const std::int64_t workspace = memory_semantics(Device::cuda).workspace_bytes();
  // torch.cuda.max_memory_allocated and memory_allocated count the allocator's blocks (a large
  // block not split keeps its remainder): the simulation's figures, not the requests'.
  const std::int64_t peak = r.reserved->allocated_peak;
  const std::int64_t end_fwd = blocks_at(r.trace, r.reserved->block_bytes, r.trace.forward_end());
  Row row{o.name,
          {peak, peak - workspace, end_fwd - workspace, r.reserved->peak_bytes},
          {o.peak, o.peak - o.residue, o.end_fwd - o.residue, o.reserved}};
  g_rows.push_back(row);
  std::string failures;  // every figure's verdict, not only the first
  for (int i = 0; i < 4; ++i) {
    const auto m = static_cast<Metric>(i);
    const double q = ratio(row.engine[i], row.torch[i]);
    const ExpectedDeviation* e = expected(o.name, m);
    const std::string what = o.name + " " + metric_name(m) + ": engine " +
                             std::to_string(row.engine[i]) + ", PyTorch " +
                             std::to_string(row.torch[i]) + ", ratio " + std::to_string(q);
    if (e) {
      qInfo("%s (expected %.4f: %s)", what.c_str(), e->ratio, e->why->text);
      if (std::abs(q - e->ratio) > 0.001)
        failures += what + " moved from its documented deviation " + std::to_string(e->ratio) +
                    ": update kExpected or find what changed\n";
    } else if (std::abs(q - 1.0) > bound(m)) {
      failures += what + ", beyond " + std::to_string(bound(m) * 100) + " %\n";
    }
  }
  QVERIFY2(failures.empty(), failures.c_str());
}

const char* const kSamples[] = {
    "checkpoint_sequential", "densenet_block",    "gpt2_small", "gpt_mini", "lstm", "mlp", "resnet",
    "subnet_trainable_head", "transformer_block", "vit_tiny"};
const char* const kTorchvision[] = {"resnet34", "efficientnet_b0", "convnext_tiny", "swin_t",
                                    "regnet_y_400mf"};

}  // namespace

class CudaMemoryOracle : public QObject {
  Q_OBJECT

 private:
  std::map<std::string, OracleCase> oracle_;
  QTemporaryDir dir_;
  std::map<QString, std::shared_ptr<const Model>> exported_;

  // A model exported by Debian's torch 1.13 (samples/export_onnx.py), once per file; null after
  // a QSKIP (no torch) or a QFAIL.
  std::shared_ptr<const Model> exported(const QStringList& args, const QString& file) {
    if (const auto it = exported_.find(file); it != exported_.end()) return it->second;
    const QString python =
        qEnvironmentVariable("CKPTLAB_PYTHON", QStringLiteral("/usr/bin/python3"));
    QProcess p;
    p.start(python, QStringList{source_dir() + "/samples/export_onnx.py"} + args +
                        QStringList{"--out", dir_.path()});
    if (!p.waitForFinished(300000) || p.exitCode() != 0) {
      const QByteArray err = p.readAllStandardError();
      if (err.contains("No module named")) {
        QTest::qSkip(
            qPrintable("the export needs torch and torchvision: " + QString(err.right(200))),
            __FILE__, __LINE__);
        return nullptr;
      }
      QTest::qFail(qPrintable("export of " + file + " failed: " + QString(err.right(400))),
                   __FILE__, __LINE__);
      return nullptr;
    }
    return exported_[file] = load_model((dir_.path() + "/" + file).toStdString());
  }

 private slots:
  void initTestCase() { oracle_ = load_oracle(); }

  void samples_data() {
    QTest::addColumn<QString>("sample");
    QTest::addColumn<QString>("variant");
    for (const char* s : kSamples)
      for (const char* v : {"plain", "depth2"})
        QTest::newRow((std::string(s) + "__" + v).c_str()) << QString(s) << QString(v);
  }

  void samples() {
    QFETCH(QString, sample);
    QFETCH(QString, variant);
    const std::string name = sample.toStdString() + "__" + variant.toStdString();
    const auto it = oracle_.find(name);
    // transformer_block__depth2 failed inside PyTorch (the oracle's README): no figures.
    if (it == oracle_.end()) QSKIP("the oracle has no figures for this case");
    const auto model = load_model((source_dir() + "/samples/" + sample + ".json").toStdString());
    compare(it->second, model, case_config(*model, sample.toStdString(), variant.toStdString()));
  }

  void torchvision_data() {
    QTest::addColumn<QString>("name");
    for (const char* n : kTorchvision) QTest::newRow(n) << QString(n);
  }

  void torchvision() {
    QFETCH(QString, name);
    const auto model =
        exported({"--torchvision", name, "--batch", "8", "--size", "224"}, name + ".onnx");
    if (!model) return;
    compare(oracle_.at("tv_" + name.toStdString() + "__plain"), model,
            case_config(*model, name.toStdString(), "plain"));
  }

  // tv_resnet34__layers: layer1..layer4 each under checkpoint(..., use_reentrant=False).
  void torchvisionCheckpointed() {
    const auto model =
        exported({"--torchvision", "resnet34", "--batch", "8", "--size", "224"}, "resnet34.onnx");
    if (!model) return;
    RunRequest config = case_config(*model, "resnet34", "plain");
    config.plan.modules = {"layer1", "layer2", "layer3", "layer4"};
    config.settings.use_reentrant = false;
    compare(oracle_.at("tv_resnet34__layers"), model, config);
  }

  // nn_transformer_encoder__plain: six TransformerEncoderLayer(512, 8, 2048, dropout=0.1, gelu,
  // batch_first) on 16 x 256 x 512, as PyTorch 1.13 exports nn.MultiheadAttention.
  void transformerEncoder() {
    const auto model = exported({"--transformer-encoder", "--batch", "16", "--seq", "256"},
                                "transformer_encoder.onnx");
    if (!model) return;
    compare(oracle_.at("nn_transformer_encoder__plain"), model,
            case_config(*model, "transformer_encoder", "plain"));
  }

  // The guide's table of every case (docs/guide/gpu-memory.md) is this test's: it fails when
  // they differ, and
  // CKPTLAB_UPDATE_DOCS=1 writes it.
  void readmeTable() {
    if (g_rows.size() != oracle_.size())
      QSKIP("not every case ran (the guide's table needs all of them)");
    const QString path = source_dir() + "/docs/guide/gpu-memory.md";
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const std::string readme = f.readAll().toStdString();
    f.close();
    const std::string begin = "<!-- cuda-oracle-table: begin -->\n";
    const std::string end = "<!-- cuda-oracle-table: end -->";
    const auto b = readme.find(begin), e = readme.find(end);
    QVERIFY2(b != std::string::npos && e != std::string::npos && b < e,
             "docs/guide/gpu-memory.md has no cuda-oracle-table markers");
    const std::string table = readme_table();
    const std::string current = readme.substr(b + begin.size(), e - b - begin.size());
    if (current == table) return;
    if (qEnvironmentVariable("CKPTLAB_UPDATE_DOCS") == "1") {
      QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
      f.write((readme.substr(0, b + begin.size()) + table + readme.substr(e)).c_str());
      return;
    }
    QFAIL(qPrintable(
        "docs/guide/gpu-memory.md's table of the oracle cases differs from this run's; run this "
        "test with CKPTLAB_UPDATE_DOCS=1 to write it:\n" +
        QString::fromStdString(table)));
  }

  void cleanupTestCase() {
    std::printf("\n%-31s %-18s %15s %15s %7s\n", "case", "figure", "engine", "PyTorch", "ratio");
    for (const Row& r : g_rows)
      for (int i = 0; i < 4; ++i)
        std::printf("%-31s %-18s %15lld %15lld %7.4f%s\n", r.name.c_str(),
                    metric_name(static_cast<Metric>(i)), static_cast<long long>(r.engine[i]),
                    static_cast<long long>(r.torch[i]), ratio(r.engine[i], r.torch[i]),
                    expected(r.name, static_cast<Metric>(i)) ? "  (documented deviation)" : "");
  }
};

QTEST_GUILESS_MAIN(CudaMemoryOracle)
#include "test_cuda_memory_oracle.moc"
