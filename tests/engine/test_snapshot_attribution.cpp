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
    CheckpointConfig config;
    config.dry_run = true;
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
  }
};

QTEST_GUILESS_MAIN(TestSnapshotAttribution)
#include "test_snapshot_attribution.moc"
