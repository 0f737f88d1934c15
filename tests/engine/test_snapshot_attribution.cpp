// Measured allocations attributed to the model's modules (engine/report/snapshot_attribution):
// the GPU oracle's ResNet snapshot against the engine's dry run of the same sample.
#include <QtTest>

#include "engine/model/loader.hpp"
#include "engine/report/snapshot_attribution.hpp"
#include "engine/run/runner.hpp"
#include "engine/snapshot/memory_snapshot.hpp"

using namespace ckpt;

class TestSnapshotAttribution : public QObject {
  Q_OBJECT
 private slots:
  void resnet() {
    const std::string root = qEnvironmentVariable("CKPTLAB_SOURCE_DIR").toStdString();
    const MemorySnapshot s =
        read_memory_snapshot(root + "/tests/engine/data/snapshots/resnet__plain.pickle");
    const MeasuredTimeline t = measure_timeline(s);
    std::shared_ptr<const Model> model = load_model(root + "/samples/resnet.json");
    RunRequest config;
    config.settings.dry_run = true;
    const RunResult r = Runner(model).run(config);
    QVERIFY2(r.ok, r.error.c_str());
    const SnapshotAttribution a = attribute_snapshot(s, t, r.trace, *model);
    QCOMPARE(a.by_event.size(), s.device_traces[0].size());
    QCOMPARE(a.allocs, std::int64_t{378});
    // The step builds the model inside the recording: every parameter is found, in order.
    QCOMPARE(a.parameters, static_cast<std::int64_t>(model->parameters.size()));
    QVERIFY2(a.matched >= 340, qPrintable(QString::number(a.matched)));
    // What was live at the peak: a conv weight, and an activation the engine also made.
    int parameters = 0, activations = 0;
    for (const MeasuredAllocation& m : t.live_at_peak) {
      const AllocationOwner* o = a.owner(m);
      if (!o) continue;
      QVERIFY(model->find_module(o->module) || o->module.empty());
      if (o->parameter) {
        QVERIFY(model->find_parameter(o->node));
        QCOMPARE(model->find_parameter(o->node)->initial.nbytes(), m.requested);
        ++parameters;
      } else {
        QVERIFY(o->step >= 0 && o->step < r.trace.step_count());
        QCOMPARE(o->node, r.trace.step_node(o->step));
        ++activations;
      }
    }
    QVERIFY(parameters > 50 && activations > 10);
    const auto first = std::find_if(t.live_at_peak.begin(), t.live_at_peak.end(),
                                    [&](const auto& m) { return a.owner(m) != nullptr; });
    QCOMPARE(a.owner(*first)->node, std::string("stage4.1.conv1.weight"));
    QCOMPARE(a.owner(*first)->module, std::string("stage4.1.conv1"));

    // The measured curve on the engine's steps: x never goes back, stays in [0, 1], each
    // attributed event sits at its twin's step, and the measured peak (in the backward on the
    // GPU) lands in the engine's backward too.
    const OverlayCurve c = allocated_curve_on_steps(t, a, r.trace);
    QCOMPARE(c.x.size(), t.allocated.size() + 1);
    for (std::size_t i = 1; i < c.x.size(); ++i) {
      QVERIFY(c.x[i] >= c.x[i - 1]);
      QVERIFY(c.x[i] >= 0 && c.x[i] <= 1);
    }
    const double steps = static_cast<double>(r.trace.step_count());
    for (std::size_t i = 0; i < a.by_event.size(); ++i)
      if (a.by_event[i].matched && !a.by_event[i].parameter)
        QCOMPARE(c.x[i + 1], (static_cast<double>(a.by_event[i].step) + 0.5) / steps);
    QCOMPARE(c.peak_bytes, t.peak_allocated - t.start_allocated);
    QVERIFY(c.peak_x > (static_cast<double>(r.trace.forward_end()) + 0.5) / steps);
  }
};

QTEST_GUILESS_MAIN(TestSnapshotAttribution)
#include "test_snapshot_attribution.moc"
