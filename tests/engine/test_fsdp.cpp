// FSDP2 per rank (issue 39): shard layouts computed by hand (odd sizes, padding, N that does
// not divide, tied weights) and which units' gathered parameters are live at each step of a
// run (the unit computing and the one prefetched, never more).
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <fstream>

#include "engine/model/loader.hpp"
#include "engine/report/fsdp_all_gather.hpp"
#include "engine/report/fsdp_memory.hpp"
#include "engine/report/run_report.hpp"
#include "engine/run/runner.hpp"
#include "tests/engine/support/sample_configs.hpp"

using namespace ckpt;

namespace {

std::string sample(const std::string& name) {
  return qEnvironmentVariable("CKPTLAB_SOURCE_DIR").toStdString() + "/samples/" + name;
}

RunResult dry_run(const std::shared_ptr<Model>& model, const RunSettings& base) {
  Runner runner(model);
  RunRequest c = test::plain(*model);
  const RunSettings keep = c.settings;
  c.settings = base;
  c.settings.seed = keep.seed;
  c.settings.threads = 1;
  c.settings.device = Device::cuda;
  c.settings.dry_run = true;
  RunResult r = runner.run(c);
  if (!r.ok) throw std::runtime_error(r.error);
  return r;
}

// llama_mini on 4 ranks with bf16 parameters and AdamW, dry on the cuda device: the model, the
// settings, the run and what one rank holds.
struct MiniOnFourRanks {
  std::shared_ptr<Model> model;
  RunSettings settings;
  RunResult run;
  FsdpRankMemory memory;
};

MiniOnFourRanks mini_on_four_ranks() {
  MiniOnFourRanks x;
  x.model = load_model(sample("llama_mini.json"));
  x.settings.param_dtype = DType::bf16;
  x.settings.fsdp.ranks = 4;
  x.settings.optimizer.kind = OptimizerKind::adamw;
  x.run = dry_run(x.model, x.settings);
  x.memory = fsdp_rank_memory(*x.model, x.run.trace, x.settings);
  return x;
}

std::size_t index_of(const std::vector<FsdpUnit>& units, const std::string& path) {
  for (std::size_t i = 0; i < units.size(); ++i)
    if (units[i].path == path) return i;
  return units.size();
}

}  // namespace

class TestFsdp : public QObject {
  Q_OBJECT

 private slots:
  // torch.chunk's rows: ceil(dim0 / N) per rank, the last ranks padded.
  void layoutsPadDimZero() {
    const auto a = fsdp_param_layout("w", {10, 3}, 4);  // 3 + 3 + 3 + 1 (+2 padding)
    QCOMPARE(a.rows_per_rank, std::int64_t{3});
    QCOMPARE(a.shard_numel, std::int64_t{9});
    QCOMPARE(a.numel, std::int64_t{30});
    const auto b = fsdp_param_layout("b", {7}, 8);  // fewer rows than ranks
    QCOMPARE(b.rows_per_rank, std::int64_t{1});
    QCOMPARE(b.shard_numel, std::int64_t{1});
    const auto c = fsdp_param_layout("w", {4096, 4096}, 8);  // divides
    QCOMPARE(c.shard_numel, std::int64_t{512} * 4096);
    const auto d = fsdp_param_layout("s", {}, 3);  // a scalar: one element each
    QCOMPARE(d.shard_numel, std::int64_t{1});
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, fsdp_param_layout("w", {2}, 0));
  }

  // llama_mini over 3 ranks, by hand: a block's 2 norms [64] (22 rows each), q and o [64, 64]
  // (22 × 64), k and v [32, 64] (11 × 64), gate and up [176, 64] (59 × 64), down [64, 176]
  // (22 × 176); the root holds the tied embedding [512, 64] (171 × 64) and the norm.
  void llamaMiniUnitsByHand() {
    const auto model = load_model(sample("llama_mini.json"));
    const auto units = fsdp_units(*model, 3);
    QCOMPARE(units.size(), std::size_t{5});
    for (int i = 0; i < 4; ++i) {
      QCOMPARE(units[static_cast<std::size_t>(i)].path, "layers." + std::to_string(i));
      QCOMPARE(units[static_cast<std::size_t>(i)].numel, std::int64_t{46208});
      QCOMPARE(units[static_cast<std::size_t>(i)].shard_numel,
               std::int64_t{2 * 22 + 2 * 22 * 64 + 2 * 11 * 64 + 2 * 59 * 64 + 22 * 176});
    }
    const FsdpUnit& root = units.back();
    QCOMPARE(root.path, std::string());
    QCOMPARE(root.numel, std::int64_t{512 * 64 + 64});
    QCOMPARE(root.shard_numel, std::int64_t{171 * 64 + 22});
    QCOMPARE(root.params.size(), std::size_t{2});  // the tied embedding once, and the norm
  }

  // A weight two blocks share belongs to the root's unit (FSDP2 shards it once, where both
  // blocks' common ancestor is).
  void sharedWeightGoesToTheRoot() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("shared.json").toStdString();
    std::ofstream(path) << R"({"format": "checkpoint-lab-model", "version": 1, "name": "shared",
      "batch": 2, "inputs": [{"name": "x", "shape": ["batch", 6]}],
      "model": {"type": "sequential", "layers": [
        {"type": "sequential", "name": "blocks", "layers": [
          {"type": "repeat", "count": 2, "shared": true,
           "body": {"type": "linear", "name": "tied", "in": 6, "out": 6}},
          {"type": "linear", "name": "own", "in": 6, "out": 6},
          {"type": "linear", "name": "own2", "in": 6, "out": 6}]}]}})";
    const auto model = load_model(path);
    const auto units = fsdp_units(*model, 4);
    const std::size_t root = units.size() - 1;
    QVERIFY(index_of(units, "blocks.own") < root);
    QVERIFY(index_of(units, "blocks.own2") < root);
    std::int64_t in_root = 0;
    for (const auto& p : units[root].params) in_root += p.numel;
    QCOMPARE(in_root, std::int64_t{6 * 6 + 6});  // tied.weight and tied.bias
    // own2.weight [6, 6] over 4 ranks: 2 rows each (2 padded), its bias [6]: 2.
    const auto& own2 = units[index_of(units, "blocks.own2")];
    QCOMPARE(own2.shard_numel, std::int64_t{2 * 6 + 2});
  }

  // FSDP2's all-gather buffers of a llama_mini block over 3 ranks, by hand (shard numels as in
  // llamaMiniUnitsByHand: 15,692 per block, padding included): the bf16 copy-in of the float32
  // shards (_get_param_all_gather_inputs), the flat output of 3 shards (foreach_all_gather) and
  // the per-parameter outputs the unsharded parameters view (init_all_gather_outputs).
  void allGatherBuffersByHand() {
    const auto model = load_model(sample("llama_mini.json"));
    const auto units = fsdp_units(*model, 3);
    const FsdpAllGatherBytes bf16 = fsdp_all_gather_bytes(units[1], 3, DType::bf16);
    QCOMPARE(bf16.copy_in, std::int64_t{15692 * 2});
    QCOMPARE(bf16.output, std::int64_t{3 * 15692 * 2});
    QCOMPARE(bf16.unsharded, std::int64_t{3 * 15692 * 2});  // 47,076 elements, 46,208 unpadded
    // Without a cast the shards themselves are the all-gather's input: no copy-in.
    const FsdpAllGatherBytes fp32 = fsdp_all_gather_bytes(units[1], 3, DType::f32);
    QCOMPARE(fp32.copy_in, std::int64_t{0});
    QCOMPARE(fp32.output, std::int64_t{3 * 15692 * 4});
    // The root: the tied embedding's 171 rows of 64 and the norm's 22, times 3.
    QCOMPARE(fsdp_all_gather_bytes(units.back(), 3, DType::bf16).output,
             std::int64_t{3 * (171 * 64 + 22) * 2});
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, fsdp_all_gather_bytes(units[0], 0, DType::f32));
  }

  // At every step the gathered blocks are the one computing (FSDP2 prefetches implicitly in
  // forward: the next block is all-gathered at its own pre_forward), and its flat all-gather
  // output is held until the next block's copy-out; in backward the previous block's flat
  // output is the one prefetched. Without resharding after forward, the blocks that have run
  // stay gathered until their backward, and nothing is all-gathered in backward.
  void gatheredBlocksAtEachStep() {
    auto [model, s, r, m] = mini_on_four_ranks();
    QCOMPARE(m.units.size(), std::size_t{5});
    const std::int64_t flat = fsdp_all_gather_bytes(m.units[0], 4, DType::bf16).output;
    const auto buffers = static_cast<std::size_t>(FsdpCategory::all_gather_buffers);
    std::size_t checked = 0, forward_held = 0, backward_prefetched = 0;
    for (std::int64_t k = 1; k < r.trace.step_count(); ++k) {
      const auto& g = m.gathered_by_step[static_cast<std::size_t>(k)];
      QVERIFY2(g.size() <= 1,
               qPrintable(QString("step %1: %2 blocks gathered").arg(k).arg(g.size())));
      const std::string& node = r.trace.step_node(k);
      const Phase ph = r.trace.step_phase(k);
      const bool same_as_before = r.trace.step_node(k - 1).substr(0, 9) == node.substr(0, 9);
      const std::int64_t held = m.timeline.by_step[static_cast<std::size_t>(k)][buffers];
      for (int b = 0; b < 4; ++b) {
        const std::string path = "layers." + std::to_string(b) + ".";
        if (node.rfind(path, 0) != 0 || ph == Phase::optimizer) continue;
        QVERIFY2(std::find(g.begin(), g.end(), b) != g.end(), node.c_str());
        ++checked;
        if (!same_as_before || r.trace.step_phase(k - 1) != ph) continue;  // a hook's step
        if (ph == Phase::forward) {
          QCOMPARE(held, flat);  // its own output, kept until the next copy-out
          ++forward_held;
        } else if (ph == Phase::backward) {
          QCOMPARE(held, b > 0 ? flat : 0);  // the previous block's, prefetched
          if (b > 0) ++backward_prefetched;
        }
      }
      if (ph == Phase::optimizer) {
        QVERIFY(g.empty());
        QCOMPARE(held, std::int64_t{0});
      }
    }
    QVERIFY(checked > 100);
    QVERIFY(forward_held > 20);
    QVERIFY(backward_prefetched > 20);

    s.fsdp.reshard_after_forward = false;
    const FsdpRankMemory kept = fsdp_rank_memory(*model, r.trace, s);
    const auto& at_end = kept.gathered_by_step[static_cast<std::size_t>(r.trace.forward_end())];
    QCOMPARE(at_end.size(), std::size_t{4});
    QVERIFY(kept.peak_bytes > m.peak_bytes);
  }

  // A rank's timeline, step by step (what the plot stacks): the gathered parameters are the
  // computing block's, the prefetched one's and the root's, in bf16; the reduce-scatter's
  // buffers exist only at the step that ends a unit's backward, (N + 1) shards in the reduce
  // dtype; the shard gradients only grow; the peak is the timeline's highest step.
  void rankTimelineByCategory() {
    auto [model, s, r, m] = mini_on_four_ranks();
    const RankTimeline& t = m.timeline;
    QCOMPARE(t.steps(), r.trace.step_count());
    QCOMPARE(t.ranks, 4);
    QCOMPARE(t.peak_bytes, m.peak_bytes);
    QCOMPARE(t.by_step[static_cast<std::size_t>(t.peak_step)], m.at_peak);
    const auto cat = [](FsdpCategory c) { return static_cast<std::size_t>(c); };
    const std::int64_t root = m.units.back().numel, block = m.units[0].numel;
    std::int64_t previous_grads = 0;
    int kept_input = 0, middle_forward = 0;
    const std::int64_t block3_input = 4 * m.units[3].shard_numel * 4;  // N padded shards, fp32
    for (std::int64_t k = 0; k < t.steps(); ++k) {
      const FsdpBytes& b = t.by_step[static_cast<std::size_t>(k)];
      QCOMPARE(t.totals[static_cast<std::size_t>(k)], fsdp_total(b));
      QVERIFY(t.totals[static_cast<std::size_t>(k)] <= t.peak_bytes);
      const std::string& node = r.trace.step_node(k);
      if (r.trace.step_phase(k) == Phase::forward && node.rfind("layers.1.", 0) == 0 &&
          r.trace.step_node(k - 1).rfind("layers.1.", 0) == 0) {
        // Over 4 ranks nothing is padded: block 1 and the root gathered, block 1's flat
        // all-gather output held, all in bf16.
        QCOMPARE(b[cat(FsdpCategory::unsharded_parameters)], 2 * (block + root));
        QCOMPARE(b[cat(FsdpCategory::all_gather_buffers)], 2 * block);
        ++middle_forward;
      }
      // Block 3's reduce-scatter input is kept through block 2's backward (comm_ctx's
      // reduce_scatter_state, freed by block 2's post_backward); nothing is left after.
      if (r.trace.step_phase(k) == Phase::backward && node.rfind("layers.2.", 0) == 0 &&
          r.trace.step_node(k + 1).rfind("layers.2.", 0) == 0) {
        QCOMPARE(b[cat(FsdpCategory::reduce_scatter)], block3_input);
        ++kept_input;
      }
      if (r.trace.step_phase(k) == Phase::optimizer)
        QCOMPARE(b[cat(FsdpCategory::reduce_scatter)], std::int64_t{0});
      QVERIFY(b[cat(FsdpCategory::sharded_gradients)] >= previous_grads);
      previous_grads = b[cat(FsdpCategory::sharded_gradients)];
    }
    QVERIFY(middle_forward > 5);
    QVERIFY(kept_input > 20);
    std::int64_t shards = 0;
    for (const auto& u : m.units) shards += u.shard_numel;
    QCOMPARE(previous_grads, 4 * shards);  // every shard's gradient made by the end
    // Block 3 (the last in forward, the first in backward) reduce-scatters first: its input
    // is 4 × its shard in float32, and its float32 output is the shard's gradient itself.
    std::int64_t first_rs = 0;
    for (const auto& b : t.by_step)
      if (!first_rs) first_rs = b[cat(FsdpCategory::reduce_scatter)];
    QCOMPARE(first_rs, block3_input);

    // The report's series is the rank's curve, the summary's peak its peak.
    RunRequest req = test::plain(*model);
    req.settings = s;
    const RunReport report = report_run(*model, req, r);
    QVERIFY(report.series && report.series->per_rank);
    QCOMPARE(report.series->totals, t.totals);
    QCOMPARE(report.series->peak_bytes, report.summary.per_rank->peak_bytes);
    QCOMPARE(report.series->peak_step, report.summary.per_rank->peak_step);
    QVERIFY(report.series->reserved.empty());
    // Unsharded, the series is the run's own.
    req.settings.fsdp = {};
    req.settings.param_dtype = DType::f32;
    QVERIFY(!report_run(*model, req, r).series->per_rank);
  }

  // --param-dtype bf16 runs for real on the CPU (issue 39): the embedding gathers bf16 rows and
  // sums its gradient in bf16, the loss reduces a bf16 input; the loss agrees with float32's to
  // bf16's precision, the real run allocates what its dry run does, and an optimizer's step on
  // bf16 parameters (which FSDP2 never makes: it steps on float32 shards) names the op that has
  // no bf16 kernel.
  void realBf16Run() {
    const auto model = load_model(sample("llama_mini.json"));
    Runner runner(model);
    RunRequest c = test::plain(*model);
    c.settings.threads = 1;
    const RunResult f32 = runner.run(c);
    QVERIFY2(f32.ok, f32.error.c_str());
    c.settings.param_dtype = DType::bf16;
    c.settings.fsdp.ranks = 4;
    const RunResult bf16 = runner.run(c);
    QVERIFY2(bf16.ok, bf16.error.c_str());
    QCOMPARE(bf16.loss.dtype(), DType::bf16);
    const double want = f32.loss.to_vector()[0], got = bf16.loss.to_vector()[0];
    QVERIFY2(std::fabs(got - want) <= 0.01 * std::fabs(want),
             qPrintable(QString("loss %1 in bf16, %2 in float32").arg(got).arg(want)));
    const Tensor& g = bf16.gradients.at("embed_tokens.weight");
    QCOMPARE(g.dtype(), DType::bf16);
    const auto gv = g.to_vector(), fv = f32.gradients.at("embed_tokens.weight").to_vector();
    double num = 0, den = 0;
    for (std::size_t i = 0; i < gv.size(); ++i) {
      num += (gv[i] - fv[i]) * (gv[i] - fv[i]);
      den += fv[i] * fv[i];
    }
    QVERIFY2(den > 0 && std::sqrt(num / den) < 0.05,
             qPrintable(QString("relative error %1").arg(std::sqrt(num / den))));
    RunRequest dry = c;
    dry.settings.dry_run = true;
    QCOMPARE(runner.run(dry).trace.peak().bytes, bf16.trace.peak().bytes);

    c.settings.optimizer.kind = OptimizerKind::adamw;
    const RunResult stepped = runner.run(c);
    QVERIFY(!stepped.ok);
    QVERIFY2(stepped.error.find("optimizer's step on the bfloat16 parameters of --param-dtype: "
                                "mul_ has no bfloat16 kernel") != std::string::npos,
             stepped.error.c_str());
    QVERIFY(stepped.error.find("--dry-run") != std::string::npos);
  }

  // The states: float32 shards, AdamW's two states per shard; more ranks, less each.
  void statesShrinkWithRanks() {
    const auto model = load_model(sample("llama_mini.json"));
    RunSettings s;
    s.param_dtype = DType::bf16;
    s.optimizer.kind = OptimizerKind::adamw;
    const RunResult r = dry_run(model, s);
    std::int64_t previous = 0;
    for (int n : {1, 2, 8}) {
      s.fsdp.ranks = n;
      const FsdpRankMemory m = fsdp_rank_memory(*model, r.trace, s);
      std::int64_t shards = 0;
      for (const auto& u : m.units) shards += u.shard_numel;
      std::int64_t buffers = 0;
      for (const auto& p : model->parameters)
        if (p.is_buffer) buffers += p.initial.nbytes();
      QCOMPARE(m.states[static_cast<std::size_t>(FsdpCategory::sharded_parameters)],
               4 * shards + buffers);
      QCOMPARE(m.states[static_cast<std::size_t>(FsdpCategory::optimizer_state)], 8 * shards);
      if (previous) QVERIFY(m.peak_bytes < previous);
      previous = m.peak_bytes;
    }
  }
};

QTEST_GUILESS_MAIN(TestFsdp)
#include "test_fsdp.moc"
