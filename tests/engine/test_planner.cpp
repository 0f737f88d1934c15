// Planning (issue 12): optimal equals brute force, every strategy's plan respects its budget in
// an evaluated run, the frontier has no dominated point, budgets parse, and an impossible budget
// names the lowest reachable peak.
#include <QtTest>

#include "engine/model/loader.hpp"
#include "engine/model/module_range.hpp"
#include "engine/plan/planner.hpp"
#include "engine/run/runner.hpp"

using namespace ckpt;

namespace {

std::shared_ptr<const Model> plan_model(const std::string& name) {
  return load_model(
      (qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/tests/engine/data/plan/").toStdString() +
      name + ".json");
}

// A sample of samples/ and its scenario's settings with the non-reentrant checkpoint (the
// variant per-op policies and PyTorch 2.x's default use).
std::shared_ptr<const Model> sample_model(const std::string& name) {
  return load_model((qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/samples/").toStdString() +
                    name + ".json");
}

RunSettings non_reentrant(const Model& m) {
  RunSettings settings = scenario_request(m).settings;
  settings.use_reentrant = false;
  return settings;
}

// Every valid subset of the candidates evaluated: the least recompute among those that fit.
std::int64_t brute_force(Planner& planner, std::int64_t budget, std::int64_t* subsets) {
  const auto& items = planner.candidates().items;
  const auto n = items.size();
  std::int64_t best = -1;
  *subsets = 0;
  for (std::uint32_t mask = 0; mask < (1u << n); ++mask) {
    std::vector<int> chosen;
    bool valid = true;
    for (std::size_t i = 0; i < n; ++i) {
      if (!(mask & (1u << i))) continue;
      for (int j : chosen)
        valid = valid && compatible(items[i], items[static_cast<std::size_t>(j)]);
      chosen.push_back(static_cast<int>(i));
    }
    if (!valid) continue;
    ++*subsets;
    const PlanPoint p = planner.point(Strategy::optimal, chosen, budget);
    if (p.fits && (best < 0 || p.eval.cost_ns() < best)) best = p.eval.cost_ns();
  }
  return best;
}

}  // namespace

class TestPlanner : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { QVERIFY2(!qEnvironmentVariableIsEmpty("CKPTLAB_SOURCE_DIR"), "ctest"); }

  void optimalEqualsBruteForce_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<int>("depth");
    QTest::addColumn<bool>("ranges");
    QTest::addColumn<int>("max_ranges");
    QTest::newRow("chain_unequal, blocks and ranges") << "chain_unequal" << 0 << true << 4;
    QTest::newRow("nested_blocks, nesting") << "nested_blocks" << 1 << false << 0;
    QTest::newRow("nested_blocks, nesting and ranges") << "nested_blocks" << 1 << true << 3;
    QTest::newRow("dropout_mlp, RNG stash") << "dropout_mlp" << 0 << true << 4;
    QTest::newRow("conv_stack, BatchNorm") << "conv_stack" << 0 << true << 3;
    QTest::newRow("wide_narrow, ranges") << "wide_narrow" << 0 << true << 4;
  }
  void optimalEqualsBruteForce() {
    QFETCH(QString, model);
    QFETCH(int, depth);
    QFETCH(bool, ranges);
    QFETCH(int, max_ranges);
    PlanEvaluator ev(plan_model(model.toStdString()),
                     scenario_request(*plan_model(model.toStdString())).settings);
    Planner planner(ev, CandidateOptions{depth, ranges, max_ranges});
    const auto n = planner.candidates().items.size();
    QVERIFY2(n >= 5 && n <= 14, qPrintable(QString::number(n)));
    // The candidates' costs differ: no plan ties by construction.
    std::set<std::int64_t> costs;
    for (const auto& c : planner.candidates().items) costs.insert(c.recompute_ns);
    QVERIFY(costs.size() > 3);
    const std::int64_t plain = ev.baseline().peak_bytes;
    const std::int64_t lowest = planner.lowest().eval.peak_bytes;
    QVERIFY2(lowest < plain, "checkpointing lowers the peak");
    for (double share : {0.0, 0.3, 0.6, 0.9, 1.0}) {
      const auto budget =
          lowest + static_cast<std::int64_t>(share * static_cast<double>(plain - lowest));
      std::int64_t subsets = 0;
      const std::int64_t best = brute_force(planner, budget, &subsets);
      const PlanPoint p = planner.plan(Strategy::optimal, budget);
      QVERIFY2(best >= 0, "the lowest plan fits its own peak");
      QVERIFY2(p.fits, p.note.c_str());
      QVERIFY(p.exact);
      QVERIFY(p.eval.peak_bytes <= budget);
      QVERIFY2(p.eval.recompute_ns == best,
               qPrintable(QString("budget %1: optimal %2 ns (%3), brute force %4 ns over %5 plans")
                              .arg(budget)
                              .arg(p.eval.recompute_ns)
                              .arg(QString::fromStdString(plan_text(p)))
                              .arg(best)
                              .arg(subsets)));
    }
  }

  // Per-op policies chosen per region (issue 28): each region's with_policy twin costs what its
  // evaluated run recomputes (the policy's outputs are handed back, not computed) and frees
  // less than recomputing the region whole.
  void policyTwinsCostWhatTheirRunsRecompute() {
    auto m = sample_model("gpt_mini");
    RunSettings settings = non_reentrant(*m);
    const SelectivePolicy save_mm = SelectivePolicy::parse("save:mm");
    PlanEvaluator ev(m, settings, save_mm);
    Planner planner(ev, CandidateOptions{1, false, 0});
    const auto& items = planner.candidates().items;
    int twins = 0;
    for (std::size_t i = 0; i < items.size(); ++i) {
      const Candidate& c = items[i];
      if (!c.with_policy) continue;
      ++twins;
      const Candidate& whole = items[static_cast<std::size_t>(c.twin)];
      QCOMPARE(whole.twin, static_cast<int>(i));
      QVERIFY(!compatible(c, whole));  // one region, one way
      QVERIFY(c.policy_kept_bytes > 0);
      QVERIFY(c.recompute_ns < whole.recompute_ns);
      QVERIFY(c.recompute_ops < whole.recompute_ops);
      const PlanPoint kept = planner.point(Strategy::optimal, {static_cast<int>(i)}, INT64_MAX);
      const PlanPoint recomputed = planner.point(Strategy::optimal, {c.twin}, INT64_MAX);
      QVERIFY2(kept.eval.ok && recomputed.eval.ok, c.label.c_str());
      QVERIFY(kept.plan.policy_for(c.label) == save_mm);
      QVERIFY(recomputed.plan.policy_for(c.label).empty());
      QVERIFY2(kept.eval.recompute_ops == c.recompute_ops,
               (c.label + " " + std::to_string(kept.eval.recompute_ops) + " " +
                std::to_string(c.recompute_ops) + " " + std::to_string(whole.recompute_ops))
                   .c_str());
      QVERIFY2(kept.eval.recompute_ns == c.recompute_ns, c.label.c_str());
      QVERIFY2(recomputed.eval.recompute_ops == whole.recompute_ops, c.label.c_str());
      QVERIFY2(kept.eval.saved_bytes > recomputed.eval.saved_bytes, c.label.c_str());
    }
    QCOMPARE(twins, 12);  // 4 blocks, their attn and mlp: each has a linear
  }

  // Offered a policy, the planner chooses per region: at 60 % of GPT mini's peak some regions
  // keep their matmuls and some are recomputed whole, for no more recompute than without the
  // policy; the fixed strategies give it to every region they choose.
  void plannerChoosesThePolicyPerRegion() {
    auto m = sample_model("gpt_mini");
    RunSettings settings = non_reentrant(*m);
    PlanEvaluator offered(m, settings, SelectivePolicy::parse("save:mm"));
    PlanEvaluator whole(m, settings);
    Planner with(offered), without(whole);
    const std::int64_t budget = whole.baseline().peak_bytes * 6 / 10;
    const PlanPoint p = with.plan(Strategy::optimal, budget);
    const PlanPoint q = without.plan(Strategy::optimal, budget);
    QVERIFY2(p.fits && q.fits, (plan_text(p) + " / " + plan_text(q)).c_str());
    QVERIFY2(p.eval.recompute_ns <= q.eval.recompute_ns,
             (plan_text(p) + " / " + plan_text(q)).c_str());
    std::size_t under = 0, regions = p.plan.modules.size() + p.plan.ranges.size();
    for (const auto& path : p.plan.modules) under += p.plan.policy_for(path).empty() ? 0 : 1;
    for (const auto& [a, b] : p.plan.ranges)
      under += p.plan.policy_for(range_label(a, b)).empty() ? 0 : 1;
    QVERIFY2(under > 0 && under < regions, plan_text(p).c_str());
    // The plan says each region's policy itself: run by an evaluator offered none, it is the
    // same run.
    const Evaluation again = whole.evaluate(p.plan);
    QCOMPARE(again.peak_bytes, p.eval.peak_bytes);
    QCOMPARE(again.recompute_ops, p.eval.recompute_ops);
    // A policy keeps more: offering one never raises the lowest peak the planner reaches.
    QVERIFY(with.lowest().eval.peak_bytes <= without.lowest().eval.peak_bytes);
    const PlanPoint all = with.fixed(Strategy::all);
    for (const auto& path : all.plan.modules) QVERIFY(!all.plan.policy_for(path).empty());
    QVERIFY(!all.plan.modules.empty());
  }

  // Offload as a third choice (issue 28), on a GPU: every module has an offload twin that
  // recomputes nothing, shares its ops with no other chosen region, and whose evaluated run
  // costs the copies the run made, to host and back, at the link's bandwidth.
  void offloadTwinsCostTheirCopies() {
    auto m = sample_model("gpt_mini");
    RunSettings settings = non_reentrant(*m);
    settings.device = Device::cuda;
    settings.pcie_gb_per_s = 16;
    PlanEvaluator ev(m, settings, {}, nullptr, false, true);
    QVERIFY(ev.gpu_times());
    CandidateOptions options{1, true, 16};
    options.offload = true;
    Planner planner(ev, options);
    const auto& items = planner.candidates().items;
    int twins = 0;
    for (std::size_t i = 0; i < items.size(); ++i) {
      const Candidate& c = items[i];
      if (!c.offload) continue;
      ++twins;
      const Candidate& module = items[static_cast<std::size_t>(c.twin)];
      QVERIFY(!module.is_range && !module.offload);
      QCOMPARE(c.label, module.label);
      QCOMPARE(c.recompute_ns, std::int64_t{0});
      QVERIFY(c.transfer_ns > 0);
      for (const Candidate& other : items)
        if (&other != &c && other.first_op < c.end_op && c.first_op < other.end_op)
          QVERIFY2(!compatible(c, other), (c.label + " / " + other.label).c_str());
      const PlanPoint p = planner.point(Strategy::optimal, {static_cast<int>(i)}, INT64_MAX);
      QVERIFY2(p.eval.ok, p.eval.error.c_str());
      QCOMPARE(p.plan.offload, std::set<std::string>{c.label});
      QVERIFY(p.plan.modules.empty());
      QCOMPARE(p.eval.recompute_ops, std::int64_t{0});
      // The run's own figures: every byte copied each way, at 16 GB/s (16 bytes per ns).
      RunRequest dry = ev.request(p.plan);
      dry.settings.dry_run = true;  // no GPU here: the device's bytes, copies included, exactly
      const RunResult r = Runner(m).run(dry);
      QVERIFY2(r.ok, r.error.c_str());
      QVERIFY(r.offload.has_value());
      const auto copied = r.offload->to_host_bytes + r.offload->to_device_bytes;
      QVERIFY(copied >= 2 * c.kept_bytes);
      QVERIFY2(std::abs(p.eval.transfer_ns - copied / 16) <= 1,
               (c.label + " " + std::to_string(p.eval.transfer_ns)).c_str());
      QCOMPARE(p.eval.cost_ns(), p.eval.transfer_ns);
      QVERIFY(p.eval.saved_bytes < ev.baseline().saved_bytes);
    }
    QCOMPARE(twins, 24);  // every module of gpt_mini's 4 blocks, their children's included
  }

  // The planner weighs offload against recompute by their time: copies all but free (a link
  // of 100 TB/s), it offloads instead of recomputing; copies at 0.01 GB/s, it recomputes, the
  // same plan as with no offload offered. Either way never costlier than not offering it.
  void plannerWeighsOffloadAgainstRecompute() {
    auto m = sample_model("gpt_mini");
    RunSettings settings = non_reentrant(*m);
    settings.device = Device::cuda;
    settings.batch = 64;
    auto plan_at = [&](double gb_per_s, bool offload) {
      RunSettings s = settings;
      s.pcie_gb_per_s = gb_per_s;
      auto ev = std::make_unique<PlanEvaluator>(m, s, SelectivePolicy{}, nullptr, false, true);
      CandidateOptions options;
      options.offload = offload;
      Planner planner(*ev, options);
      const PlanPoint p = planner.plan(Strategy::optimal, ev->baseline().peak_bytes * 7 / 10);
      return std::make_pair(p, std::move(ev));
    };
    const auto [fast, fast_ev] = plan_at(1e5, true);
    const auto [slow, slow_ev] = plan_at(0.01, true);
    const auto [none, none_ev] = plan_at(0.01, false);
    QVERIFY2(fast.fits && slow.fits && none.fits,
             (plan_text(fast) + " / " + plan_text(slow) + " / " + plan_text(none)).c_str());
    QVERIFY2(!fast.plan.offload.empty(), plan_text(fast).c_str());
    QVERIFY2(fast.eval.cost_ns() < none.eval.cost_ns(),
             (plan_text(fast) + " / " + plan_text(none)).c_str());
    QVERIFY2(slow.plan.offload.empty(), plan_text(slow).c_str());
    QVERIFY2(slow.eval.cost_ns() <= none.eval.cost_ns(),
             (plan_text(slow) + " / " + plan_text(none)).c_str());
    QCOMPARE(slow.eval.transfer_ns, std::int64_t{0});
  }

  void recomputeCostIsTheSumOfTheCandidates() {
    auto model = plan_model("nested_blocks");
    PlanEvaluator ev(model, scenario_request(*model).settings);
    Planner planner(ev, CandidateOptions{1, true, 3});
    const auto& items = planner.candidates().items;
    for (std::size_t i = 0; i < items.size(); ++i)
      for (std::size_t j = i; j < items.size(); ++j) {
        if (!compatible(items[i], items[j])) continue;
        std::vector<int> chosen{static_cast<int>(i)};
        if (j != i) chosen.push_back(static_cast<int>(j));
        const PlanPoint p = planner.point(Strategy::optimal, chosen, INT64_MAX);
        QVERIFY2(p.eval.ok, p.eval.error.c_str());
        const std::int64_t sum = items[i].recompute_ns + (j != i ? items[j].recompute_ns : 0);
        QVERIFY2(p.eval.recompute_ns == sum, plan_text(p).c_str());
      }
  }

  void everyStrategyRespectsItsBudget_data() {
    QTest::addColumn<QString>("model");
    for (const char* m :
         {"chain_unequal", "nested_blocks", "dropout_mlp", "conv_stack", "wide_narrow"})
      QTest::newRow(m) << m;
  }
  void everyStrategyRespectsItsBudget() {
    QFETCH(QString, model);
    auto m = plan_model(model.toStdString());
    PlanEvaluator ev(m, scenario_request(*m).settings);
    Planner planner(ev, CandidateOptions{1, true, 4});
    const std::int64_t plain = ev.baseline().peak_bytes;
    const std::int64_t lowest = planner.lowest().eval.peak_bytes;
    for (double share : {0.2, 0.5, 0.8}) {
      const auto budget =
          lowest + static_cast<std::int64_t>(share * static_cast<double>(plain - lowest));
      for (Strategy s : kStrategies) {
        const PlanPoint p = planner.plan(s, budget);
        const std::string what = std::string(strategy_name(s)) + ": " + plan_text(p) + " " + p.note;
        if (!p.eval.ok) {  // conv_stack's all: reentrant, and x does not require grad
          QVERIFY2(p.note.find("does not run") != std::string::npos, what.c_str());
          continue;
        }
        // Judged by a run: the evaluation of the very config it returns.
        QCOMPARE(ev.evaluate(p.plan).peak_bytes, p.eval.peak_bytes);
        if (p.fits) {
          QVERIFY2(p.eval.peak_bytes <= budget, what.c_str());
        } else {
          QVERIFY2(p.note.find("lowest peak reached") != std::string::npos, what.c_str());
        }
      }
      // Optimal reaches any budget the lowest plan reaches (greedy and knapsack may not).
      QVERIFY(planner.plan(Strategy::optimal, budget).fits);
    }
  }

  void frontierHasNoDominatedPoint() {
    auto m = plan_model("chain_unequal");
    PlanEvaluator ev(m, scenario_request(*m).settings);
    Planner planner(ev);
    const auto points = planner.sweep(ev.baseline().peak_bytes * 8 / 10);
    QVERIFY(points.size() >= 6);
    const auto front = pareto_frontier(points);
    QVERIFY(front.size() >= 2);
    for (const auto& a : front)
      for (const auto& b : points) QVERIFY2(!dominates(b, a), plan_text(a).c_str());
    // Each point left out is beaten (or equalled) by one on the frontier.
    for (const auto& p : points) {
      bool covered = false;
      for (const auto& f : front)
        covered = covered || (f.eval.peak_bytes <= p.eval.peak_bytes &&
                              f.eval.recompute_ns <= p.eval.recompute_ns);
      QVERIFY2(covered, plan_text(p).c_str());
    }
    for (std::size_t i = 1; i < front.size(); ++i) {
      QVERIFY(front[i].eval.peak_bytes > front[i - 1].eval.peak_bytes);
      QVERIFY(front[i].eval.recompute_ns < front[i - 1].eval.recompute_ns);
    }
  }

  // Issue 28: optimal at a budget is never worse than a plan already evaluated that fits it, by
  // whatever strategy; after a sweep no point shown (nor any plan evaluated) beats an optimal
  // point, and the frontier stars no point another one beats or equals. Small candidate sets
  // (the exact search) and large ones (the peak model's search), both variants.
  void optimalIsNeverWorseThanAnEvaluatedPlan_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<bool>("reentrant");
    QTest::newRow("chain_unequal (exact)") << "tests/engine/data/plan/chain_unequal.json" << true;
    QTest::newRow("densenet_block (search)") << "samples/densenet_block.json" << true;
    QTest::newRow("resnet (search, non-reentrant)") << "samples/resnet.json" << false;
    QTest::newRow("gpt_mini (search, non-reentrant)") << "samples/gpt_mini.json" << false;
  }
  void optimalIsNeverWorseThanAnEvaluatedPlan() {
    QFETCH(QString, file);
    QFETCH(bool, reentrant);
    auto m = load_model((qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/" + file).toStdString());
    RunSettings settings = scenario_request(*m).settings;
    settings.use_reentrant = reentrant;
    PlanEvaluator ev(m, settings);
    Planner planner(ev);
    const std::int64_t plain = ev.baseline().peak_bytes;
    const auto points = planner.sweep(plain * 7 / 10);
    const auto front = pareto_frontier(points);
    const auto& evaluated = planner.evaluated();
    QVERIFY(evaluated.size() >= 5);
    for (const auto& q : points) {
      if (q.strategy != Strategy::optimal || !q.eval.ok) continue;
      for (const auto& p : evaluated)
        QVERIFY2(
            !(p.eval.peak_bytes <= q.eval.peak_bytes && p.eval.recompute_ns < q.eval.recompute_ns),
            qPrintable(QString("%1 (%2) beats optimal %3 (%4)")
                           .arg(QString::fromStdString(plan_text(p)))
                           .arg(p.eval.recompute_ns)
                           .arg(QString::fromStdString(q.detail))
                           .arg(q.eval.recompute_ns)));
    }
    // Asked again at any evaluated plan's peak, optimal answers that plan or a cheaper one.
    const auto so_far = evaluated;
    for (const auto& p : so_far) {
      const PlanPoint q = planner.plan(Strategy::optimal, p.eval.peak_bytes);
      QVERIFY2(q.fits, q.note.c_str());
      QVERIFY2(q.eval.recompute_ns <= p.eval.recompute_ns, plan_text(p).c_str());
    }
    // Larger budgets, no costlier plans.
    std::int64_t last = INT64_MAX;
    for (int k = 0; k <= 10; ++k) {
      const std::int64_t low = planner.lowest().eval.peak_bytes;
      const PlanPoint q = planner.plan(Strategy::optimal, low + (plain - low) * k / 10);
      QVERIFY(q.fits);
      QVERIFY2(q.eval.recompute_ns <= last, qPrintable(QString::number(k)));
      last = q.eval.recompute_ns;
    }
    // The frontier: nothing beats a starred point, no two starred points are the same figures.
    for (const auto& f : front) {
      for (const auto& p : points) QVERIFY2(!dominates(p, f), plan_text(f).c_str());
      int same = 0;
      for (const auto& g : front)
        same +=
            g.eval.peak_bytes == f.eval.peak_bytes && g.eval.recompute_ns == f.eval.recompute_ns;
      QCOMPARE(same, 1);
    }
  }

  void impossibleBudgetNamesTheLowestPeak() {
    auto m = plan_model("wide_narrow");
    PlanEvaluator ev(m, scenario_request(*m).settings);
    Planner planner(ev);
    const PlanPoint p = planner.plan(Strategy::optimal, 1000);
    QVERIFY(!p.fits);
    const PlanPoint& low = planner.lowest();
    QVERIFY2(p.note.find("fits 1000 B") != std::string::npos, p.note.c_str());
    QVERIFY2(p.note.find(std::to_string(low.eval.peak_bytes) + " bytes") != std::string::npos ||
                 p.note.find(plan_text(low)) != std::string::npos,
             p.note.c_str());
    QVERIFY(p.note.find(plan_text(low)) != std::string::npos);
  }

  void budgetsParse() {
    QCOMPARE(parse_budget("2GiB", 0), std::int64_t{2} << 30);
    QCOMPARE(parse_budget("300MiB", 0), std::int64_t{300} << 20);
    QCOMPARE(parse_budget("1.5GB", 0), std::int64_t{1500000000});
    QCOMPARE(parse_budget("4096", 0), std::int64_t{4096});
    QCOMPARE(parse_budget("60%", 1000), std::int64_t{600});
    for (const char* bad : {"", "GiB", "-3MiB", "0", "12 parsecs", "60%%", "nan"})
      QVERIFY_THROWS_EXCEPTION(std::invalid_argument, parse_budget(bad, 1000));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, strategy_from_name("rotor"));
    for (Strategy s : kStrategies) QCOMPARE(strategy_from_name(strategy_name(s)), s);
  }
};

QTEST_GUILESS_MAIN(TestPlanner)
#include "test_planner.moc"
