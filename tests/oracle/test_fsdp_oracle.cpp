// FSDP2 per rank against a GPU (issue 39). tests/oracle/fsdp/run.sh measures each case of
// tests/oracle/fsdp/cases.jsonl on one GPU with PyTorch 2.x's fake process group (a Llama-family
// decoder, fully_shard on every block and the root, AdamW; ../shared/reference/gpu-oracle/fsdp)
// and writes tests/oracle/data/gpu_oracle_fsdp.jsonl. This test builds the same decoder in the
// native format, runs it dry with the cuda device's semantics and the case's settings, and
// takes one rank's figures from the engine's model (engine/report/fsdp_memory.hpp):
//
// - modelledFigures: every case runs and its per-rank figures are printed, with the checks that
//   hold without a GPU (the shards' bytes by hand, fewer ranks hold more);
// - againstGpu: each case's peak within 2 % of the GPU's max_memory_allocated (the issue's
//   bound), end of forward and after backward printed beside the GPU's.
//
// Until a GPU has measured the cases the figures file is absent: the test then exits 77, which
// CTest reports as skipped (SKIP_RETURN_CODE), never as passed.
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
#include "engine/report/fsdp_memory.hpp"
#include "engine/run/runner.hpp"

using namespace ckpt;
using nlohmann::json;

namespace {

constexpr int kSkip = 77;

std::string source_dir() {
  return qEnvironmentVariable("CKPTLAB_SOURCE_DIR").toStdString();
}
std::string figures_path() {
  return source_dir() + "/tests/oracle/data/gpu_oracle_fsdp.jsonl";
}

std::vector<json> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<json> out;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty() && line[0] == '{') out.push_back(json::parse(line));
  return out;
}

// The oracle's decoder in the native format: embedding, blocks of RMSNorm → attention (rotary,
// grouped-query, causal SDPA) → residual → RMSNorm → SwiGLU → residual, norm, an untied head.
json decoder(const json& c) {
  const json& m = c.at("model");
  const int dim = m.at("dim"), heads = m.at("heads"), vocab = m.at("vocab");
  const int seq = c.at("seq");
  json block = {{"type", "sequential"},
                {"name", "{i}"},
                {"args", {"x"}},
                {"layers",
                 {{{"type", "rmsnorm"}, {"name", "attention_norm"}, {"dim", dim}, {"eps", 1e-5}},
                  {{"type", "llama_attention"},
                   {"name", "attention"},
                   {"dim", dim},
                   {"heads", heads},
                   {"kv_heads", m.at("kv_heads")},
                   {"seq", seq},
                   {"rope_theta", 500000}},
                  {{"type", "add"}, {"other", "x"}, {"as", "mid"}},
                  {{"type", "rmsnorm"}, {"name", "ffn_norm"}, {"dim", dim}, {"eps", 1e-5}},
                  {{"type", "gated_mlp"},
                   {"name", "feed_forward"},
                   {"dim", dim},
                   {"hidden", m.at("ffn")},
                   {"activation", "silu"}},
                  {{"type", "add"}, {"other", "mid"}}}}};
  return {
      {"format", "checkpoint-lab-model"},
      {"version", 1},
      {"name", c.at("case")},
      {"seed", 0},
      {"batch", c.at("batch")},
      {"inputs", {{{"name", "idx"}, {"shape", {"batch", seq}}, {"classes", vocab}}}},
      {"model",
       {{"type", "sequential"},
        {"args", {"idx"}},
        {"layers",
         {{{"type", "embedding"}, {"name", "tok_embeddings"}, {"num", vocab}, {"dim", dim}},
          {{"type", "sequential"},
           {"name", "layers"},
           {"layers",
            {{{"type", "repeat"}, {"count", m.at("layers")}, {"shared", false}, {"body", block}}}}},
          {{"type", "rmsnorm"}, {"name", "norm"}, {"dim", dim}, {"eps", 1e-5}},
          {{"type", "linear"}, {"name", "output"}, {"in", dim}, {"out", vocab}, {"bias", false}},
          {{"type", "reshape"}, {"shape", {-1, vocab}}}}}}},
      {"loss", {{"type", "cross_entropy"}, {"classes", vocab}, {"per_example", seq}}},
      {"dry_run_only", true}};
}

struct Modelled {
  std::string name;
  int ranks = 1;
  std::int64_t shards = 0;  // float32 shard bytes (padding included), the buffers apart
  std::int64_t peak = 0, end_fwd = 0, after_bwd = 0;
};

Modelled run_case(const json& c, const QTemporaryDir& dir) {
  const std::string path =
      dir.filePath(QString::fromStdString(c.at("case"))).toStdString() + ".json";
  std::ofstream(path) << decoder(c).dump(1);
  const auto model = load_model(path);
  RunRequest r;
  r.settings.device = Device::cuda;
  r.settings.dry_run = true;
  r.settings.threads = 1;
  r.settings.optimizer.kind = OptimizerKind::adamw;
  r.settings.param_dtype = c.value("param_dtype", "bf16") == "bf16" ? DType::bf16 : DType::f32;
  r.settings.fsdp.ranks = c.at("world");
  r.settings.fsdp.reshard_after_forward = c.value("reshard_after_forward", true);
  r.settings.fsdp.reduce_dtype =
      c.value("reduce_dtype", "fp32") == "bf16" ? DType::bf16 : DType::f32;
  r.settings.use_reentrant = false;
  const std::string ac = c.value("ac", "none");
  if (ac != "none")
    for (int i = 0; i < c.at("model").at("layers").get<int>(); ++i)
      r.plan.modules.insert("layers." + std::to_string(i));
  if (ac == "sac-mm") r.plan.policy = SelectivePolicy::parse("save:mm");
  const RunResult run = Runner(model).run(r);
  if (!run.ok) throw std::runtime_error(c.at("case").get<std::string>() + ": " + run.error);
  const FsdpRankMemory m = fsdp_rank_memory(*model, run.trace, r.settings);
  Modelled out;
  out.name = c.at("case");
  out.ranks = m.ranks;
  for (const auto& u : m.units) out.shards += 4 * u.shard_numel;
  out.peak = m.peak_bytes;
  out.end_fwd = m.total_by_step[static_cast<std::size_t>(run.trace.forward_end())];
  std::int64_t last_backward = -1;
  for (std::int64_t k = 0; k < run.trace.step_count(); ++k)
    if (run.trace.step_phase(k) != Phase::optimizer) last_backward = k;
  out.after_bwd = m.total_by_step[static_cast<std::size_t>(last_backward)];
  return out;
}

double mib(std::int64_t b) {
  return static_cast<double>(b) / (1024.0 * 1024.0);
}

}  // namespace

class TestFsdpOracle : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  std::vector<json> cases_;
  std::map<std::string, Modelled> modelled_;

 private slots:
  void initTestCase() {
    cases_ = read_lines(source_dir() + "/tests/oracle/fsdp/cases.jsonl");
    QVERIFY2(cases_.size() >= 7, "tests/oracle/fsdp/cases.jsonl: the oracle's cases");
    for (const json& c : cases_) modelled_[c.at("case")] = run_case(c, dir_);
  }

  void modelledFigures() {
    std::printf("%-20s %5s %14s %12s %12s %12s\n", "case", "ranks", "shards MiB", "peak MiB",
                "end fwd MiB", "after bwd MiB");
    for (const auto& [name, m] : modelled_)
      std::printf("%-20s %5d %14.2f %12.2f %12.2f %12.2f\n", name.c_str(), m.ranks, mib(m.shards),
                  mib(m.peak), mib(m.end_fwd), mib(m.after_bwd));
    // The shards by hand: 4 blocks of 2 norms [512], wq and wo [512, 512], wk and wv [128, 512],
    // w1 and w3 [1408, 512], w2 [512, 1408]; the embedding and the head [32000, 512] and the
    // norm [512]; each parameter's dim 0 in ceil(rows / 8) rows, float32.
    const std::int64_t block8 = 2 * 64 + 2 * 64 * 512 + 2 * 16 * 512 + 2 * 176 * 512 + 64 * 1408;
    const std::int64_t root8 = 2 * 4000 * 512 + 64;
    QCOMPARE(modelled_.at("mini_w8_none").shards, 4 * (4 * block8 + root8));
    QVERIFY(modelled_.at("mini_w1_none").peak > modelled_.at("mini_w2_none").peak);
    QVERIFY(modelled_.at("mini_w2_none").peak > modelled_.at("mini_w8_none").peak);
    QVERIFY(modelled_.at("mini_w8_none").peak > modelled_.at("mini_w8_full").peak);
    QVERIFY(modelled_.at("mini_w8_noreshard").peak > modelled_.at("mini_w8_full").peak);
    QVERIFY(modelled_.at("mini_w8_fp32").peak > modelled_.at("mini_w8_full").peak);
  }

  void againstGpu() {
    const auto measured = read_lines(figures_path());
    if (measured.empty())
      QSKIP(
          "no GPU has measured the FSDP oracle: run tests/oracle/fsdp/run.sh on a GPU machine "
          "and commit tests/oracle/data/gpu_oracle_fsdp.jsonl");
    int compared = 0;
    for (const json& g : measured) {
      const std::string name = g.at("case");
      QVERIFY2(modelled_.count(name), ("a measured case not in cases.jsonl: " + name).c_str());
      if (g.contains("error")) {
        std::printf("%-20s the GPU run failed: %s\n", name.c_str(),
                    g.at("error").get<std::string>().c_str());
        continue;
      }
      const Modelled& m = modelled_.at(name);
      const auto gpu = [&](const char* k) { return g.at(k).get<std::int64_t>(); };
      const double ratio = static_cast<double>(m.peak) / static_cast<double>(gpu("peak"));
      std::printf(
          "%-20s peak %10.2f MiB vs GPU %10.2f (%.3f); end fwd %10.2f vs %10.2f; after "
          "bwd %10.2f vs %10.2f; GPU reserved %10.2f (not modelled per rank)\n",
          name.c_str(), mib(m.peak), mib(gpu("peak")), ratio, mib(m.end_fwd), mib(gpu("end_fwd")),
          mib(m.after_bwd), mib(gpu("after_bwd")), mib(gpu("reserved")));
      QVERIFY2(std::fabs(ratio - 1.0) <= 0.02,
               qPrintable(QString("%1: modelled peak %2 B, the GPU's %3 B")
                              .arg(QString::fromStdString(name))
                              .arg(m.peak)
                              .arg(gpu("peak"))));
      ++compared;
    }
    QVERIFY(compared > 0);
  }
};

int main(int argc, char** argv) {
  TestFsdpOracle test;
  const int rc = QTest::qExec(&test, argc, argv);
  if (rc == 0 && read_lines(figures_path()).empty()) {
    std::printf(
        "SKIPPED: the FSDP oracle's GPU figures (%s) are absent; the modelled figures "
        "above are not yet measured on a GPU\n",
        figures_path().c_str());
    return kSkip;
  }
  return rc;
}

#include "test_fsdp_oracle.moc"
