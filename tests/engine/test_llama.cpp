// The Llama family in the native format (issue 39): llama_mini.json's structure, Llama 3 8B's
// parameter count, and the 8B sample's activations as the same layers at a small size, scaled.
// Values against eager PyTorch are test_oracle_models' (cases_sample_models.py).
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/model/loader.hpp"
#include "engine/run/runner.hpp"
#include "tests/engine/support/sample_configs.hpp"

using namespace ckpt;
using nlohmann::json;

namespace {

std::string sample(const std::string& name) {
  return qEnvironmentVariable("CKPTLAB_SOURCE_DIR").toStdString() + "/samples/" + name;
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

std::int64_t parameter_count(const Model& m) {
  std::int64_t n = 0;
  for (const auto& p : m.parameters)
    if (!p.is_buffer) n += p.initial.numel();
  return n;
}

// The CUDA dry run's activations saved for backward when the forward ends.
std::int64_t saved_at_forward_end(const std::shared_ptr<Model>& model) {
  Runner runner(model);
  RunRequest c = test::plain(*model);
  c.settings.device = Device::cuda;
  c.settings.dry_run = true;
  const RunResult r = runner.run(c);
  if (!r.ok) throw std::runtime_error(r.error);
  return r.trace.memory_at(
      r.trace.forward_end())[static_cast<std::size_t>(MemoryCategory::activation)];
}

}  // namespace

class TestLlama : public QObject {
  Q_OBJECT

 private slots:
  void miniHasLlamasModulesBuffersAndTiedHead() {
    const auto m = load_model(sample("llama_mini.json"));
    for (const char* path : {"embed_tokens", "layers.0.input_layernorm", "layers.0.self_attn",
                             "layers.0.self_attn.q_proj", "layers.0.post_attention_layernorm",
                             "layers.3.mlp", "layers.3.mlp.gate_proj", "layers.3.mlp.up_proj",
                             "layers.3.mlp.down_proj", "norm", "lm_head"})
      QVERIFY2(m->find_module(path), path);
    QVERIFY(m->find_module("layers.2")->checkpointable);
    bool cos = false, sin = false;
    for (const auto& p : m->parameters) {
      if (p.name == "rotary_cos" || p.name == "rotary_sin") {
        QVERIFY(p.is_buffer && !p.requires_grad);
        QCOMPARE(p.initial.shape(), (Shape{64, 16}));
        (p.name == "rotary_cos" ? cos : sin) = true;
      }
      // Grouped-query: 2 key/value heads of 16 for 4 query heads.
      if (p.name == "layers.1.self_attn.k_proj.weight")
        QCOMPARE(p.initial.shape(), (Shape{32, 64}));
      QVERIFY2(p.name.rfind("lm_head", 0) != 0, "the tied head has no weight of its own");
    }
    QVERIFY(cos && sin);
    // Tied: one 512 × 64 table; 4 blocks of 2 norms, 4 projections (64·64, 32·64 twice,
    // 64·64) and a SwiGLU of 3 × 64 · 176; the final norm.
    const std::int64_t block = 2 * 64 + 2 * 64 * 64 + 2 * 32 * 64 + 3 * 64 * 176;
    QCOMPARE(parameter_count(*m), 512 * 64 + 4 * block + 64);
    Runner runner(m);
    const RunResult r = runner.run(test::plain(*m));
    QVERIFY2(r.ok, r.error.c_str());
    QVERIFY(r.gradients.count("embed_tokens.weight"));
    QVERIFY(!r.gradients.count("rotary_cos"));
  }

  // Bad layer settings name the layer and the problem.
  void badSettingsAreNamed() {
    json doc = read_json(sample("llama_mini.json"));
    doc["model"]["layers"][1]["layers"][0]["body"]["layers"][1]["kv_heads"] = 3;
    QTemporaryDir dir;
    const std::string path = dir.filePath("bad.json").toStdString();
    std::ofstream(path) << doc.dump();
    try {
      load_model(path);
      QFAIL("kv_heads 3 of 4 heads loaded");
    } catch (const std::exception& e) {
      const std::string what = e.what();
      QVERIFY2(what.find("bad.json") != std::string::npos, e.what());
      QVERIFY2(what.find("self_attn") != std::string::npos, e.what());
      QVERIFY2(what.find("multiple of \"kv_heads\" (3)") != std::string::npos, e.what());
    }
  }

  // Llama 3 8B: 8,030,261,248 parameters (Meta's model card), loaded as shapes only.
  void eightBillionLoadsAsShapes() {
    const auto m = load_model(sample("llama3_8b.json"));
    QVERIFY(m->scenario.dry_run_only);
    QCOMPARE(parameter_count(*m), std::int64_t{8030261248});
    for (const auto& p : m->parameters)
      if (!p.is_buffer) QVERIFY2(p.initial.is_meta(), p.name.c_str());
  }

  // The 8B sample's activations are its layers' at a small size, scaled: on the CUDA device
  // (PyTorch 2.x's fused attention keeps O(tokens) per block) a block keeps 64 times at 8,192
  // tokens what it keeps at 128 (the smallest length whose every saved tensor is a multiple of
  // the allocator's 512 bytes: RMSNorm's 1 / rms is 4 bytes a token), and 32 blocks keep the
  // one-block model's activations plus 31 more blocks.
  void eightBillionIsItsLayersScaled() {
    const json base = read_json(sample("llama3_8b.json"));
    QTemporaryDir dir;
    int files = 0;
    auto variant = [&](std::int64_t seq, std::int64_t blocks) {
      json doc = base;
      doc["inputs"][0]["shape"][1] = seq;
      doc["loss"]["per_example"] = seq;
      json& repeat = doc["model"]["layers"][1]["layers"][0];
      repeat["count"] = blocks;
      repeat["body"]["layers"][1]["seq"] = seq;
      const std::string path = dir.filePath(QString("v%1.json").arg(files++)).toStdString();
      std::ofstream(path) << doc.dump();
      return saved_at_forward_end(load_model(path));
    };
    const std::int64_t block_128 = variant(128, 2) - variant(128, 1);
    const std::int64_t one_8192 = variant(8192, 1);
    const std::int64_t block_8192 = variant(8192, 2) - one_8192;
    QVERIFY(block_128 > 0);
    QCOMPARE(block_8192, 64 * block_128);
    const std::int64_t full = saved_at_forward_end(load_model(sample("llama3_8b.json")));
    QCOMPARE(full, one_8192 + 31 * block_8192);
    qInfo("llama3_8b: %lld bytes saved per block at 8,192 tokens (float32), %lld in all",
          static_cast<long long>(block_8192), static_cast<long long>(full));
  }
};

QTEST_GUILESS_MAIN(TestLlama)
#include "test_llama.moc"
