// checkpoint() in both variants: gradients, PyTorch 1.13's warnings and errors, laziness,
// nesting, early stop, RNG stash and the recompute check.
#include "test_checkpoint_support.hpp"

#include <cmath>

#include "engine/checkpoint/segment.hpp"

using namespace ckpt;
using namespace ckpt::testing;

namespace {

const char* kNoInputWarning = "None of the inputs have requires_grad=True. Gradients will be None";
const char* kElement0 = "element 0 of tensors does not require grad and does not have a grad_fn";
const char* kGradError =
    "Checkpointing is not compatible with .grad() or when an `inputs` parameter is passed to "
    ".backward(). Please use .backward() and do not pass its `inputs` argument.";
const char* kNotNecessary =
    "none of output has requires_grad=True, this checkpoint() is not necessary";

struct Mlp {
  Tensor w1 = param({16, 8}, 11), b1 = param({16}, 12), w2 = param({8, 16}, 13),
         b2 = param({8}, 14), head = param({1, 8}, 15);
  // The checkpointed block: four ops, of which linear, relu and tanh save something.
  TensorList block(const TensorList& in) const {
    return {tanh(linear(relu(linear(in[0], w1, b1)), w2, b2))};
  }
  SegmentFunction fn() const {
    return [this](const TensorList& in) { return block(in); };
  }
  TensorList params() const { return {w1, b1, w2, b2, head}; }
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

CheckpointOptions variant(bool reentrant) {
  CheckpointOptions o;
  o.use_reentrant = reentrant;
  o.name = "block";
  return o;
}

// A "random op" built only on the current generator, like dropout: x * noise.
Tensor noisy(const Tensor& x) {
  Generator& g = Generator::current();
  std::vector<float> v(static_cast<std::size_t>(x.numel()));
  for (auto& e : v) e = static_cast<float>(g.uniform());
  return mul(x, Tensor::from_vector(v, x.shape()));
}

}  // namespace

class TestCheckpoint : public QObject {
  Q_OBJECT
 private slots:
  void gradientsEqualThePlainRun_data() {
    QTest::addColumn<bool>("reentrant");
    QTest::newRow("reentrant") << true;
    QTest::newRow("non-reentrant") << false;
  }
  void gradientsEqualThePlainRun() {
    QFETCH(bool, reentrant);
    Mlp plain, ck;
    Tensor x0 = randn({4, 8}, 1).set_requires_grad(true);
    Tensor x1 = randn({4, 8}, 1).set_requires_grad(true);
    // The block's input is an intermediate (sin(x)), so that keeping it shows as checkpoint input.
    Run p = run_recorded([&] { return sum(sin(plain.block({sin(x0)})[0])); });
    Run c = run_recorded(
        [&] { return sum(sin(checkpoint(ck.fn(), {sin(x1)}, variant(reentrant))[0])); });
    compare_tensors(x1.grad(), x0.grad(), 1e-6, "grad of x");
    for (std::size_t i = 0; i < 4; ++i)
      compare_tensors(ck.params()[i].grad(), plain.params()[i].grad(), 1e-6, "grad of a param");
    // The whole block (linear, relu, linear, tanh) is recomputed once, in backward.
    QCOMPARE(c.trace.counts().recompute, 4);
    QCOMPARE(c.trace.recomputes().size(), std::size_t{1});
    QVERIFY(c.trace.recomputes()[0].begin_step > c.trace.forward_end());
    QCOMPARE(c.trace.checkpoints().size(), std::size_t{1});
    QCOMPARE(c.trace.step(c.trace.checkpoints()[0].begin_step).segment, std::string("block"));
    QCOMPARE(p.trace.counts().recompute, 0);
    QCOMPARE(c.trace.counts().forward, p.trace.counts().forward);
    // What is alive after the forward: the block's intermediates are not.
    const auto act = static_cast<std::size_t>(MemoryCategory::activation);
    QVERIFY(c.trace.memory_at(c.trace.forward_end())[act] <
            p.trace.memory_at(p.trace.forward_end())[act]);
    const auto fwd_end = c.trace.memory_at(c.trace.forward_end());
    QCOMPARE(fwd_end[static_cast<std::size_t>(MemoryCategory::checkpoint_input)], 4 * 8 * 4);
    QCOMPARE(fwd_end[static_cast<std::size_t>(MemoryCategory::rng_state)], 5056);
    QVERIFY(c.messages.empty());
  }

  // Seed 002, first case: no input requires grad and nothing after the segment does.
  void reentrantWithoutInputGradWarnsThenFailsAtBackward() {
    Mlp m;
    auto ledger = std::make_shared<MemoryLedger>();
    ExecutionScope scope(ledger);
    Tensor x = randn({4, 8}, 2);
    Tensor out = checkpoint(m.fn(), {x}, variant(true))[0];
    QVERIFY(has_message(scope.context().messages(), Severity::warning, kNoInputWarning));
    QVERIFY(!out.requires_grad());
    QCOMPARE(error_of([&] { sum(out).backward(); }), std::string(kElement0));
  }

  // Seed 002, second case: a trainable head follows; no error, and no gradient inside.
  void reentrantWithoutInputGradSilentlyLosesGradients() {
    Mlp m;
    auto ledger = std::make_shared<MemoryLedger>();
    ExecutionScope scope(ledger);
    Tensor out = checkpoint(m.fn(), {randn({4, 8}, 2)}, variant(true))[0];
    sum(linear(out, m.head)).backward();
    QVERIFY(has_message(scope.context().messages(), Severity::warning, kNoInputWarning));
    QVERIFY(m.head.grad().defined());
    for (std::size_t i = 0; i < 4; ++i) QVERIFY(!m.params()[i].grad().defined());
  }

  void nonReentrantGivesParametersTheirGradients() {
    Mlp plain, ck;
    auto ledger = std::make_shared<MemoryLedger>();
    ExecutionScope scope(ledger);
    Tensor x = randn({4, 8}, 2);
    sum(linear(plain.block({x})[0], plain.head)).backward();
    sum(linear(checkpoint(ck.fn(), {x}, variant(false))[0], ck.head)).backward();
    QVERIFY(scope.context().messages().empty());
    for (std::size_t i = 0; i < 5; ++i)
      compare_tensors(ck.params()[i].grad(), plain.params()[i].grad(), 1e-6, "grad");
  }

  void gradThroughBothVariants() {
    Mlp m;
    auto ledger = std::make_shared<MemoryLedger>();
    ExecutionScope scope(ledger);
    Tensor x = randn({4, 8}, 3).set_requires_grad(true);
    const Tensor expected = grad({sum(m.block({x})[0])}, {x})[0];
    Tensor r = sum(checkpoint(m.fn(), {x}, variant(true))[0]);
    QCOMPARE(error_of([&] { grad({r}, {x}); }), std::string(kGradError));
    Tensor n = sum(checkpoint(m.fn(), {x}, variant(false))[0]);
    compare_tensors(grad({n}, {x})[0], expected, 1e-6, "grad() through non-reentrant");
    QVERIFY(!m.w1.grad().defined());  // grad() leaves .grad alone
  }

  void detachedOutputOfAReentrantSegment() {
    Mlp m;
    auto ledger = std::make_shared<MemoryLedger>();
    ExecutionScope scope(ledger);
    Tensor x = randn({4, 8}, 3).set_requires_grad(true);
    auto detached = [&](const TensorList& in) { return TensorList{m.block(in)[0].detach()}; };
    Tensor out = checkpoint(detached, {x}, variant(true))[0];
    QVERIFY(out.requires_grad());  // the checkpoint's own node makes it so
    QCOMPARE(error_of([&] { sum(out).backward(); }), std::string(kNotNecessary));
  }

  // HeavyModel in small: x = x + a saves nothing, so 1.13's lazy variant never recomputes it;
  // sin(x) + a saves x, so each segment is recomputed once, in backward.
  void nonReentrantRecomputesOnlyWhatWasSaved_data() {
    QTest::addColumn<bool>("with_sin");
    QTest::addColumn<int>("recomputes");
    QTest::newRow("x + a") << false << 0;
    QTest::newRow("sin(x) + a") << true << 5;
  }
  void nonReentrantRecomputesOnlyWhatWasSaved() {
    QFETCH(bool, with_sin);
    QFETCH(int, recomputes);
    Tensor a = param({}, 5);
    Tensor x = randn({}, 6).set_requires_grad(true);
    auto heavy = [&](const TensorList& in) {
      Tensor y = in[0];
      for (int i = 0; i < 10; ++i) y = add(with_sin ? sin(y) : y, in[1]);
      return TensorList{y};
    };
    CheckpointOptions o = variant(false);
    Run r = run_recorded([&] {
      Tensor y = x;
      for (int i = 0; i < 5; ++i) y = checkpoint(heavy, {y, a}, o)[0];
      return y;
    });
    QCOMPARE(static_cast<int>(r.trace.recomputes().size()), recomputes);
    QCOMPARE(r.trace.counts().recompute, recomputes * (with_sin ? 20 : 10));
    for (const auto& span : r.trace.recomputes()) QVERIFY(span.begin_step > r.trace.forward_end());
    QVERIFY(a.grad().defined());
    QVERIFY(x.grad().defined());
    // The segment state (and its RNG stash) dies with the forward when nothing was saved.
    const auto fwd_end = r.trace.memory_at(r.trace.forward_end());
    QCOMPARE(fwd_end[static_cast<std::size_t>(MemoryCategory::rng_state)], with_sin ? 5 * 5056 : 0);
  }

  void nestedNonReentrant() {
    Mlp plain, ck;
    Tensor x0 = randn({4, 8}, 7).set_requires_grad(true);
    Tensor x1 = randn({4, 8}, 7).set_requires_grad(true);
    Run p = run_recorded([&] { return sum(sin(plain.block({x0})[0])); });
    CheckpointOptions inner = variant(false);
    inner.name = "inner";
    CheckpointOptions outer = variant(false);
    outer.name = "outer";
    Run c = run_recorded([&] {
      auto outer_fn = [&](const TensorList& in) {
        Tensor h = relu(linear(in[0], ck.w1, ck.b1));
        auto inner_fn = [&](const TensorList& i2) {
          return TensorList{tanh(linear(i2[0], ck.w2, ck.b2))};
        };
        return checkpoint(inner_fn, {h}, inner);
      };
      return sum(sin(checkpoint(outer_fn, {x1}, outer)[0]));
    });
    compare_tensors(x1.grad(), x0.grad(), 1e-6, "grad of x");
    for (std::size_t i = 0; i < 4; ++i)
      compare_tensors(ck.params()[i].grad(), plain.params()[i].grad(), 1e-6, "grad of a param");
    std::vector<std::string> order;
    for (const auto& s : c.trace.recomputes()) order.push_back(s.segment);
    // Backward reaches the inner segment's placeholders first (it ends the outer segment), then
    // the outer's own (relu's result); each is recomputed once, lazily.
    QCOMPARE(order, (std::vector<std::string>{"inner", "outer"}));
    QCOMPARE(c.trace.checkpoints().size(), std::size_t{2});
  }

  void earlyStopRecomputesOnlyWhatIsNeeded_data() {
    QTest::addColumn<bool>("early_stop");
    QTest::addColumn<int>("recomputed_ops");
    QTest::newRow("full") << false << 6;
    QTest::newRow("early stop") << true << 1;
  }
  void earlyStopRecomputesOnlyWhatIsNeeded() {
    QFETCH(bool, early_stop);
    QFETCH(int, recomputed_ops);
    Tensor x = randn({8}, 8).set_requires_grad(true);
    CheckpointOptions o = variant(false);
    o.early_stop = early_stop;
    // Only the first op saves anything (sin saves its input); five adds follow.
    auto fn = [](const TensorList& in) {
      Tensor y = sin(in[0]);
      for (int i = 0; i < 5; ++i) y = add(y, 1.0);
      return TensorList{y};
    };
    Run r = run_recorded([&] { return sum(mul(checkpoint(fn, {x}, o)[0], 3.0)); });
    QCOMPARE(r.trace.counts().recompute, recomputed_ops);
    const auto xs = x.to_vector();
    const auto g = x.grad().to_vector();
    for (std::size_t i = 0; i < g.size(); ++i)
      QVERIFY(std::abs(g[i] - 3.0 * std::cos(xs[i])) < 1e-5);
  }

  // PyTorch 2.x stops once the recompute has packed as many tensors as the forward did, a
  // holder whose node is gone included: exp's saved result, whose output the function drops,
  // is recomputed (and not kept) before the stop; sin alone would have done.
  void earlyStopCountsEveryHolder() {
    Tensor x = randn({8}, 8).set_requires_grad(true);
    CheckpointOptions o = variant(false);
    o.early_stop = true;
    auto fn = [](const TensorList& in) {
      Tensor y = sin(in[0]);
      [[maybe_unused]] Tensor unused =
          exp(y);  // saves its result; its node dies with it after the forward
      for (int i = 0; i < 3; ++i) y = add(y, 1.0);
      return TensorList{y};
    };
    Run r = run_recorded([&] { return sum(mul(checkpoint(fn, {x}, o)[0], 3.0)); });
    QCOMPARE(r.trace.counts().recompute, 2);
    const auto xs = x.to_vector();
    const auto g = x.grad().to_vector();
    for (std::size_t i = 0; i < g.size(); ++i)
      QVERIFY(std::abs(g[i] - 3.0 * std::cos(xs[i])) < 1e-5);
  }

  void rngStateIsLedgerMemoryUntilBackward_data() {
    QTest::addColumn<bool>("reentrant");
    QTest::addColumn<bool>("preserve");
    QTest::newRow("reentrant, preserved") << true << true;
    QTest::newRow("reentrant, not preserved") << true << false;
    QTest::newRow("non-reentrant, preserved") << false << true;
    QTest::newRow("non-reentrant, not preserved") << false << false;
  }
  void rngStateIsLedgerMemoryUntilBackward() {
    QFETCH(bool, reentrant);
    QFETCH(bool, preserve);
    Mlp m;
    Tensor x = randn({4, 8}, 9).set_requires_grad(true);
    CheckpointOptions o = variant(reentrant);
    o.preserve_rng_state = preserve;
    Run r = run_recorded([&] {
      Tensor y = x;
      for (int i = 0; i < 3; ++i) y = checkpoint(m.fn(), {y}, o)[0];
      return sum(y);
    });
    const auto rng = static_cast<std::size_t>(MemoryCategory::rng_state);
    QCOMPARE(Generator::state_bytes(), std::size_t{5056});
    QCOMPARE(r.trace.memory_at(r.trace.forward_end())[rng], preserve ? 3 * 5056 : 0);
    QCOMPARE(r.trace.memory_at(r.trace.step_count() - 1)[rng], 0);
    QCOMPARE(r.trace.peak().by_category[rng] > 0, preserve);
    // Each segment's stash goes when its backward is done, in both variants: a non-reentrant
    // segment lives as long as the saved variables its hooks packed, and a released saved
    // variable drops its hooks (PyTorch's SavedVariable::reset_data). When the first segment
    // recomputes, last in the backward, only its own stash is left.
    QCOMPARE(r.trace.recomputes().size(), std::size_t{3});
    QCOMPARE(r.trace.memory_at(r.trace.recomputes().back().begin_step)[rng], preserve ? 5056 : 0);
  }

  void randomOpsNeedThePreservedRngState_data() {
    QTest::addColumn<bool>("reentrant");
    QTest::newRow("reentrant") << true;
    QTest::newRow("non-reentrant") << false;
  }
  void randomOpsNeedThePreservedRngState() {
    QFETCH(bool, reentrant);
    auto block = [](const TensorList& in) { return TensorList{tanh(noisy(sin(in[0])))}; };
    auto run = [&](bool checkpointed, bool preserve, bool check, Tensor& x) {
      Generator g(1234);
      GeneratorScope use(g);
      CheckpointOptions o = variant(reentrant);
      o.preserve_rng_state = preserve;
      o.determinism_check = check;
      return run_recorded([&] {
        Tensor y = checkpointed ? checkpoint(block, {x}, o)[0] : block({x})[0];
        return sum(y);
      });
    };
    Tensor x0 = randn({32}, 10).set_requires_grad(true);
    Tensor x1 = randn({32}, 10).set_requires_grad(true);
    run(false, true, true, x0);
    run(true, true, true, x1);
    compare_tensors(x1.grad(), x0.grad(), 1e-6, "grad with the RNG state preserved");

    // Not preserved: the recompute draws other noise; the check names the op.
    Tensor x2 = randn({32}, 10).set_requires_grad(true);
    std::string error;
    try {
      run(true, false, true, x2);
    } catch (const std::runtime_error& e) {
      error = e.what();
    }
    QVERIFY2(error.find("checkpoint 'block': the recomputed forward differs from the original at "
                        "op #1 'mul'") == 0,
             error.c_str());
    // Without the check, PyTorch's behaviour: silently different gradients.
    Tensor x3 = randn({32}, 10).set_requires_grad(true);
    Run silent = run(true, false, false, x3);
    QVERIFY(silent.messages.empty());
    QVERIFY(x3.grad().to_vector() != x0.grad().to_vector());
  }

  // The check compares values, not sums: a causal mask's -inf (whose sums are -inf on both
  // sides, and -inf - -inf is NaN) and NaNs in the same places are equal; a moved one is not.
  void recomputeCheckTakesInfinitiesAndNaNsAsValues() {
    const auto sums = [](std::vector<float> v) {
      return detail::checksum_values(
          {Tensor::from_vector(v, {static_cast<std::int64_t>(v.size())})});
    };
    const float inf = INFINITY, nan = NAN;
    const auto masked = sums({1, -inf, -inf, 2});
    QVERIFY(detail::same_values(masked, sums({1, -inf, -inf, 2})));
    QVERIFY(!detail::same_values(masked, sums({1, -inf, 2, -inf})));  // the same sum, moved
    QVERIFY(!detail::same_values(masked, sums({1, inf, -inf, 2})));
    QVERIFY(!detail::same_values(masked, sums({1.5f, -inf, -inf, 2})));
    QVERIFY(detail::same_values(sums({nan, 3, nan}), sums({nan, 3, nan})));
    QVERIFY(!detail::same_values(sums({nan, 3, nan}), sums({3, nan, nan})));
    QVERIFY(!detail::same_values(sums({nan, 3, 1}), sums({-inf, 3, 1})));
    QCOMPARE(masked.neg_inf.count, 2);
    QCOMPARE(masked.sum, 3.0);
    // Positions run on across an op's outputs: -inf in the second output is not in the first.
    const Tensor a = Tensor::from_vector(std::vector<float>{-inf, 1}, {2});
    const Tensor b = Tensor::from_vector(std::vector<float>{1, -inf}, {2});
    QVERIFY(!detail::same_values(detail::checksum_values({a, b}), detail::checksum_values({b, a})));
  }

  // Attention under a causal mask filled with -inf, checkpointed: the recomputation repeats
  // the forward exactly, and the check says so (it used to fail the run: "256 values summing
  // to -inf instead of -inf").
  void causalAttentionRecomputes_data() {
    QTest::addColumn<bool>("reentrant");
    QTest::newRow("reentrant") << true;
    QTest::newRow("non-reentrant") << false;
  }
  void causalAttentionRecomputes() {
    QFETCH(bool, reentrant);
    const std::int64_t n = 6;
    std::vector<float> mask(static_cast<std::size_t>(n * n), 0.0f);
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = i + 1; j < n; ++j)
        mask[static_cast<std::size_t>(i * n + j)] = -INFINITY;
    const Tensor causal = Tensor::from_vector(mask, {n, n});
    const Tensor wq = param({8, 8}, 21), wk = param({8, 8}, 22);
    auto block = [&](const TensorList& in) {
      const Tensor scores =
          add(matmul(linear(in[0], wq), transpose(linear(in[0], wk), 0, 1)), causal);
      return TensorList{matmul(softmax(scores, -1), in[0])};
    };
    const Tensor x = randn({n, 8}, 23);
    auto grads = [&](bool checkpointed) {
      Tensor xi = x.detach().set_requires_grad(true);
      run_recorded([&] {
        return sum(checkpointed ? checkpoint(block, {xi}, variant(reentrant))[0] : block({xi})[0]);
      });
      return xi.grad();
    };
    const Tensor plain = grads(false);
    const std::string error = error_of([&] { grads(true); });
    QVERIFY2(error == "(no error)", error.c_str());
    compare_tensors(grads(true), plain, 1e-6, "grad of the checkpointed causal attention");
  }

  void recomputeCheckErrorIsInTheTrace() {
    Tensor x = randn({16}, 11).set_requires_grad(true);
    auto block = [](const TensorList& in) { return TensorList{noisy(in[0])}; };
    CheckpointOptions o = variant(true);
    o.preserve_rng_state = false;
    auto ledger = std::make_shared<MemoryLedger>();
    ExecutionScope scope(ledger);
    Recorder recorder(scope.context());
    bool threw = false;
    try {
      PhaseScope fwd(Phase::forward);
      Tensor loss = sum(checkpoint(block, {x}, o)[0]);
      loss.backward();
    } catch (const std::runtime_error&) {
      threw = true;
    }
    QVERIFY(threw);
    Trace t = recorder.finish();
    QCOMPARE(t.messages().back().severity, Severity::error);
    QVERIFY(t.messages().back().text.find("'mul'") != std::string::npos);
    QCOMPARE(t.step(t.messages().back().step).phase, Phase::recompute);
  }

  void checkpointSequentialSplitsAs113_data() {
    QTest::addColumn<int>("segments");
    QTest::addColumn<bool>("reentrant");
    QTest::addColumn<std::vector<int>>("calls");
    QTest::newRow("4 segments") << 4 << true << std::vector<int>{2, 2, 2, 2, 2, 2, 1, 1, 1, 1};
    QTest::newRow("2 segments") << 2 << true << std::vector<int>{2, 2, 2, 2, 2, 1, 1, 1, 1, 1};
    QTest::newRow("3 segments, non-reentrant")
        << 3 << false << std::vector<int>{2, 2, 2, 2, 2, 2, 1, 1, 1, 1};
    QTest::newRow("1 segment") << 1 << true << std::vector<int>(10, 1);
  }
  void checkpointSequentialSplitsAs113() {
    QFETCH(int, segments);
    QFETCH(bool, reentrant);
    QFETCH(std::vector<int>, calls);
    std::vector<Tensor> w;
    for (int i = 0; i < 10; ++i) w.push_back(param({6, 6}, 100 + static_cast<std::uint64_t>(i)));
    std::vector<SegmentFunction> fns;
    for (int i = 0; i < 10; ++i)
      fns.push_back([&w, i](const TensorList& in) {
        NodeScope node("f" + std::to_string(i));
        return TensorList{tanh(linear(in[0], w[static_cast<std::size_t>(i)]))};
      });
    Tensor x = randn({3, 6}, 12).set_requires_grad(true);
    CheckpointOptions o = variant(reentrant);
    o.name = "seq";
    Run r = run_recorded([&] { return sum(checkpoint_sequential(fns, segments, {x}, o)[0]); });
    // Forward executions per function (each is linear + tanh: two steps per execution).
    auto fwd = steps_by_node(r.trace, Phase::forward);
    auto rec = steps_by_node(r.trace, Phase::recompute);
    const std::vector<std::string> names{"f0", "f1", "f2", "f3", "f4",
                                         "f5", "f6", "f7", "f8", "f9"};
    for (std::size_t i = 0; i < names.size(); ++i)
      QCOMPARE((fwd[names[i]] + rec[names[i]]) / 2, calls[i]);
    QCOMPARE(static_cast<int>(r.trace.checkpoints().size()), segments - 1);
    if (segments > 1) QCOMPARE(r.trace.checkpoints()[0].segment, std::string("seq[0]"));
    for (const auto& p : w) QVERIFY(p.grad().defined());
  }

  void checkpointSequentialOutlivesItsFunctionList() {
    Tensor w = param({4, 4}, 30);
    Tensor x = randn({2, 4}, 31).set_requires_grad(true);
    Tensor loss;
    {
      std::vector<SegmentFunction> fns(
          4, [w](const TensorList& in) { return TensorList{tanh(linear(in[0], w))}; });
      loss = sum(checkpoint_sequential(fns, 2, {x})[0]);
    }  // the list is gone; backward still recomputes its first segment
    loss.backward();
    QVERIFY(w.grad().defined());
    QVERIFY(x.grad().defined());
  }

  void checkpointSequentialRejectsBadSegments() {
    std::vector<SegmentFunction> fns(3, [](const TensorList& in) { return in; });
    Tensor x = randn({2}, 13);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, checkpoint_sequential(fns, 0, {x}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, checkpoint_sequential(fns, -1, {x}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, checkpoint_sequential(fns, 4, {x}));
    QVERIFY(error_of([&] { checkpoint_sequential(fns, 0, {x}); }).find("segments must be") !=
            std::string::npos);
  }

  void traceStatesOfACheckpointedRun_data() {
    QTest::addColumn<bool>("reentrant");
    QTest::newRow("reentrant") << true;
    QTest::newRow("non-reentrant") << false;
  }
  void traceStatesOfACheckpointedRun() {
    QFETCH(bool, reentrant);
    Tensor w = param({8, 8}, 20);
    Tensor x = randn({2, 8}, 21).set_requires_grad(true);
    auto tagged = [](Tensor t, const char* name) {
      t.storage()->ledger().tag(t.storage()->id(), name);
      return t;
    };
    auto block = [&](const TensorList& in) {
      Tensor h = tagged(linear(in[0], w), "h");
      Tensor r = tagged(relu(h), "r");
      return TensorList{tagged(tanh(r), "t")};
    };
    Run run = run_recorded([&] {
      Tensor in = tagged(sin(x), "in");
      Tensor out = checkpoint(block, {in}, variant(reentrant))[0];
      return sum(tagged(mul(out, out), "squared"));  // mul keeps its inputs: t stays alive
    });
    const Trace& t = run.trace;
    auto state = [&](const char* n, std::int64_t k) { return t.state_at(t.tensor_index(n), k); };
    const auto fe = t.forward_end();
    QCOMPARE(state("in", fe), ActivationState::checkpoint_input);
    QCOMPARE(state("h", fe), ActivationState::dropped);
    QCOMPARE(state("r", fe), ActivationState::dropped);
    QCOMPARE(state("t", fe), ActivationState::kept);  // made inside, but the segment's output
    QCOMPARE(state("squared", fe), ActivationState::freed);  // sum keeps nothing
    const auto rec = t.recomputes().at(0);
    QCOMPARE(state("r", rec.end_step - 1), ActivationState::recomputed);
    QCOMPARE(state("r", t.step_count() - 1), ActivationState::freed);
    QCOMPARE(state("in", t.step_count() - 1), ActivationState::freed);
  }
};

QTEST_GUILESS_MAIN(TestCheckpoint)
#include "test_checkpoint.moc"
