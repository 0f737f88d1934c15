// The optimizer step as a phase of the run (issue 31): its state is a category of its own, live
// from before the forward; its temporaries are those of PyTorch's default implementation on the
// device a run's memory follows (1.13's for-loop on the CPU, 2.x's foreach on CUDA); the trace
// has an optimizer phase; a dry run's trace is the real run's; the step's phases are measured as
// the GPU oracle measures them. Values against torch.optim: tests/oracle/test_oracle_optim.
#include <QtTest>

#include <numeric>

#include "engine/autograd/execution_context.hpp"
#include "engine/model/loader.hpp"
#include "engine/report/figures.hpp"
#include "engine/report/run_summary.hpp"
#include "engine/run/optimizer.hpp"
#include "engine/run/runner.hpp"
#include "tests/engine/support/trace_difference.hpp"

using namespace ckpt;

namespace {

QString source_dir() {
  return qEnvironmentVariable("CKPTLAB_SOURCE_DIR");
}

std::shared_ptr<Model> sample(const char* file) {
  return load_model((source_dir() + "/samples/" + file).toStdString());
}

std::int64_t category(const CategoryBytes& b, MemoryCategory c) {
  return b[static_cast<std::size_t>(c)];
}

RunResult run(const std::shared_ptr<Model>& model, OptimizerKind kind, bool dry = false) {
  RunRequest r = scenario_request(*model);
  r.settings.optimizer.kind = kind;
  r.settings.dry_run = dry;
  return Runner(model).run(r);
}

// The trainable parameters' bytes and count, in the model's order.
std::vector<std::int64_t> trainable_bytes(const Model& m) {
  std::vector<std::int64_t> out;
  for (const auto& p : m.parameters)
    if (p.requires_grad && !p.is_buffer) out.push_back(p.initial.nbytes());
  return out;
}

// The first difference between two traces in steps and memory events, or "".
std::string first_difference(const Trace& a, const Trace& b) {
  if (a.step_count() != b.step_count()) return "step counts differ";
  for (std::int64_t k = 0; k < a.step_count(); ++k) {
    const TraceStep x = a.step(k), y = b.step(k);
    if (x.phase != y.phase || x.op != y.op || x.node != y.node)
      return "step " + std::to_string(k) + ": " + x.op + " " + x.node + " / " + y.op + " " + y.node;
  }
  return test::first_event_difference(a, b);
}

}  // namespace

class TestOptimizer : public QObject {
  Q_OBJECT
 private slots:
  void stateIsItsOwnCategoryLiveFromTheStart() {
    const auto model = sample("mlp.json");
    const auto sizes = trainable_bytes(*model);
    const std::int64_t params = std::accumulate(sizes.begin(), sizes.end(), std::int64_t{0});
    const auto n = static_cast<std::int64_t>(sizes.size());
    const RunResult none = run(model, OptimizerKind::none);
    QCOMPARE(category(none.trace.memory_at(-1), MemoryCategory::optimizer_state), 0);
    QCOMPARE(none.trace.counts().optimizer, 0);
    struct Case {
      OptimizerKind kind;
      std::int64_t state;
    };
    // momentum: a buffer per parameter; Adam(W): two moments and a float32 step counter each.
    for (const Case c : {Case{OptimizerKind::sgd, 0}, Case{OptimizerKind::momentum, params},
                         Case{OptimizerKind::adam, 2 * params + 4 * n},
                         Case{OptimizerKind::adamw, 2 * params + 4 * n}}) {
      const RunResult r = run(model, c.kind);
      QVERIFY2(r.ok, r.error.c_str());
      QCOMPARE(category(r.trace.memory_at(-1), MemoryCategory::optimizer_state), c.state);
      QCOMPARE(category(r.trace.memory_at(r.trace.forward_end()), MemoryCategory::optimizer_state),
               c.state);
      // One step per parameter, in the optimizer phase, after backward, named by the parameter.
      QCOMPARE(r.trace.counts().optimizer, n);
      const std::int64_t first = r.trace.step_count() - n;
      QCOMPARE(r.trace.step(first).phase, Phase::optimizer);
      QCOMPARE(r.trace.step(first - 1).phase, Phase::backward);
      QCOMPARE(r.trace.step(first).node, model->parameters.front().name);
      QCOMPARE(r.trace.step(first).op, std::string(optimizer_name(c.kind)));
      // The parameters moved and the result holds them with the state.
      QCOMPARE(r.parameters.size(), sizes.size());
      const auto& w = model->parameters.front();
      QVERIFY(r.parameters.at(w.name).to_vector() != w.initial.to_vector());
      if (c.kind != OptimizerKind::sgd) QVERIFY(!r.optimizer_state.empty());
    }
  }

  // PyTorch 1.13's _single_tensor_adam: denom = (exp_avg_sq.sqrt() / c).add_(eps) is two
  // temporaries of the parameter's size at once, and the previous parameter's denom lives until
  // the next one is bound: the step's peak is the largest size(i-1) + 2 size(i) over the run.
  void forLoopAdamTemporaries() {
    const auto model = sample("mlp.json");
    const auto sizes = trainable_bytes(*model);
    const RunResult r = run(model, OptimizerKind::adamw);
    QVERIFY2(r.ok, r.error.c_str());
    std::int64_t expected = 0;
    for (std::size_t i = 0; i < sizes.size(); ++i)
      expected = std::max(expected, (i ? sizes[i - 1] : 0) + 2 * sizes[i]);
    const StepPhases p = step_phases(r.trace);
    QVERIFY(p.has_optimizer_step);
    QCOMPARE(p.peak_optimizer_step - p.after_backward, expected);
    // Nothing is left of the step's temporaries once it has returned.
    QCOMPARE(category(r.trace.memory_at(r.trace.step_count() - 1), MemoryCategory::temporary),
             std::int64_t{0});
    // SGD without momentum or weight decay makes none.
    const StepPhases sgd = step_phases(run(model, OptimizerKind::sgd).trace);
    QCOMPARE(sgd.peak_optimizer_step, sgd.after_backward);
  }

  // PyTorch 2.x's _multi_tensor_adam on CUDA (docs/reference/gpu-oracle.md, train/
  // tv_resnet50_b32__adamw_bf16.pickle): one sqrt per parameter, all made in one kernel, freed in
  // reverse order as the step returns; the step counters are host memory.
  void foreachAdamTemporaries() {
    auto ledger = std::make_shared<MemoryLedger>();
    auto context = std::make_shared<ExecutionContext>(ledger);
    Recorder recorder(*context);
    std::vector<std::int64_t> numels = {12, 5, 40, 1};
    {
      ExecutionScope scope(context);
      std::vector<TrainableParameter> params;
      for (std::size_t i = 0; i < numels.size(); ++i) {
        Tensor p = Tensor::ones({numels[i]});
        p.set_requires_grad(true);
        p.set_grad(Tensor::full({numels[i]}, 0.5));
        std::string name = "p";  // not "p" + ...: GCC 12's -Wrestrict misfires on that
        name += std::to_string(i);
        params.push_back({name, p});
      }
      const std::int64_t before = ledger->live_bytes();
      OptimizerSettings adamw;
      adamw.kind = OptimizerKind::adamw;
      Optimizer opt(adamw, StepImplementation::foreach, params);
      // Two moments per parameter on the device; the counters are not there.
      QCOMPARE(ledger->live_bytes(MemoryCategory::optimizer_state), 2 * 4 * 58);
      QCOMPARE(ledger->live_bytes() - before, 2 * 4 * 58);
      PhaseScope phase(Phase::optimizer);
      opt.step();
      QCOMPARE(opt.state().at("p0").at("step").item(), 1.0);
    }
    const Trace t = recorder.finish();
    std::vector<std::string> ops;
    for (std::int64_t k = 0; k < t.step_count(); ++k) ops.push_back(t.step(k).op);
    const std::vector<std::string> expected = {
        "_foreach_mul_", "_foreach_lerp_", "_foreach_mul_", "_foreach_addcmul_",
        "_foreach_sqrt", "_foreach_div_",  "_foreach_add_", "_foreach_addcdiv_"};
    QCOMPARE(ops, expected);
    // _foreach_sqrt allocates every parameter's temporary, in order; they go in reverse order.
    std::vector<std::int64_t> allocs, frees;
    for (std::int64_t i = 0; i < t.event_count(); ++i) {
      const TraceEvent e = t.event(i);
      if (e.step < 0 || e.category != MemoryCategory::temporary) continue;
      if (e.kind == TraceEventKind::alloc) {
        QCOMPARE(t.step(e.step).op, std::string("_foreach_sqrt"));
        allocs.push_back(e.bytes / 4);
      }
      if (e.kind == TraceEventKind::free) frees.push_back(e.bytes / 4);
    }
    QCOMPARE(allocs, numels);
    std::reverse(numels.begin(), numels.end());
    QCOMPARE(frees, numels);
  }

  // The dry run of a training step is its real run, event for event; so are its phases.
  void dryRunIsTheRealRun() {
    for (const char* file : {"mlp.json", "resnet.json", "gpt_mini.json"}) {
      const auto model = sample(file);
      for (OptimizerKind kind : {OptimizerKind::momentum, OptimizerKind::adamw}) {
        const RunResult real = run(model, kind);
        const RunResult dry = run(model, kind, true);
        QVERIFY2(real.ok && dry.ok, (real.error + dry.error).c_str());
        const std::string diff = first_difference(real.trace, dry.trace);
        QVERIFY2(diff.empty(), (std::string(file) + ": " + diff).c_str());
        const StepPhases a = step_phases(real.trace), b = step_phases(dry.trace);
        QCOMPARE(a.start, b.start);
        QCOMPARE(a.peak_forward_backward, b.peak_forward_backward);
        QCOMPARE(a.after_backward, b.after_backward);
        QCOMPARE(a.peak_optimizer_step, b.peak_optimizer_step);
      }
    }
  }

  // The step's phases: memory before the first op, the forward and backward's peak, what is
  // live after backward (gradients, not the outputs, which a training step does not hold),
  // and the step's own peak.
  void stepPhases() {
    const auto model = sample("mlp.json");
    const RunResult none = run(model, OptimizerKind::none);
    const StepPhases plain = step_phases(none.trace);
    QVERIFY(!plain.has_optimizer_step);
    QCOMPARE(plain.peak_forward_backward, none.trace.peak().bytes);
    QCOMPARE(plain.after_backward, none.trace.total_at(none.trace.step_count() - 1));
    const RunResult r = run(model, OptimizerKind::momentum);
    const StepPhases p = step_phases(r.trace);
    const auto sizes = trainable_bytes(*model);
    const std::int64_t params = std::accumulate(sizes.begin(), sizes.end(), std::int64_t{0});
    QCOMPARE(p.start, plain.start + params);  // plus the momentum buffers
    // After backward: parameters, state, gradients and inputs only (outputs and loss dropped).
    const CategoryBytes at =
        r.trace.memory_at(r.trace.step_count() - static_cast<std::int64_t>(sizes.size()) - 1);
    QCOMPARE(p.after_backward, std::accumulate(at.begin(), at.end(), std::int64_t{0}));
    QCOMPARE(category(at, MemoryCategory::temporary), std::int64_t{0});
    QCOMPARE(category(at, MemoryCategory::gradient), params);
    // The result still has the outputs' and the loss's values.
    QVERIFY(!r.outputs.empty() && r.outputs[0].defined());
    QCOMPARE(r.loss.item(), none.loss.item());
    // The summary prints the phases and counts the optimizer's executions.
    const RunSummary s = summarize(*model, r, "x");
    const std::string text = summary_text(s);
    QVERIFY(text.find("peak optimizer step") != std::string::npos);
    QVERIFY(summary_text(summarize(*model, none, "x")).find("step phases") == std::string::npos);
    QVERIFY(summary_json(s).find("\"peak_optimizer_step\"") != std::string::npos);
    QCOMPARE(s.total_executions(), r.trace.step_count());
  }

  void noBackwardNoOptimizer() {
    const auto model = sample("mlp.json");
    RunRequest r = scenario_request(*model);
    r.settings.optimizer.kind = OptimizerKind::adam;
    r.settings.backward = false;
    const RunResult res = Runner(model).run(r);
    QVERIFY(!res.ok);
    QVERIFY2(res.error.find("without backward") != std::string::npos, res.error.c_str());
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, optimizer_from_name("lamb"));
    OptimizerSettings bad{OptimizerKind::sgd, -1.0, std::nullopt};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, optimizer_hyper(bad));
  }
};

QTEST_GUILESS_MAIN(TestOptimizer)
#include "test_optimizer.moc"
