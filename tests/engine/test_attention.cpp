// scaled_dot_product_attention's two kernels (issue 27): the same values and gradients, and
// what each keeps for backward — the math kernel PyTorch 1.13's decomposed ops, the efficient
// kernel PyTorch 2.x's memory-efficient attention (query, key, value, output, log-sum-exp),
// whose shapes are those the CUDA oracle (gpu_oracle.json) records — and what save-matmul keeps
// of it inside a checkpoint. Finite differences are test_engine_gradcheck_nn's.
#include <QtTest>

#include <set>

#include "engine/autograd/saved_tensors.hpp"
#include "test_checkpoint_support.hpp"

using namespace ckpt;
using namespace ckpt::testing;

namespace {

struct Inputs {
  Tensor q, kt, v;
};

// [B, H, L, E] attention inputs in float32, kᵀ a transposed view as the exported graph has it.
Inputs inputs(std::int64_t l, std::int64_t s) {
  Tensor k = randn({2, 3, s, 8}, 2).set_requires_grad(true);
  return {randn({2, 3, l, 8}, 1).set_requires_grad(true), transpose(k, -2, -1),
          randn({2, 3, s, 8}, 3).set_requires_grad(true)};
}

AttentionOptions query_scaled() {
  AttentionOptions o;
  o.query = {AttentionScale::Op::div, std::sqrt(8.0)};
  return o;
}
const AttentionOptions kQueryScaled = query_scaled();
const auto kAct = static_cast<std::size_t>(MemoryCategory::activation);

bool says(const std::vector<std::pair<Severity, std::string>>& messages, const std::string& text) {
  for (const auto& [severity, m] : messages)
    if (severity == Severity::info && m.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

class TestAttention : public QObject {
  Q_OBJECT
 private slots:
  void bothKernelsAgree() {
    for (const double p : {0.0, 0.25}) {
      AttentionOptions o = kQueryScaled;
      o.dropout = p;
      TensorList grads[2];
      Tensor outs[2];
      for (int k = 0; k < 2; ++k) {
        Inputs in = inputs(5, 7);
        Generator g(4);
        GeneratorScope scope(g);  // the same dropout draws for both kernels
        outs[k] = scaled_dot_product_attention(
            in.q, in.kt, in.v, Tensor(), o, k ? AttentionKernel::efficient : AttentionKernel::math);
        sum(mul(outs[k], outs[k])).backward();
        grads[k] = {in.q.grad(), in.v.grad()};
      }
      compare_tensors(outs[1], outs[0], 1e-5, "output");
      compare_tensors(grads[1][0], grads[0][0], 1e-4, "query gradient");
      compare_tensors(grads[1][1], grads[0][1], 1e-4, "value gradient");
    }
  }

  // PyTorch 2.x's ScaledDotProductEfficientAttentionBackward0 on an H200 (gpu_oracle.json,
  // nn_transformer_encoder__plain): query, key, value (one storage), output, and log_sumexp
  // [B, H, L] float32 for L = 256; its rows are ceil(L / 32) · 32.
  void efficientKernelSavesWhatPyTorch2Saves() {
    QCOMPARE(attention_lse_length(256), std::int64_t{256});
    QCOMPARE(attention_lse_length(1), std::int64_t{32});
    QCOMPARE(attention_lse_length(33), std::int64_t{64});
    Inputs in = inputs(5, 7);
    const Tensor out = scaled_dot_product_attention(in.q, in.kt, in.v, Tensor(), kQueryScaled,
                                                    AttentionKernel::efficient);
    QCOMPARE(out.grad_fn()->name(), std::string("ScaledDotProductEfficientAttentionBackward0"));
    std::multiset<std::string> saved;
    std::int64_t bytes = 0;
    for (const auto& s : saved_tensor_storages(out)) {
      saved.insert(shape_str(s.shape));
      bytes += s.bytes;
    }
    // q [2, 3, 5, 8], k (its transpose's storage), v, out [2, 3, 5, 8], lse [2, 3, 32].
    QCOMPARE(saved, (std::multiset<std::string>{"[2, 3, 5, 8]", "[2, 3, 8, 7]", "[2, 3, 7, 8]",
                                                "[2, 3, 5, 8]", "[2, 3, 32]"}));
    QCOMPARE(bytes, (2 * 240 + 2 * 336 + 2 * 3 * 32) * 4);
  }

  // The math kernel keeps what nn.MultiheadAttention's ops keep in PyTorch 1.13: the scalar
  // divisor (a float64 0-d tensor), the scaled query, the key, the attention weights, the
  // value; and with dropout its mask and the dropped weights.
  void mathKernelSavesWhatTheDecomposedOpsSave() {
    for (const double p : {0.0, 0.25}) {
      Inputs in = inputs(5, 7);
      AttentionOptions o = kQueryScaled;
      o.dropout = p;
      Generator g(4);
      GeneratorScope scope(g);
      const Tensor out =
          scaled_dot_product_attention(in.q, in.kt, in.v, Tensor(), o, AttentionKernel::math);
      std::int64_t bytes = 0;
      for (const auto& s : saved_tensor_storages(out)) bytes += s.bytes;
      // k and v whole (views of their storages), the scaled q; P, and with dropout its mask
      // and the dropped P.
      const std::int64_t kv = 336 + 336, weights = 2 * 3 * 5 * 7;
      QCOMPARE(bytes, 8 + (kv + 240 + (p > 0 ? 3 : 1) * weights) * 4);
    }
  }

  // The efficient kernel on the CUDA device only, and only the forms PyTorch 2.x runs through
  // it: a scaled product is attention written out by hand.
  void kernelChoice() {
    const Tensor q = randn({1, 2, 3, 4}, 1);
    QVERIFY(attention_kernel_for(q, kQueryScaled) == AttentionKernel::math);  // on the CPU
  }

  // save-matmul (save:mm,sdpa) in a checkpoint keeps the efficient kernel's output and
  // log-sum-exp, so the recompute runs no attention; the math kernel's two products (the scores
  // and the output), as the decomposed graph's matmuls are kept.
  void saveMatmulKeepsTheAttention() {
    for (const bool efficient : {true, false}) {
      const auto kernel = efficient ? AttentionKernel::efficient : AttentionKernel::math;
      auto block = [&](const TensorList& x) {
        return TensorList{scaled_dot_product_attention(sin(x[0]), transpose(x[1], -2, -1), x[2],
                                                       Tensor(), kQueryScaled, kernel)};
      };
      auto run = [&](int mode, Tensor& grad) {  // 0 full checkpoint, 1 save-matmul
        Inputs in = inputs(5, 7);
        const Tensor k = randn({2, 3, 7, 8}, 2).set_requires_grad(true);
        CheckpointOptions o;
        o.name = "attention";
        if (mode == 1) o.save_ops = ops_of_kinds({"mm", "sdpa"});
        Run r = run_recorded([&] { return sum(checkpoint(block, {in.q, k, in.v}, o)[0]); });
        grad = in.q.grad();
        return r;
      };
      Tensor g0, g1;
      const Run full = run(0, g0), selective = run(1, g1);
      compare_tensors(g1, g0, 1e-5, "query gradient");
      const auto act = [](const Run& r) { return r.trace.memory_at(r.trace.forward_end())[kAct]; };
      const std::int64_t kept = efficient ? (240 + 2 * 3 * 32) * 4 : (2 * 3 * 5 * 7 + 240) * 4;
      QCOMPARE(act(selective) - act(full), kept);
      QVERIFY(says(selective.messages, efficient ? "1 op outputs reused" : "2 op outputs reused"));
    }
  }
};

QTEST_GUILESS_MAIN(TestAttention)
#include "test_attention.moc"
