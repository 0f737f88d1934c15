// scaled_dot_product_attention's two kernels (issue 27): the same values and gradients, and
// what each keeps for backward — the math kernel PyTorch 1.13's decomposed ops, the efficient
// kernel PyTorch 2.x's memory-efficient attention (query, key, value, output, log-sum-exp),
// whose shapes are those the CUDA oracle (gpu_oracle.json) records — and what save-matmul keeps
// of it inside a checkpoint. Finite differences are test_engine_gradcheck_nn's.
#include <QtTest>

#include <set>

#include "engine/autograd/saved_tensors.hpp"
#include "engine/ops/attention_fused.hpp"
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

  // The fused kernels on the CUDA device only (a dry run standing in for CUDA included), and
  // only the forms PyTorch 2.x runs as F.scaled_dot_product_attention: a scaled product is
  // attention written out by hand.
  void kernelChoiceByDevice() {
    const Tensor q = randn({1, 2, 3, 4}, 1);
    const Tensor kt = randn({1, 2, 4, 3}, 2);
    QVERIFY(attention_kernel_for(q, kt, q, false, kQueryScaled) == AttentionKernel::math);
    DeviceScope dry(Device::meta, Device::cuda);
    const Tensor mq = Tensor::empty({1, 2, 3, 4});
    const Tensor mkt = Tensor::empty({1, 2, 4, 3});
    QVERIFY(attention_kernel_for(mq, mkt, mq, false, kQueryScaled) == AttentionKernel::efficient);
    AttentionOptions by_hand;
    by_hand.scores = {AttentionScale::Op::div, 2.0};
    QVERIFY(attention_kernel_for(mq, mkt, mq, false, by_hand) == AttentionKernel::math);
    // torchvision's Swin: q * head_dim ** -0.5, its own ops in PyTorch 2.x too.
    AttentionOptions swin;
    swin.query = {AttentionScale::Op::mul, 0.5};
    QVERIFY(attention_kernel_for(mq, mkt, mq, false, swin) == AttentionKernel::math);
    // F.scaled_dot_product_attention's export: q and kᵀ each times sqrt(scale).
    AttentionOptions sdpa;
    sdpa.query = sdpa.key = {AttentionScale::Op::mul, std::sqrt(0.5)};
    QVERIFY(attention_kernel_for(mq, mkt, mq, false, sdpa) == AttentionKernel::efficient);
  }

  // PyTorch 2.11's select_sdp_backend on an H200 (sdp_utils.cpp), case by case: cuDNN first for
  // half precision when its dropout (a multiple of 1/16) and head dims (<= 128, multiples of
  // 8) allow; then flash (half precision, no mask, one head dim <= 256); then memory-efficient
  // (float32 or half, head dims multiples of 4 or 8); else math.
  void kernelChoiceAsPyTorch2() {
    struct Row {
      DType dtype;
      std::int64_t head, value_head;
      bool masked;
      double dropout;
      AttentionKernel expected;
    };
    const Row rows[] = {
        {DType::f32, 64, 64, false, 0.1, AttentionKernel::efficient},  // nn.TransformerEncoder
        {DType::f32, 64, 64, true, 0.0, AttentionKernel::efficient},   // a mask: still fused
        {DType::f32, 62, 62, false, 0.0, AttentionKernel::math},       // 62 % 4 != 0
        {DType::f64, 64, 64, false, 0.0, AttentionKernel::math},       // no fused float64
        {DType::bf16, 64, 64, false, 0.1, AttentionKernel::flash},     // 0.1 is not k / 16
        {DType::bf16, 64, 64, false, 0.125, AttentionKernel::cudnn},   // 2 / 16
        {DType::bf16, 64, 64, false, 0.0, AttentionKernel::cudnn},
        {DType::f16, 64, 64, true, 0.1, AttentionKernel::efficient},  // flash takes no mask
        {DType::bf16, 256, 256, false, 0.0, AttentionKernel::flash},  // cuDNN: <= 128
        {DType::bf16, 20, 20, false, 0.0, AttentionKernel::flash},    // cuDNN: multiples of 8
        {DType::bf16, 20, 20, true, 0.0, AttentionKernel::math},      // efficient: of 8 too
        {DType::bf16, 512, 512, false, 0.0, AttentionKernel::efficient},
    };
    for (const Row& r : rows) {
      AttentionProblem p;
      p.dtype = r.dtype;
      p.query_length = p.key_length = 256;
      p.head = p.key_head = r.head;
      p.value_head = r.value_head;
      p.masked = r.masked;
      p.dropout = r.dropout;
      const AttentionKernel got = cuda_attention_kernel(p);
      QVERIFY2(got == r.expected,
               (std::string(dtype_name(r.dtype)) + " head " + std::to_string(r.head) + ": " +
                attention_kernel_name(got) + ", expected " + attention_kernel_name(r.expected))
                   .c_str());
    }
    AttentionProblem by_hand;
    by_hand.query_length = by_hand.key_length = 8;
    by_hand.head = by_hand.key_head = by_hand.value_head = 64;
    by_hand.scaled_product = true;
    QVERIFY(cuda_attention_kernel(by_hand) == AttentionKernel::math);
  }

  // Flash and cuDNN keep the log-sum-exp [..., L] (no padding to 32 rows), float32 for
  // half-precision inputs; each under its own node name.
  void flashAndCudnnSaveTheirLogSumExp() {
    for (const auto kernel : {AttentionKernel::flash, AttentionKernel::cudnn}) {
      DeviceScope dry(Device::meta, Device::cuda);
      const Tensor q = Tensor::empty({2, 3, 5, 8}, DType::bf16).set_requires_grad(true);
      const Tensor kt = Tensor::empty({2, 3, 8, 7}, DType::bf16).set_requires_grad(true);
      const Tensor v = Tensor::empty({2, 3, 7, 8}, DType::bf16).set_requires_grad(true);
      const Tensor out = scaled_dot_product_attention(q, kt, v, Tensor(), kQueryScaled, kernel);
      QCOMPARE(out.grad_fn()->name(), std::string(kernel == AttentionKernel::flash
                                                      ? "ScaledDotProductFlashAttentionBackward0"
                                                      : "ScaledDotProductCudnnAttentionBackward0"));
      std::int64_t bytes = 0;
      for (const auto& s : saved_tensor_storages(out)) bytes += s.bytes;
      // q, out [2, 3, 5, 8] and k, v [2, 3, 7, 8] in bfloat16; lse [2, 3, 5] in float32.
      QCOMPARE(bytes, (2 * 240 + 2 * 336) * 2 + 2 * 3 * 5 * 4);
    }
  }

  // Issue 40: _efficient_attention_backward's workspace (attention_backward.cu,
  // kernel_backward.h), derived from the source for float32 on sm80 and later, not measured on a
  // GPU. The oracle's encoder: 16 x 8 attentions of 256 queries, heads of 64 — 64 x 64 tiles,
  // 4 of them per attention, each 16 + 64 · 64 · 4 bytes.
  void efficientBackwardTakesItsWorkspace() {
    const auto bytes = [](DType d, std::int64_t slices, std::int64_t l, std::int64_t e) {
      return efficient_attention_backward_workspace_bytes(d, slices, l, e, e);
    };
    QCOMPARE(bytes(DType::f32, 16 * 8, 256, 64), std::int64_t{16 * 8 * 4 * (16 + 64 * 64 * 4)});
    // A head over 64 takes the 128 x 64 kernel: ceil(256 / 128) x ceil(96 / 64) tiles.
    QCOMPARE(bytes(DType::f32, 1, 256, 96), std::int64_t{2 * 2 * (16 + 128 * 64 * 4)});
    // One partial tile: 5 queries, a head of 8.
    QCOMPARE(bytes(DType::f32, 6, 5, 8), std::int64_t{6 * (16 + 64 * 64 * 4)});
    QCOMPARE(bytes(DType::bf16, 16 * 8, 256, 64), std::int64_t{0});  // not modelled
    QCOMPARE(bytes(DType::f64, 16 * 8, 256, 64), std::int64_t{0});   // no such kernel
    // The backward takes it, after the gradients and delta, and frees it by its end.
    const std::int64_t workspace = bytes(DType::f32, 6, 5, 8);
    Run r = run_recorded([] {
      Inputs in = inputs(5, 7);
      return sum(scaled_dot_product_attention(in.q, in.kt, in.v, Tensor(), kQueryScaled,
                                              AttentionKernel::efficient));
    });
    int allocated = 0, freed = 0;
    for (std::int64_t i = r.trace.first_event(r.trace.forward_end() + 1); i < r.trace.event_count();
         ++i) {
      const TraceEvent e = r.trace.event(i);
      if (e.bytes != workspace) continue;
      allocated += e.kind == TraceEventKind::alloc;
      freed += e.kind == TraceEventKind::free;
    }
    QCOMPARE(allocated, 1);
    QCOMPARE(freed, 1);
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
