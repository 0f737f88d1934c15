// The seed scenarios, built with the engine's C++ API: DenseNet's bottleneck (seed 000), the
// ResNet use_checkpoint loop (seed 003), HeavyModel as the blog wrote it and with sin (seed 004),
// dropout and BatchNorm inside a segment, and the selective policy. Each prints the figures
// the issue asks for (peak bytes, saved tensors, recomputed op executions).
#include "test_checkpoint_support.hpp"

using namespace ckpt;
using namespace ckpt::testing;

namespace {

const auto kAct = static_cast<std::size_t>(MemoryCategory::activation);

struct Bn {
  Tensor weight, bias, running_mean, running_var, tracked;
  explicit Bn(std::int64_t c, std::uint64_t seed) {
    weight = param({c}, seed, 0.1);
    bias = param({c}, seed + 1, 0.1);
    CategoryScope as_param(MemoryCategory::parameter);
    running_mean = Tensor::zeros({c});
    running_var = Tensor::ones({c});
    tracked = Tensor::zeros({}, DType::i64);
  }
  Tensor operator()(const Tensor& x) const {
    return batch_norm(x, weight, bias, running_mean, running_var, true, 0.1, 1e-5, tracked);
  }
  TensorList params() const { return {weight, bias}; }
};

struct Conv {
  Tensor weight;
  std::int64_t padding;
  Conv(std::int64_t in, std::int64_t out, std::int64_t k, std::uint64_t seed)
      : weight(param({out, in, k, k}, seed, 1.0 / std::sqrt(static_cast<double>(in * k * k)))),
        padding(k / 2) {}
  Tensor operator()(const Tensor& x) const {
    return conv2d(x, weight, Tensor(), {1, 1}, {padding, padding});
  }
};

// torchvision's _DenseLayer: the bottleneck (concat, norm1, relu1, conv1) is what
// memory_efficient=True checkpoints; norm2, relu2, conv2 run plainly.
struct DenseLayer {
  Bn norm1, norm2;
  Conv conv1, conv2;
  DenseLayer(std::int64_t in, std::int64_t growth, std::int64_t bn_size, std::uint64_t seed)
      : norm1(in, seed),
        norm2(bn_size * growth, seed + 2),
        conv1(in, bn_size * growth, 1, seed + 4),
        conv2(bn_size * growth, growth, 3, seed + 5) {}
  TensorList bottleneck(const TensorList& features) const {
    return {conv1(relu(norm1(cat(features, 1))))};
  }
  Tensor operator()(const TensorList& features, const CheckpointOptions* ck) const {
    auto fn = [this](const TensorList& f) { return bottleneck(f); };
    // torchvision: `if self.memory_efficient and self.any_requires_grad(prev_features)`.
    const bool use = ck && any_requires_grad(features);
    Tensor b = use ? checkpoint(fn, features, *ck)[0] : bottleneck(features)[0];
    return conv2(relu(norm2(b)));
  }
  TensorList params() const {
    return {norm1.weight, norm1.bias, norm2.weight, norm2.bias, conv1.weight, conv2.weight};
  }
};

struct DenseBlock {
  std::vector<std::unique_ptr<DenseLayer>> layers;
  DenseBlock(int n, std::int64_t in, std::int64_t growth, std::int64_t bn_size) {
    for (int i = 0; i < n; ++i)
      layers.push_back(std::make_unique<DenseLayer>(in + i * growth, growth, bn_size,
                                                    1000 + 10 * static_cast<std::uint64_t>(i)));
  }
  Tensor operator()(const Tensor& x, const CheckpointOptions* ck) const {
    TensorList features{x};
    for (std::size_t i = 0; i < layers.size(); ++i) {
      NodeScope node("denselayer" + std::to_string(i + 1));
      features.push_back((*layers[i])(features, ck));
    }
    return cat(features, 1);
  }
  TensorList params() const {
    TensorList p;
    for (const auto& l : layers)
      for (const auto& t : l->params()) p.push_back(t);
    return p;
  }
};

// Seed 003's ResNet: conv-bn-relu-conv-bn plus the identity, relu; a use_checkpoint per block.
struct BasicBlock {
  Conv conv1, conv2;
  Bn bn1, bn2;
  BasicBlock(std::int64_t c, std::uint64_t seed)
      : conv1(c, c, 3, seed), conv2(c, c, 3, seed + 1), bn1(c, seed + 2), bn2(c, seed + 4) {}
  TensorList operator()(const TensorList& in) const {
    return {relu(add(bn2(conv2(relu(bn1(conv1(in[0]))))), in[0]))};
  }
  TensorList params() const {
    return {conv1.weight, conv2.weight, bn1.weight, bn1.bias, bn2.weight, bn2.bias};
  }
};

struct Figures {
  std::int64_t peak = 0, activation_at_forward_end = 0, packs = 0, recomputed_ops = 0;
};

Figures figures(const Run& r) {
  return {r.trace.peak().bytes, r.trace.memory_at(r.trace.forward_end())[kAct], r.packs,
          r.trace.counts().recompute};
}

void report(const char* what, const Figures& f) {
  qInfo(
      "%s: peak %lld bytes, activations after forward %lld bytes, saved tensors packed %lld, "
      "recomputed op executions %lld",
      what, static_cast<long long>(f.peak), static_cast<long long>(f.activation_at_forward_end),
      static_cast<long long>(f.packs), static_cast<long long>(f.recomputed_ops));
}

bool contains(const std::vector<std::pair<Severity, std::string>>& ms, Severity s,
              const std::string& part) {
  for (const auto& [sev, text] : ms)
    if (sev == s && text.find(part) != std::string::npos) return true;
  return false;
}

}  // namespace

class TestCheckpointScenarios : public QObject {
  Q_OBJECT
 private slots:
  void denseNetBottleneck_data() {
    QTest::addColumn<bool>("reentrant");
    QTest::newRow("reentrant") << true;
    QTest::newRow("non-reentrant") << false;
  }
  void denseNetBottleneck() {
    QFETCH(bool, reentrant);
    DenseBlock plain(4, 16, 8, 4), ck(4, 16, 8, 4);
    // The block's input comes from the stem in a real DenseNet: it requires grad.
    Tensor x0 = randn({4, 16, 16, 16}, 1).set_requires_grad(true);
    Tensor x1 = randn({4, 16, 16, 16}, 1).set_requires_grad(true);
    CheckpointOptions o;
    o.use_reentrant = reentrant;
    o.name = "bottleneck";
    Run p = run_recorded([&] { return sum(plain(x0, nullptr)); }, true, true);
    Run c = run_recorded([&] { return sum(ck(x1, &o)); }, true, true);
    compare_tensors(x1.grad(), x0.grad(), 2e-4, "DenseNet input gradient");
    const auto pp = plain.params(), cp = ck.params();
    for (std::size_t i = 0; i < pp.size(); ++i)
      compare_tensors(cp[i].grad(), pp[i].grad(), 2e-4, "DenseNet parameter gradient");
    const Figures fp = figures(p), fc = figures(c);
    report("DenseNet block (4 layers, 16 -> 48 channels, 4x16x16x16), plain", fp);
    report(reentrant ? "  bottleneck checkpointed, reentrant"
                     : "  bottleneck checkpointed, non-reentrant",
           fc);
    // Each bottleneck (cat, batch_norm, relu, conv1x1) is recomputed once: 16 ops.
    QCOMPARE(fc.recomputed_ops, 16);
    QCOMPARE(static_cast<int>(c.trace.recomputes().size()), 4);
    QVERIFY(fc.activation_at_forward_end < fp.activation_at_forward_end);
    QVERIFY(fc.peak < fp.peak);
    // BatchNorm ran twice in every bottleneck: running statistics updated twice, noted.
    for (const auto& l : ck.layers) QCOMPARE(l->norm1.tracked.item(), 2.0);
    for (const auto& l : ck.layers) QCOMPARE(l->norm2.tracked.item(), 1.0);
    QVERIFY(contains(c.messages, Severity::warning, "batch_norm ran again in the recompute"));
  }

  void resnetUseCheckpointPerBlock_data() {
    QTest::addColumn<bool>("reentrant");
    QTest::newRow("reentrant") << true;
    QTest::newRow("non-reentrant") << false;
  }
  void resnetUseCheckpointPerBlock() {
    QFETCH(bool, reentrant);
    auto make = [] {
      std::vector<std::unique_ptr<BasicBlock>> blocks;
      for (int i = 0; i < 4; ++i)
        blocks.push_back(
            std::make_unique<BasicBlock>(8, 2000 + 10 * static_cast<std::uint64_t>(i)));
      return blocks;
    };
    auto plain = make(), ck = make();
    Conv stem0(3, 8, 3, 1), stem1(3, 8, 3, 1);
    Tensor x = randn({2, 3, 16, 16}, 3);
    auto forward = [&](const auto& blocks, const Conv& stem, bool use_checkpoint) {
      Tensor h = relu(stem(x));
      CheckpointOptions o;
      o.use_reentrant = reentrant;
      for (std::size_t i = 0; i < blocks.size(); ++i) {
        o.name = "layer" + std::to_string(i / 2 + 1) + "." + std::to_string(i % 2);
        const BasicBlock& b = *blocks[i];
        auto fn = [&b](const TensorList& in) { return b(in); };
        h = use_checkpoint ? checkpoint(fn, {h}, o)[0] : b({h})[0];
      }
      return sum(h);
    };
    Run p = run_recorded([&] { return forward(plain, stem0, false); });
    Run c = run_recorded([&] { return forward(ck, stem1, true); });
    compare_tensors(stem1.weight.grad(), stem0.weight.grad(), 2e-4, "stem gradient");
    for (std::size_t i = 0; i < plain.size(); ++i) {
      const auto pp = plain[i]->params(), cp = ck[i]->params();
      for (std::size_t j = 0; j < pp.size(); ++j)
        compare_tensors(cp[j].grad(), pp[j].grad(), 2e-4, "block gradient");
    }
    std::vector<std::string> segments;
    for (const auto& s : c.trace.recomputes()) segments.push_back(s.segment);
    // Backward meets the blocks last to first; each is recomputed once.
    QCOMPARE(segments, (std::vector<std::string>{"layer2.1", "layer2.0", "layer1.1", "layer1.0"}));
    QVERIFY(figures(c).activation_at_forward_end < figures(p).activation_at_forward_end);
    report("ResNet loop (stem + 4 basic blocks, 2x3x16x16), plain", figures(p));
    report("  use_checkpoint on every block", figures(c));
  }

  // Seed 004, exactly as the blog wrote it, and with ops that save (sin).
  void heavyModel_data() {
    QTest::addColumn<bool>("with_sin");
    QTest::addColumn<QString>("mode");
    QTest::addColumn<bool>("preserve");
    QTest::addColumn<qint64>("packs");
    QTest::addColumn<qint64>("recomputed_segments");
    QTest::newRow("x + a, plain") << false << "plain" << true << qint64{0} << qint64{0};
    QTest::newRow("x + a, reentrant")
        << false << "reentrant" << true << qint64{2000} << qint64{1000};
    QTest::newRow("x + a, non-reentrant")
        << false << "non_reentrant" << true << qint64{0} << qint64{0};
    QTest::newRow("sin(x) + a, plain") << true << "plain" << true << qint64{100000} << qint64{0};
    QTest::newRow("sin(x) + a, reentrant")
        << true << "reentrant" << true << qint64{2000} << qint64{1000};
    QTest::newRow("sin(x) + a, non-reentrant")
        << true << "non_reentrant" << true << qint64{0} << qint64{1000};
    // Without the RNG stash (nothing random in heavy_function), checkpointing pays off.
    QTest::newRow("sin(x) + a, reentrant, preserve_rng_state=False")
        << true << "reentrant" << false << qint64{2000} << qint64{1000};
  }
  void heavyModel() {
    QFETCH(bool, with_sin);
    QFETCH(QString, mode);
    QFETCH(bool, preserve);
    QFETCH(qint64, packs);
    QFETCH(qint64, recomputed_segments);
    Tensor a = param({}, 1);
    a.data<float>()[0] = 1.0f;  // nn.Parameter(torch.tensor(1.0))
    Tensor x = Tensor::scalar(0.0).set_requires_grad(true);
    int calls = 0;
    SegmentFunction heavy_function = [&](const TensorList& in) {
      ++calls;
      Tensor t = in[0];
      for (int i = 0; i < 100; ++i) t = add(with_sin ? sin(t) : t, in[1]);
      return TensorList{t};
    };
    CheckpointOptions o;
    o.use_reentrant = mode == "reentrant";
    o.preserve_rng_state = preserve;
    o.name = "heavy_function";
    Run r = run_recorded(
        [&] {
          Tensor y = x;
          for (int i = 0; i < 1000; ++i)
            y = mode == "plain" ? heavy_function({y, a})[0]
                                : checkpoint(heavy_function, {y, a}, o)[0];
          return y;
        },
        true, true);
    const int ops_per_call = with_sin ? 200 : 100;
    QCOMPARE(r.packs, packs);
    QCOMPARE(static_cast<qint64>(r.trace.recomputes().size()), recomputed_segments);
    QCOMPARE(r.trace.counts().forward, 1000 * ops_per_call);
    QCOMPARE(r.trace.counts().recompute, recomputed_segments * ops_per_call);
    QCOMPARE(calls, 1000 + static_cast<int>(recomputed_segments));
    if (!with_sin) QCOMPARE(a.grad().item(), 100000.0);  // d/da of x + 100,000 a
    const auto fwd = r.trace.memory_at(r.trace.forward_end());
    const auto cat = [&](MemoryCategory m) { return fwd[static_cast<std::size_t>(m)]; };
    // Reentrant keeps each segment's input (4 bytes) and its RNG state (5,056 bytes).
    if (mode == "reentrant") {
      QCOMPARE(cat(MemoryCategory::checkpoint_input), 4 * 1000 - 4);  // not the model input x
      QCOMPARE(cat(MemoryCategory::rng_state), preserve ? 5056 * 1000 : 0);
    }
    // The blog's trade-off, real only when the ops save and nothing else dominates: about
    // 1,000 checkpoint inputs plus one segment's 100 saved tensors at a time.
    if (with_sin && mode == "reentrant" && !preserve) QVERIFY(r.trace.peak().bytes < 8000);
    if (mode == "non_reentrant")
      QCOMPARE(cat(MemoryCategory::rng_state), with_sin ? 5056 * 1000 : 0);
    if (mode == "plain") QCOMPARE(cat(MemoryCategory::activation), with_sin ? 4 * 100000 - 4 : 0);
    const auto footprint = r.trace.memory_footprint();
    qInfo(
        "HeavyModel %s, %s%s: peak %lld bytes, after forward %lld bytes (activation %lld, "
        "checkpoint input %lld, rng state %lld), saved tensors packed %lld, recomputed op "
        "executions %lld; trace: %lld steps, %lld events, %lld tensors, %lld bytes in memory",
        with_sin ? "sin(x) + a" : "x + a", qPrintable(mode),
        preserve ? "" : ", preserve_rng_state=False", static_cast<long long>(r.trace.peak().bytes),
        static_cast<long long>(r.forward_end_bytes),
        static_cast<long long>(cat(MemoryCategory::activation)),
        static_cast<long long>(cat(MemoryCategory::checkpoint_input)),
        static_cast<long long>(cat(MemoryCategory::rng_state)), static_cast<long long>(r.packs),
        static_cast<long long>(r.trace.counts().recompute),
        static_cast<long long>(r.trace.step_count()), static_cast<long long>(r.trace.event_count()),
        static_cast<long long>(r.trace.tensors().size()), static_cast<long long>(footprint));
    // Compact: well under 100 bytes per step for these traces.
    QVERIFY(footprint < 100 * r.trace.step_count());
    // Scrubbing is cheap: every step's memory by category, in one pass of queries.
    std::int64_t total = 0;
    for (std::int64_t k = 0; k < r.trace.step_count(); k += 997)
      total += r.trace.memory_at(k)[kAct];
    QVERIFY(total >= 0);
  }

  void dropoutNeedsThePreservedRngState() {
    Tensor w1 = param({32, 16}, 1, 0.25), w2 = param({16, 32}, 2, 0.2);
    auto block = [&](const TensorList& in) {
      return TensorList{linear(dropout(gelu(linear(in[0], w1)), 0.3, true), w2)};
    };
    auto run = [&](bool checkpointed, bool preserve) {
      Generator g(7);
      GeneratorScope use(g);
      Tensor x = randn({4, 16}, 5).set_requires_grad(true);
      CheckpointOptions o;
      o.name = "mlp";
      o.preserve_rng_state = preserve;
      Run r = run_recorded(
          [&] { return sum(checkpointed ? checkpoint(block, {x}, o)[0] : block({x})[0]); });
      return x.grad();
    };
    const Tensor plain = run(false, true);
    compare_tensors(run(true, true), plain, 1e-6, "grad with preserve_rng_state");
    std::string error;
    try {
      run(true, false);
    } catch (const std::runtime_error& e) {
      error = e.what();
    }
    QVERIFY2(error.find("checkpoint 'mlp': the recomputed forward differs from the original at "
                        "op #2 'dropout'") == 0,
             error.c_str());
  }

  void batchNormRunningStatsUpdatedTwice_data() {
    QTest::addColumn<bool>("reentrant");
    QTest::newRow("reentrant") << true;
    QTest::newRow("non-reentrant") << false;
  }
  void batchNormRunningStatsUpdatedTwice() {
    QFETCH(bool, reentrant);
    Bn bn(4, 1), twice(4, 1);
    Conv conv(3, 4, 3, 3);
    Tensor x = randn({2, 3, 6, 6}, 4).set_requires_grad(true);
    CheckpointOptions o;
    o.use_reentrant = reentrant;
    o.name = "conv_bn";
    auto block = [&](const TensorList& in) { return TensorList{relu(bn(conv(in[0])))}; };
    Run r = run_recorded([&] { return sum(checkpoint(block, {x}, o)[0]); });
    QCOMPARE(bn.tracked.item(), 2.0);
    {
      NoGradGuard ng;
      twice(conv(x));
      twice(conv(x));
    }
    compare_tensors(bn.running_mean, twice.running_mean, 1e-6, "running_mean");
    compare_tensors(bn.running_var, twice.running_var, 1e-6, "running_var");
    QVERIFY(contains(r.messages, Severity::warning,
                     "checkpoint 'conv_bn': batch_norm ran again in the recompute"));
    bool in_trace = false;
    for (const auto& m : r.trace.messages())
      in_trace |= m.severity == Severity::warning && m.step >= 0 &&
                  r.trace.step(m.step).phase == Phase::recompute;
    QVERIFY(in_trace);
  }

  void evalModeBatchNormIsNotNoted() {
    Bn bn(4, 1);
    Conv conv(3, 4, 3, 3);
    Tensor x = randn({2, 3, 6, 6}, 4).set_requires_grad(true);
    auto block = [&](const TensorList& in) {
      return TensorList{
          batch_norm(conv(in[0]), bn.weight, bn.bias, bn.running_mean, bn.running_var, false)};
    };
    Run r = run_recorded([&] { return sum(checkpoint(block, {x})[0]); });
    QVERIFY(!contains(r.messages, Severity::warning, "batch_norm"));
  }

  void selectivePolicySavesMatmulOutputs_data() {
    QTest::addColumn<bool>("reentrant");
    QTest::newRow("reentrant") << true;
    QTest::newRow("non-reentrant") << false;
  }
  void selectivePolicySavesMatmulOutputs() {
    QFETCH(bool, reentrant);
    Tensor w1 = param({64, 32}, 1, 0.2), w2 = param({32, 64}, 2, 0.15);
    auto block = [&](const TensorList& in) {
      return TensorList{tanh(linear(gelu(linear(in[0], w1)), w2))};
    };
    auto run = [&](int mode, Tensor& gw1) {  // 0 plain, 1 checkpoint, 2 save-matmul
      w1.set_grad(Tensor());
      Tensor x = randn({8, 32}, 3).set_requires_grad(true);
      CheckpointOptions o;
      o.use_reentrant = reentrant;
      o.name = "mlp";
      if (mode == 2) o.save_ops = ops_of_kinds({"mm", "conv"});
      Run r = run_recorded([&] {
        Tensor h = sin(x);
        return sum(mode == 0 ? block({h})[0] : checkpoint(block, {h}, o)[0]);
      });
      gw1 = w1.grad();
      return r;
    };
    Tensor g0, g1, g2;
    Run plain = run(0, g0), full = run(1, g1), selective = run(2, g2);
    compare_tensors(g2, g0, 1e-5, "grad with save-matmul");
    compare_tensors(g1, g0, 1e-5, "grad with full checkpointing");
    // Both linears' outputs were kept: 2 x [8, 64] and [8, 32] floats more than full
    // checkpointing, still less than the plain run (which also keeps gelu's input and tanh's
    // result... and everything else).
    const auto act = [](const Run& r) { return r.trace.memory_at(r.trace.forward_end())[kAct]; };
    QCOMPARE(act(selective) - act(full), (8 * 64 + 8 * 32) * 4);
    QVERIFY(act(selective) < act(plain));
    QVERIFY(contains(selective.messages, Severity::info, "2 op outputs reused"));
    qInfo(
        "save-matmul (%s): activations after forward: plain %lld, full checkpoint %lld, "
        "selective %lld bytes",
        reentrant ? "reentrant" : "non-reentrant", static_cast<long long>(act(plain)),
        static_cast<long long>(act(full)), static_cast<long long>(act(selective)));
  }
};

QTEST_GUILESS_MAIN(TestCheckpointScenarios)
#include "test_checkpoint_scenarios.moc"
