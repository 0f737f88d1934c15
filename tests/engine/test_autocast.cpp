// Mixed precision (issue 31): bfloat16 and float16 tensors and their kernels (computed in float,
// rounded once), autocast's rules from the op table with its cast cache, gradients cast back to
// their inputs' dtypes, the Runner's --amp (a dry run is its real run; float16 on the CPU is
// float32 with PyTorch's warnings; a recomputation restores autocast), and the gradient
// scaler. What PyTorch 1.13 casts and saves: tests/oracle/test_oracle_autocast, _amp.
#include <QtTest>

#include <cmath>

#include "engine/autograd/execution_context.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/model/loader.hpp"
#include "engine/ops/autocast.hpp"
#include "engine/ops/ops.hpp"
#include "engine/report/config_text.hpp"
#include "engine/run/grad_scaler.hpp"
#include "engine/run/runner.hpp"
#include "engine/tensor/generator.hpp"
#include "engine/tensor/init.hpp"
#include "engine/tensor/reduced_float.hpp"
#include "tests/engine/support/trace_difference.hpp"

using namespace ckpt;

namespace {

QString source_dir() {
  return qEnvironmentVariable("CKPTLAB_SOURCE_DIR");
}

Tensor randn(const Shape& s, std::uint64_t seed) {
  Generator g(seed);
  return normal_tensor(s, 0, 1, g);
}

// Each float rounded to bfloat16 and back, as PyTorch's .bfloat16().float() does.
std::vector<double> rounded(const std::vector<double>& v) {
  std::vector<double> out;
  for (double x : v) out.push_back(static_cast<float>(bfloat16(static_cast<float>(x))));
  return out;
}

double worst_relative(const std::vector<double>& a, const std::vector<double>& b) {
  double scale = 1e-12, diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    scale = std::max(scale, std::abs(b[i]));
    diff = std::max(diff, std::abs(a[i] - b[i]));
  }
  return diff / scale;
}

Tensor op(const std::string& type, const TensorList& inputs, const Attributes& attrs = {}) {
  static const std::string name = "test";
  return run_op(*OpTable::instance().find(type), OpCall{name, type, attrs}, inputs).at(0);
}

AutocastState cpu_bf16() {
  return AutocastState{true, DType::bf16, Device::cpu};
}

std::shared_ptr<Model> sample(const char* file) {
  return load_model((source_dir() + "/samples/" + file).toStdString());
}

std::string first_difference(const Trace& a, const Trace& b) {
  if (a.step_count() != b.step_count()) return "step counts differ";
  for (std::int64_t k = 0; k < a.step_count(); ++k)
    if (a.step(k).op != b.step(k).op || a.step(k).node != b.step(k).node)
      return "step " + std::to_string(k) + ": " + a.step(k).op + " / " + b.step(k).op;
  return test::first_event_difference(a, b);
}

}  // namespace

class TestAutocast : public QObject {
  Q_OBJECT
 private slots:
  void reducedTensors() {
    QCOMPARE(dtype_size(DType::bf16), std::size_t{2});
    QCOMPARE(dtype_size(DType::f16), std::size_t{2});
    QCOMPARE(std::string(dtype_name(DType::bf16)), std::string("bfloat16"));
    QVERIFY(is_floating(DType::bf16) && is_floating(DType::f16));
    QCOMPARE(promote_floating(DType::bf16, DType::f16), DType::f32);
    // Round to nearest even: 1 + 2^-8 is a tie between 1 and 1 + 2^-7, and goes to 1.
    const Tensor x =
        Tensor::from_vector(std::vector<float>{1.00390625f, 1.01171875f, -3.0f, 65504.0f}, {4});
    const Tensor b = cast_raw(x, DType::bf16);
    QCOMPARE(b.nbytes(), std::int64_t{8});
    QCOMPARE(b.to_vector(), (std::vector<double>{1.0, 1.015625, -3.0, 65536.0}));
    QCOMPARE(cast_raw(x, DType::f16).to_vector()[3], 65504.0);
    QCOMPARE(Tensor::full({2}, 0.1, DType::bf16).to_vector()[0], rounded({0.1})[0]);
  }

  // Each kernel computes in float and rounds its result once.
  void reducedKernels() {
    const Tensor a = randn({37, 19}, 1), b = randn({37, 19}, 2);
    const Tensor ab = cast_raw(a, DType::bf16), bb = cast_raw(b, DType::bf16);
    const auto av = ab.to_vector(), bv = bb.to_vector();
    std::vector<double> sum(av.size()), prod(av.size());
    for (std::size_t i = 0; i < av.size(); ++i) {
      sum[i] = static_cast<float>(av[i]) + static_cast<float>(bv[i]);
      prod[i] = static_cast<float>(av[i]) * static_cast<float>(bv[i]);
    }
    QCOMPARE(add_raw(ab, bb).to_vector(), rounded(sum));
    QCOMPARE(mul_raw(ab, bb).to_vector(), rounded(prod));
    // A sum of 4,096 bfloat16 ones is 4,096: accumulated in float, not in bfloat16 (where it
    // would stop at 256).
    QCOMPARE(sum_dims_raw(Tensor::ones({4096}, DType::bf16), {}, false).item(), 4096.0);
    // GEMM: products accumulated in float, the result rounded once.
    const Tensor c = matmul2d_raw(ab, transpose_raw(bb, 0, 1));
    const Tensor ref =
        matmul2d_raw(cast_raw(ab, DType::f32), transpose_raw(cast_raw(bb, DType::f32), 0, 1));
    QCOMPARE(c.dtype(), DType::bf16);
    QVERIFY(worst_relative(c.to_vector(), rounded(ref.to_vector())) < 1e-2);
    // Mixed dtypes promote: bfloat16 + float32 is float32.
    QCOMPARE(add_raw(ab, b).dtype(), DType::f32);
  }

  // The ops autocast needs, in bfloat16 against float32 on the same (rounded) values.
  void reducedOps() {
    const Tensor x32 = cast_raw(cast_raw(randn({2, 3, 8, 8}, 3), DType::bf16), DType::f32);
    const Tensor w32 = cast_raw(cast_raw(randn({4, 3, 3, 3}, 4), DType::bf16), DType::f32);
    const Tensor x = cast_raw(x32, DType::bf16), w = cast_raw(w32, DType::bf16);
    auto close = [](const Tensor& ours, const Tensor& ref, double tol) {
      return ours.dtype() == DType::bf16 &&
             worst_relative(ours.to_vector(), ref.to_vector()) <= tol;
    };
    QVERIFY(close(conv2d(x, w, Tensor(), {1, 1}, {1, 1}),
                  conv2d(x32, w32, Tensor(), {1, 1}, {1, 1}), 1e-2));
    QVERIFY(close(softmax(x, -1), softmax(x32, -1), 1e-2));
    QVERIFY(close(gelu(x), gelu(x32), 1e-2));
    QVERIFY(close(relu(x), relu(x32), 0));
    QVERIFY(close(max_pool2d(x, {2, 2}, {2, 2}), max_pool2d(x32, {2, 2}, {2, 2}), 0));
    QVERIFY(close(avg_pool2d(x, {2, 2}, {2, 2}), avg_pool2d(x32, {2, 2}, {2, 2}), 1e-2));
    // batch_norm of a bfloat16 input with float32 parameters: bfloat16 out, float32 statistics.
    const Tensor g = Tensor::ones({3}), bias = Tensor::zeros({3});
    const Tensor rm = Tensor::zeros({3}), rv = Tensor::ones({3});
    const Tensor y = batch_norm(x, g, bias, rm, rv, true, 0.1, 1e-5);
    QVERIFY(close(
        y, batch_norm(x32, g, bias, Tensor::zeros({3}), Tensor::ones({3}), true, 0.1, 1e-5), 2e-2));
    // layer_norm of a bfloat16 input with float32 parameters fails, as PyTorch 1.13's does.
    try {
      layer_norm(x, {8}, Tensor::ones({8}), Tensor::zeros({8}));
      QFAIL("layer_norm took a bfloat16 input with float32 parameters");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(std::string(e.what()).find("expected scalar type bfloat16 but found float32") !=
                   std::string::npos,
               e.what());
    }
    // An op without a reduced kernel refuses, naming itself.
    try {
      sigmoid(x);  // has one
      upsample_bilinear2d(x, {16, 16}, false, {0, 0});
      QFAIL("upsample_bilinear2d computed a bfloat16 tensor");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(
          std::string(e.what()).find("upsample_linear has no bfloat16 kernel") != std::string::npos,
          e.what());
    }
  }

  // linear under autocast: its inputs cast (bias, weight, input: right to left, as ATen's
  // wrapper evaluates them), a parameter's cast cached until the outermost scope exits.
  void autocastRulesAndCache() {
    Tensor x = randn({4, 8}, 5), w = randn({6, 8}, 6), b = randn({6}, 7);
    w.set_requires_grad(true);
    b.set_requires_grad(true);
    auto ledger = std::make_shared<MemoryLedger>();
    auto context = std::make_shared<ExecutionContext>(ledger);
    Recorder recorder(*context);
    Tensor y, y2, z;
    {
      ExecutionScope scope(context);
      {
        AutocastScope autocast(cpu_bf16());
        y = op("linear", {x, w, b});
        QCOMPARE(autocast_cached_casts(), std::int64_t{2});  // w and b; x is not a parameter
        y2 = op("linear", {x, w, b});                        // casts x again, not w and b
        {
          AutocastScope nested(AutocastState{});  // autocast(enabled=False) inside
          z = op("linear", {x, w, b});
        }
        QCOMPARE(autocast_cached_casts(), std::int64_t{2});
      }
      QCOMPARE(autocast_cached_casts(), std::int64_t{0});
    }
    QCOMPARE(y.dtype(), DType::bf16);
    QCOMPARE(y2.dtype(), DType::bf16);
    QCOMPARE(z.dtype(), DType::f32);
    const Trace t = recorder.finish();
    std::vector<std::string> ops;
    for (std::int64_t k = 0; k < t.step_count(); ++k) ops.push_back(t.step(k).op);
    const std::vector<std::string> expected = {"to(bfloat16)", "to(bfloat16)", "to(bfloat16)",
                                               "linear",       "to(bfloat16)", "linear",
                                               "linear"};
    QCOMPARE(ops, expected);
    QCOMPARE(t.event(t.first_event(0)).bytes, std::int64_t{6 * 2});      // the bias first
    QCOMPARE(t.event(t.first_event(1)).bytes, std::int64_t{6 * 8 * 2});  // then the weight
    // The rules are the rows': fp32 for losses, lower for convolutions, conv_transpose2d fp32
    // on the CPU and lower on CUDA, softmax as given on the CPU and in float32 on CUDA.
    const OpTable& table = OpTable::instance();
    QCOMPARE(autocast_policy(*table.find("cross_entropy"), Device::cpu), AutocastPolicy::fp32);
    QCOMPARE(autocast_policy(*table.find("conv"), Device::cpu), AutocastPolicy::lower);
    QCOMPARE(autocast_policy(*table.find("conv_transpose"), Device::cpu), AutocastPolicy::fp32);
    QCOMPARE(autocast_policy(*table.find("conv_transpose"), Device::cuda), AutocastPolicy::lower);
    QCOMPARE(autocast_policy(*table.find("softmax"), Device::cpu), AutocastPolicy::none);
    QCOMPARE(autocast_policy(*table.find("softmax"), Device::cuda),
             AutocastPolicy::fp32_set_opt_dtype);
    QCOMPARE(autocast_policy(*table.find("layer_norm"), Device::cuda), AutocastPolicy::fp32);
    QCOMPARE(autocast_policy(*table.find("cat"), Device::cpu), AutocastPolicy::promote);
    // float64 is never cast.
    AutocastScope autocast(cpu_bf16());
    QCOMPARE(op("linear", {cast_raw(x, DType::f64), cast_raw(w, DType::f64)}).dtype(), DType::f64);
  }

  // Gradients come back in their inputs' dtypes: float32 for float32 parameters through the
  // casts' ToCopyBackward0, bfloat16 for a bfloat16 input an op promoted (PyTorch's
  // validate_outputs).
  void gradientsInTheirInputsDtypes() {
    Tensor x = randn({4, 8}, 8), w = randn({6, 8}, 9);
    w.set_requires_grad(true);
    Tensor h, mask = randn({6}, 10);
    {
      AutocastScope autocast(cpu_bf16());
      h = op("linear", {x, w});  // bfloat16
      h.set_name("h");
    }
    const Tensor s = add(h, mask);  // float32
    QCOMPARE(s.dtype(), DType::f32);
    const TensorList g = grad({sum(s)}, {h, w});
    QCOMPARE(g[0].dtype(), DType::bf16);
    QCOMPARE(g[1].dtype(), DType::f32);
  }

  // --amp: the dry run is the real run, step for step and byte for byte; the same with every
  // block checkpointed (the recomputation restores autocast, or the recompute check would find
  // other dtypes); a training step's gradients are float32.
  void runnerAmp() {
    for (const char* file : {"mlp.json", "resnet.json", "gpt_mini.json", "densenet_block.json"}) {
      const auto model = sample(file);
      for (bool checkpointed : {false, true}) {
        RunRequest r = scenario_request(*model);
        r.settings.amp = AmpMode::bf16;
        r.settings.optimizer.kind = OptimizerKind::adamw;
        if (checkpointed) {
          r.settings.use_reentrant = false;  // the reentrant variant loses inputs without grad
          r.plan.modules.clear();
          for (const Module* m : model->all_modules())
            if (m->checkpointable && m->path.find('.') == std::string::npos)
              r.plan.modules.insert(m->path);
        }
        const RunResult real = Runner(model).run(r);
        QVERIFY2(real.ok, (std::string(file) + ": " + real.error).c_str());
        for (const auto& [name, g] : real.gradients)
          QCOMPARE(dtype_name(g.dtype()), dtype_name(model->find_parameter(name)->initial.dtype()));
        RunRequest d = r;
        d.settings.dry_run = true;
        const RunResult dry = Runner(model).run(d);
        QVERIFY2(dry.ok, dry.error.c_str());
        const std::string diff = first_difference(real.trace, dry.trace);
        QVERIFY2(diff.empty(), (std::string(file) + ": " + diff).c_str());
        QVERIFY(describe_request(r).find("bf16 autocast") != std::string::npos);
      }
    }
  }

  // PyTorch 1.13's CPU autocast knows no float16: it warns and runs float32, and a GradScaler
  // without CUDA disables itself; so does the run.
  void fp16OnTheCpuIsFloat32() {
    const auto model = sample("mlp.json");
    RunRequest r = scenario_request(*model);
    r.settings.optimizer.kind = OptimizerKind::adam;
    const RunResult plain = Runner(model).run(r);
    r.settings.amp = AmpMode::fp16;
    const RunResult fp16 = Runner(model).run(r);
    QVERIFY(plain.ok && fp16.ok);
    QCOMPARE(first_difference(plain.trace, fp16.trace), std::string());
    QCOMPARE(fp16.loss.item(), plain.loss.item());
    int warnings = 0;
    for (const auto& m : fp16.trace.messages())
      warnings +=
          m.text.find("CPU Autocast only supports dtype of torch.bfloat16") != std::string::npos ||
          m.text.find("GradScaler is enabled, but CUDA is not available") != std::string::npos;
    QCOMPARE(warnings, 2);
  }

  // torch.cuda.amp.GradScaler's rules: the loss scaled, the gradients unscaled before the step,
  // a step with an inf skipped and the scale backed off, growth after the interval.
  void gradScaler() {
    Tensor p = Tensor::ones({3});
    p.set_requires_grad(true);
    OptimizerSettings sgd;
    sgd.kind = OptimizerKind::sgd;
    sgd.lr = 1.0;
    Optimizer opt(sgd, StepImplementation::foreach, {{"p", p}});
    GradScalerSettings s;
    s.growth_interval = 2;
    GradScaler scaler(s);
    QCOMPARE(scaler.scale_tensor().item(), 65536.0);
    QCOMPARE(scaler.growth_tracker().dtype(), DType::i32);
    const Tensor scaled = scaler.scale(Tensor::scalar(0.5));
    QCOMPARE(scaled.item(), 32768.0);
    p.set_grad(Tensor::full({3}, 65536.0));  // a gradient of 1, scaled
    QVERIFY(scaler.step_and_update(opt));
    QCOMPARE(p.to_vector(), (std::vector<double>{0, 0, 0}));  // stepped with the unscaled 1
    QCOMPARE(scaler.growth_tracker().item(), 1.0);
    p.set_grad(Tensor::from_vector(std::vector<float>{1, INFINITY, 1}, {3}));
    QVERIFY(!scaler.step_and_update(opt));
    QCOMPARE(p.to_vector(), (std::vector<double>{0, 0, 0}));  // skipped
    QCOMPARE(scaler.scale_tensor().item(), 32768.0);          // backed off
    QCOMPARE(scaler.growth_tracker().item(), 0.0);
    for (int i = 0; i < 2; ++i) {
      p.set_grad(Tensor::zeros({3}));
      QVERIFY(scaler.step_and_update(opt));
    }
    QCOMPARE(scaler.scale_tensor().item(), 65536.0);  // grew after 2 clean steps
  }
};

QTEST_GUILESS_MAIN(TestAutocast)
#include "test_autocast.moc"
