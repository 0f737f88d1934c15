// Issue 31: the whole training step's memory (`--device cuda --dry-run` with --optimizer and
// --amp) against what PyTorch 2.11 held on an NVIDIA H200 in steady-state steps
// (../shared/reference/gpu-oracle/train/, committed as data/gpu_oracle_train.json): every case
// the project can build. GPT-2 small from samples/gpt2_small.json at batch 8; torchvision's
// ResNet-50 at batch 32 x 224 x 224 and the oracle's nn.TransformerEncoder at 16 x 256 x 512,
// both exported by Debian's torch 1.13 with samples/export_onnx.py (about a minute for the two).
//
// cudaStepPhases: start, the forward+backward peak, what is live after backward and the
// optimizer step's peak within 2 %, or the case's named deviation (kExpected), every figure
// printed (the oracle table).
//
// cpuSideFigures: what holds on any device and is checked now: the parameters' bytes and the
// optimizer's state (AdamW twice the parameters, momentum once; the CPU's float32 step counters
// on top, which 2.x on CUDA keeps in host memory), and each phase of the engine's CPU-semantics
// figures printed beside the oracle's (the table in the report).
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "engine/model/loader.hpp"
#include "engine/report/figures.hpp"
#include "engine/run/runner.hpp"

using namespace ckpt;

namespace {

QString source_dir() {
  return qEnvironmentVariable("CKPTLAB_SOURCE_DIR");
}

struct OracleStep {
  std::string name, model, optimizer;
  bool bf16 = false;
  std::int64_t start = 0, params = 0, optimizer_state = 0, peak_forward_backward = 0,
               after_backward = 0, peak_optimizer_step = 0;
};

std::vector<OracleStep> load_oracle() {
  const std::string path =
      (source_dir() + "/tests/oracle/data/gpu_oracle_train.json").toStdString();
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::vector<OracleStep> out;
  const nlohmann::json oracle = nlohmann::json::parse(in);
  for (const auto& c : oracle.at("results")) {
    OracleStep o;
    o.name = c.at("case").get<std::string>();
    o.model = o.name.substr(0, o.name.find("__"));
    o.optimizer = c.at("optimizer").get<std::string>();
    o.bf16 = c.at("amp_bf16").get<bool>();
    o.start = c.at("start").get<std::int64_t>();
    o.params = c.at("params").get<std::int64_t>();
    o.optimizer_state = c.at("optimizer_state").get<std::int64_t>();
    o.peak_forward_backward = c.at("peak_forward_backward").get<std::int64_t>();
    o.after_backward = c.at("after_backward").get<std::int64_t>();
    o.peak_optimizer_step = c.at("peak_optimizer_step").get<std::int64_t>();
    out.push_back(o);
  }
  return out;
}

// A figure that cannot meet the bound on the cuda device: the ratio it has, and why.
struct ExpectedDeviation {
  const char* case_name;
  const char* figure;
  double ratio;
  const char* why;
};

// The figures on the cuda device count the caching allocator's blocks, as
// torch.cuda.memory_allocated does (a large block not split when 1 MiB or less would remain is
// allocated whole: the snapshot of tv_resnet50_b32__adamw_bf16 has its 51,380,224-byte
// activations in 52,428,800-byte blocks). Which blocks go unsplit depends on the order of
// allocations and frees; where the engine's order differs from PyTorch's, a figure is off by
// whole MiB of such remainders (the encoder's 1, 3 and 4 MiB parameters' gradients and
// optimizer state land in them).
constexpr const char* kUnsplitBlocks =
    "which large blocks stay unsplit (remainder <= 1 MiB, counted whole) follows the order of "
    "allocations, which differs from PyTorch's here";
// nn.Linear on the encoder's [B, S, E] activations is exported by 1.13 as MatMul + Add; the
// importer fuses it back into linear (engine/ops/linear_patterns.cpp), so that under autocast
// the bias is cast with the product and the feed-forward activations stay bfloat16, as
// F.linear's (before the fusion the bf16 forward+backward peaks were 1.13 to 1.17x).
const std::vector<ExpectedDeviation> kExpected = {
    {"nn_transformer_encoder__sgd_fp32", "after_backward", 1.0272, kUnsplitBlocks},
    {"nn_transformer_encoder__sgd_fp32", "peak_optimizer_step", 1.0272, kUnsplitBlocks},
    {"nn_transformer_encoder__adamw_bf16", "start", 0.9768, kUnsplitBlocks},
};

double ratio(std::int64_t engine, std::int64_t torch) {
  return torch ? static_cast<double>(engine) / static_cast<double>(torch) : 0.0;
}

std::int64_t trainable_bytes(const Model& m) {
  std::int64_t b = 0;
  for (const auto& p : m.parameters)
    if (p.requires_grad && !p.is_buffer) b += p.initial.nbytes();
  return b;
}

// The parameters' bytes as the CUDA caching allocator rounds each (512 bytes).
std::int64_t trainable_blocks(const Model& m) {
  std::int64_t b = 0;
  for (const auto& p : m.parameters)
    if (p.requires_grad && !p.is_buffer) b += (p.initial.nbytes() + 511) / 512 * 512;
  return b;
}

std::int64_t trainable_count(const Model& m) {
  std::int64_t n = 0;
  for (const auto& p : m.parameters)
    if (p.requires_grad && !p.is_buffer) ++n;
  return n;
}

}  // namespace

class GpuTrainOracle : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    oracle_ = load_oracle();
    QCOMPARE(oracle_.size(), std::size_t{14});
    const QString python = qEnvironmentVariable("CKPTLAB_PYTHON", "/usr/bin/python3");
    const QString script = source_dir() + "/samples/export_onnx.py";
    for (const QStringList& args :
         {QStringList{"--torchvision", "resnet50", "--batch", "32", "--size", "224", "--classes",
                      "1000", "--out", dir_.path()},
          QStringList{"--transformer-encoder", "--batch", "16", "--seq", "256", "--out",
                      dir_.path()}}) {
      QProcess p;
      p.setProcessChannelMode(QProcess::MergedChannels);
      p.start(python, QStringList{script} + args);
      QVERIFY(p.waitForFinished(400000));
      QVERIFY2(p.exitCode() == 0, p.readAll().constData());
    }
    models_["tv_resnet50_b32"] = load_model(dir_.filePath("resnet50.onnx").toStdString());
    models_["nn_transformer_encoder"] =
        load_model(dir_.filePath("transformer_encoder.onnx").toStdString());
    models_["gpt2_small_b8"] =
        load_model((source_dir() + "/samples/gpt2_small.json").toStdString());
  }

  void cudaStepPhases_data() { rows(); }
  void cudaStepPhases() {
    QFETCH(int, index);
    const OracleStep& o = oracle_[static_cast<std::size_t>(index)];
    const RunResult r = run(o, Device::cuda);
    QVERIFY2(r.ok, r.error.c_str());
    QVERIFY(r.reserved.has_value());
    const StepPhases p = step_phases(r.trace, &r.reserved->block_bytes);
    const std::pair<const char*, std::pair<std::int64_t, std::int64_t>> figures[] = {
        {"start", {p.start, o.start}},
        {"peak_forward_backward", {p.peak_forward_backward, o.peak_forward_backward}},
        {"after_backward", {p.after_backward, o.after_backward}},
        {"peak_optimizer_step", {p.peak_optimizer_step, o.peak_optimizer_step}}};
    // Every figure is printed before any is checked: the report's table needs them all.
    std::vector<std::pair<std::string, bool>> verdicts;
    for (const auto& [figure, values] : figures) {
      const double q = ratio(values.first, values.second);
      const std::string what = o.name + " " + figure + ": engine " + std::to_string(values.first) +
                               ", PyTorch " + std::to_string(values.second) + ", ratio " +
                               std::to_string(q);
      const ExpectedDeviation* e = nullptr;
      for (const auto& x : kExpected)
        if (o.name == x.case_name && std::string(figure) == x.figure) e = &x;
      if (e) {
        qInfo("%s (expected %.4f: %s)", what.c_str(), e->ratio, e->why);
        verdicts.emplace_back(what + ": moved from kExpected", std::abs(q - e->ratio) <= 0.001);
      } else {
        qInfo("%s", what.c_str());
        verdicts.emplace_back(what + ", beyond 2 %", std::abs(q - 1.0) <= 0.02);
      }
    }
    for (const auto& [what, ok] : verdicts) QVERIFY2(ok, what.c_str());
    // On CUDA the optimizer's state is PyTorch's: one copy of the parameters per state tensor
    // (momentum one, AdamW two), each an allocation rounded to 512 bytes (the oracle reports
    // numel x element size); its step counters are host memory.
    const std::int64_t copies = o.optimizer == "adamw" ? 2 : o.optimizer == "momentum" ? 1 : 0;
    QCOMPARE(o.optimizer_state, copies * o.params);
    const Model& m = *models_.at(o.model);
    QCOMPARE(r.trace.memory_at(-1)[static_cast<std::size_t>(MemoryCategory::optimizer_state)],
             copies * trainable_blocks(m));
  }

  void cpuSideFigures_data() { rows(); }
  void cpuSideFigures() {
    QFETCH(int, index);
    const OracleStep& o = oracle_[static_cast<std::size_t>(index)];
    const Model& m = *models_.at(o.model);
    QCOMPARE(trainable_bytes(m), o.params);
    const RunResult r = run(o, Device::cpu);
    QVERIFY2(r.ok, r.error.c_str());
    const std::int64_t state =
        r.trace.memory_at(-1)[static_cast<std::size_t>(MemoryCategory::optimizer_state)];
    const std::int64_t counters = o.optimizer == "adamw" ? 4 * trainable_count(m) : 0;
    QCOMPARE(state - counters, o.optimizer_state);
    const StepPhases p = step_phases(r.trace);
    QVERIFY(p.has_optimizer_step);
    qInfo(
        "%-38s start %6.3f  fwd+bwd peak %6.3f  after bwd %6.3f  step peak %6.3f  "
        "(engine cpu / H200)",
        o.name.c_str(), ratio(p.start, o.start),
        ratio(p.peak_forward_backward, o.peak_forward_backward),
        ratio(p.after_backward, o.after_backward),
        ratio(p.peak_optimizer_step, o.peak_optimizer_step));
  }

 private:
  void rows() {
    QTest::addColumn<int>("index");
    for (std::size_t i = 0; i < oracle_.size(); ++i)
      QTest::newRow(oracle_[i].name.c_str()) << static_cast<int>(i);
  }

  RunResult run(const OracleStep& o, Device device) const {
    const auto& model = models_.at(o.model);
    RunRequest r = scenario_request(*model);
    r.plan = CheckpointPlan{};
    r.settings.device = device;
    r.settings.dry_run = true;
    r.settings.batch = o.model == "gpt2_small_b8" ? 8 : 0;
    r.settings.optimizer.kind = optimizer_from_name(o.optimizer);
    r.settings.amp = o.bf16 ? AmpMode::bf16 : AmpMode::off;
    return Runner(model).run(r);
  }

  QTemporaryDir dir_;
  std::vector<OracleStep> oracle_;
  std::map<std::string, std::shared_ptr<Model>> models_;
};

QTEST_GUILESS_MAIN(GpuTrainOracle)
#include "test_gpu_train_oracle.moc"
