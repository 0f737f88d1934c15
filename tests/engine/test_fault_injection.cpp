// Fault injection (issue 17): the ledger fails the k-th allocation of a run, for k swept over
// setup, forward, recompute and backward of both checkpoint variants. Each failure must be a
// named error, leave nothing allocated, and leave the process able to run again with the same
// peak as an undisturbed run.
#include <QtTest>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include "engine/autograd/execution_context.hpp"
#include "engine/model/loader.hpp"
#include "engine/run/runner.hpp"
#include "tests/engine/support/sample_configs.hpp"

using namespace ckpt;

namespace {

std::string sample(const char* name) {
  return (qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/samples/" + name).toStdString();
}

// Where an undisturbed run made its k-th allocation: the phase, and the op when one was open
// (which a failure there has to name), as the run's context saw it at that moment.
struct Site {
  Phase phase = Phase::setup;
  std::string op;  // ExecutionContext::location(), empty outside any op
};

// Records the site of every allocation of a fresh ledger (numbered 1, 2, ... as requested).
class SiteRecorder final : public AllocationListener {
 public:
  std::map<std::int64_t, Site> sites;
  void on_allocation(const AllocationEvent& e) override {
    if (e.kind != AllocationEvent::Kind::alloc) return;
    const auto context = ExecutionContext::current();
    sites[static_cast<std::int64_t>(e.allocation)] = Site{context->phase(), context->location()};
  }
};

// The allocations to fail: the first and last of each phase, and every stride-th in between,
// so that a sanitized run stays short while every phase boundary is covered.
std::set<std::int64_t> picks(const std::map<std::int64_t, Site>& sites, std::int64_t stride) {
  std::set<std::int64_t> ks;
  std::map<Phase, std::pair<std::int64_t, std::int64_t>> bounds;
  for (const auto& [k, s] : sites) {
    auto [it, fresh] = bounds.try_emplace(s.phase, k, k);
    if (!fresh) it->second.second = k;
    if ((k - 1) % stride == 0) ks.insert(k);
  }
  for (const auto& [phase, b] : bounds) {
    ks.insert(b.first);
    ks.insert(b.second);
  }
  return ks;
}

struct Undisturbed {
  std::string error;  // empty when the run succeeded
  std::int64_t allocations = 0;
  std::int64_t peak = 0;
  std::map<std::int64_t, Site> sites;
};

Undisturbed undisturbed(const Runner& runner, RunRequest config) {
  config.hooks.ledger = std::make_shared<MemoryLedger>();
  SiteRecorder recorder;
  config.hooks.ledger->add_listener(&recorder);
  Undisturbed u;
  {
    const RunResult r = runner.run(config);
    u.error = r.ok ? std::string() : "undisturbed run failed: " + r.error;
  }
  config.hooks.ledger->remove_listener(&recorder);
  u.sites = std::move(recorder.sites);
  u.allocations = config.hooks.ledger->allocation_count();
  u.peak = config.hooks.ledger->peak_bytes();
  return u;
}

}  // namespace

class TestFaultInjection : public QObject {
  Q_OBJECT

  int cases_ = 0;

  // Fails allocation k of a run: the error names it and its op, and nothing stays allocated.
  void fail_at(const Runner& runner, RunRequest config, std::int64_t k, const Site& site) {
    config.hooks.ledger = std::make_shared<MemoryLedger>();
    config.hooks.fail_allocation_at = k;
    std::string error;
    {
      const RunResult r = runner.run(config);
      QVERIFY2(!r.ok, qPrintable(QString("allocation %1 was to fail").arg(k)));
      error = r.error;
    }
    const std::string expected = "injected allocation failure: allocation #" + std::to_string(k);
    QVERIFY2(error.find(expected) != std::string::npos, error.c_str());
    // Inside an op the op is named; outside one (a checkpoint stashing the RNG state) what the
    // bytes were for; only the run's own parameters and inputs are made outside any op.
    const bool named = site.op.empty() ? error.find(" for ") != std::string::npos ||
                                             (site.phase == Phase::setup &&
                                              error.find(" outside any op") != std::string::npos)
                                       : error.find(" in " + site.op) != std::string::npos;
    const std::string where = site.op.empty() ? "a purpose" : " in " + site.op;
    QVERIFY2(named, qPrintable(QString::fromStdString(error + " -- expected '" + where + "' (" +
                                                      phase_name(site.phase) + ")")));
    QVERIFY2(config.hooks.ledger->live_bytes() == 0 && config.hooks.ledger->live_allocations() == 0,
             qPrintable(QString("allocation %1 (%2, %3) failed and left %4 bytes in %5 "
                                "allocations")
                            .arg(k)
                            .arg(phase_name(site.phase))
                            .arg(QString::fromStdString(site.op))
                            .arg(config.hooks.ledger->live_bytes())
                            .arg(config.hooks.ledger->live_allocations())));
    ++cases_;
  }

  // About `cases` allocations spread evenly over the run, plus each phase's first and last.
  void sweep(const char* file, RunRequest base, std::int64_t cases) {
    base.settings.threads = 1;
    Runner runner(load_model(sample(file)));
    const Undisturbed u = undisturbed(runner, base);
    QVERIFY2(u.error.empty(), u.error.c_str());
    QVERIFY(u.allocations > 0);
    QCOMPARE(static_cast<std::int64_t>(u.sites.size()), u.allocations);
    std::set<Phase> phases;
    for (const auto& [k, s] : u.sites) phases.insert(s.phase);
    QVERIFY2(phases.count(Phase::recompute) == 1, "the configuration recomputes nothing");
    const std::set<std::int64_t> ks =
        picks(u.sites, std::max<std::int64_t>(1, u.allocations / cases));
    qInfo("%s: %lld allocations, %zu of them failed in turn", file,
          static_cast<long long>(u.allocations), ks.size());
    for (std::int64_t k : ks) {
      fail_at(runner, base, k, u.sites.at(k));
      if (QTest::currentTestFailed()) return;
      // The process runs again as if nothing had happened.
      const Undisturbed again = undisturbed(runner, base);
      QVERIFY2(again.error.empty(), again.error.c_str());
      QCOMPARE(again.peak, u.peak);
      QCOMPARE(again.allocations, u.allocations);
    }
    // One past the last allocation never fires: the run succeeds.
    RunRequest past = base;
    past.hooks.fail_allocation_at = u.allocations + 1;
    QVERIFY(runner.run(past).ok);
  }

 private slots:
  void densenetBlockReentrant() {
    Runner probe(load_model(sample("densenet_block.json")));
    // A reentrant checkpoint needs an input that requires grad (PyTorch 1.13 otherwise
    // gives the segment no gradient at all, and backward fails).
    RunRequest c = test::every_module(probe.model(), true);
    c.settings.input_requires_grad = true;
    c.settings.batch = 1;
    sweep("densenet_block.json", c, 16);
  }
  void densenetBlockNonReentrant() {
    Runner probe(load_model(sample("densenet_block.json")));
    RunRequest c = test::every_module(probe.model(), false);
    c.settings.batch = 1;
    sweep("densenet_block.json", c, 16);
  }
  void checkpointSequentialSegments() {
    Runner probe(load_model(sample("checkpoint_sequential.json")));
    RunRequest c = test::plain(probe.model());
    c.plan.segments = 4;
    sweep("checkpoint_sequential.json", c, 16);
  }
  void checkpointSequentialNonReentrant() {
    Runner probe(load_model(sample("checkpoint_sequential.json")));
    sweep("checkpoint_sequential.json", test::every_module(probe.model(), false), 16);
  }
  void cleanupTestCase() { qInfo("fault injection: %d failed runs checked", cases_); }
};

QTEST_GUILESS_MAIN(TestFaultInjection)
#include "test_fault_injection.moc"
