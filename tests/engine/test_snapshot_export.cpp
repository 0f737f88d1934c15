// The engine's trace written as a PyTorch memory snapshot (engine/trace/snapshot_export.cpp)
// reads back with the same events, through this project's reader and through Python's own
// pickle.load, and measures as the trace does.
#include <QtTest>

#include <QProcess>
#include <QTemporaryDir>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/autograd/execution_context.hpp"
#include "engine/ops/ops.hpp"
#include "engine/snapshot/measured_timeline.hpp"
#include "engine/snapshot/memory_snapshot.hpp"
#include "engine/trace/export.hpp"
#include "engine/trace/snapshot_compare.hpp"
#include "engine/trace/trace.hpp"

using namespace ckpt;

namespace {

// A small run: a parameter made before recording, an input, forward ops inside and outside a
// checkpointed segment, a loss and its backward.
Trace small_run() {
  auto ledger = std::make_shared<MemoryLedger>();
  ExecutionScope scope(ledger);
  Tensor w;
  {
    CategoryScope as_param(MemoryCategory::parameter);
    w = Tensor::full({64}, 0.5).set_requires_grad(true);
  }
  Recorder recorder(scope.context());
  {
    Tensor x;
    {
      CategoryScope as_input(MemoryCategory::input);
      x = Tensor::full({64}, 0.1);
    }
    PhaseScope fwd(Phase::forward);
    Tensor y = add(x, w);
    for (int i = 0; i < 20; ++i) y = i % 2 ? sin(y) : mul(y, w);
    scope.context().mark_checkpoint(true, "seg");
    {
      NoGradGuard no_grad;
      Tensor z = tanh(y);
      z = tanh(z);
    }
    scope.context().mark_checkpoint(false, "seg");
    Tensor loss = sum(y);
    loss.backward();
  }
  return recorder.finish();
}

std::int64_t rounded(std::int64_t b) {
  return b <= 0 ? 512 : (b + 511) / 512 * 512;
}

}  // namespace

class TestSnapshotExport : public QObject {
  Q_OBJECT
 private slots:
  void reads_back_with_the_same_events() {
    const Trace trace = small_run();
    std::ostringstream out;
    write_memory_snapshot(trace, out);
    const MemorySnapshot s = parse_memory_snapshot(out.str(), "ours.pickle");
    QCOMPARE(s.device_traces.size(), std::size_t{1});
    const auto& events = s.device_traces[0];
    // Each alloc is segment_alloc + alloc; each free free_requested + free_completed +
    // segment_free; a recategorize writes nothing.
    std::size_t k = 0;
    std::map<std::uint32_t, std::int64_t> address_of;
    std::int64_t allocs = 0, frees = 0;
    for (std::int64_t i = 0; i < trace.event_count(); ++i) {
      const TraceEvent e = trace.event(i);
      if (e.kind == TraceEventKind::recategorize) continue;
      QVERIFY(k < events.size());
      if (e.kind == TraceEventKind::alloc) {
        ++allocs;
        QCOMPARE(events[k].action, SnapshotAction::segment_alloc);
        QCOMPARE(events[k].size, rounded(e.bytes));
        QCOMPARE(events[k + 1].action, SnapshotAction::alloc);
        QCOMPARE(events[k + 1].size, e.bytes);
        QCOMPARE(events[k + 1].addr, events[k].addr);
        address_of[e.allocation] = events[k + 1].addr;
        // Its frames name the step's module, op and phase, then the category.
        const auto& frames = s.stack(events[k + 1].stack);
        QVERIFY(frames.size() >= 2);
        const SnapshotFrame& top = s.frames[frames.front()];
        if (e.step >= 0) {
          const TraceStep step = trace.step(e.step);
          QCOMPARE(top.line, e.step);
          QCOMPARE(top.name, step.op + " (" + phase_name(step.phase) + ")");
          QCOMPARE(top.filename, step.node.empty() ? std::string("<model>") : step.node);
        }
        QCOMPARE(s.frames[frames.back()].name,
                 std::string("category ") + category_name(e.category));
        k += 2;
      } else {
        ++frees;
        QCOMPARE(events[k].action, SnapshotAction::free_requested);
        QCOMPARE(events[k + 1].action, SnapshotAction::free_completed);
        QCOMPARE(events[k + 2].action, SnapshotAction::segment_free);
        QCOMPARE(events[k].size, e.bytes);
        if (address_of.count(e.allocation)) QCOMPARE(events[k].addr, address_of[e.allocation]);
        k += 3;
      }
      if (e.step >= 0) QCOMPARE(events[k - 1].time_us, trace.step(e.step).start_ns / 1000);
    }
    QCOMPARE(k, events.size());
    QVERIFY(allocs > 20 && frees > 10);
    // The checkpointed segment's steps say so in their frames.
    bool segment_frame = false;
    for (const auto& f : s.frames) segment_frame = segment_frame || f.filename == "checkpoint seg";
    QVERIFY(segment_frame);

    // Measured from the file: what the trace counts, each allocation rounded to 512 bytes as
    // a GPU would; the parameter made before recording is a block in `segments`.
    const MeasuredTimeline t = measure_timeline(s);
    QVERIFY2(t.exact, t.note.c_str());
    std::int64_t live = 0, peak = 0;
    std::map<std::uint32_t, std::int64_t> bytes;
    const CategoryBytes initial = trace.initial_memory();
    for (const auto b : initial) live += rounded(b) * (b > 0);
    QCOMPARE(t.start_allocated, live);
    peak = live;
    for (std::int64_t i = 0; i < trace.event_count(); ++i) {
      const TraceEvent e = trace.event(i);
      if (e.kind == TraceEventKind::alloc) live += bytes[e.allocation] = rounded(e.bytes);
      if (e.kind == TraceEventKind::free) live -= bytes[e.allocation];
      peak = std::max(peak, live);
    }
    QCOMPARE(t.peak_allocated, peak);
    QVERIFY(t.peak_allocated >= trace.peak().bytes);
  }

  // The comparison and the overlay curves the app draws: measured above its start, beside the
  // prediction, both on x from 0 to 1, their peaks where the timelines put them.
  void compares_with_the_prediction() {
    const Trace trace = small_run();
    std::ostringstream out;
    write_memory_snapshot(trace, out);
    const MeasuredTimeline m = measure_timeline(parse_memory_snapshot(out.str(), "ours.pickle"));
    const SnapshotComparison c = compare_snapshot(m, trace);
    QCOMPARE(c.measured_peak, m.peak_allocated);
    QCOMPARE(c.measured_start, m.start_allocated);
    QCOMPARE(c.measured_step_peak, m.peak_allocated - m.start_allocated);
    QCOMPARE(c.predicted_peak, trace.peak().bytes);
    // A CPU trace holds no workspace: its whole peak is the step's.
    QCOMPARE(c.predicted_workspace, 0);
    QCOMPARE(c.predicted_step_peak, c.predicted_peak);
    QCOMPARE(c.difference, c.measured_step_peak - c.predicted_step_peak);
    std::int64_t initial = 0;
    for (const auto b : trace.initial_memory()) initial += b;
    QCOMPARE(c.predicted_start, initial);
    const OverlayCurve mc = allocated_curve(m, CurveBase::above_start);
    QCOMPARE(mc.x.size(), m.allocated.size() + 1);
    QCOMPARE(mc.x.front(), 0.0);
    QCOMPARE(mc.x.back(), 1.0);
    QCOMPARE(mc.peak_bytes, c.measured_step_peak);
    QCOMPARE(*std::max_element(mc.bytes.begin(), mc.bytes.end()), mc.peak_bytes);
    const std::size_t at = static_cast<std::size_t>(m.peak_allocated_event) + 1;
    QCOMPARE(mc.x[at], mc.peak_x);
    QCOMPARE(mc.bytes[at], mc.peak_bytes);
    const OverlayCurve abs = allocated_curve(m, CurveBase::absolute);
    QCOMPARE(abs.bytes.front(), m.start_allocated);
    QCOMPARE(abs.peak_bytes, m.peak_allocated);
    const OverlayCurve rc = reserved_curve(m);
    QCOMPARE(rc.bytes.back(), m.reserved.back());
    QCOMPARE(rc.peak_bytes, m.peak_reserved);
    const OverlayCurve pc = predicted_curve(trace);
    QCOMPARE(pc.x.size(), static_cast<std::size_t>(trace.step_count()) + 1);
    QCOMPARE(pc.bytes.front(), trace.total_at(-1));
    QCOMPARE(pc.peak_bytes, trace.peak().bytes);
    QCOMPARE(pc.peak_x, static_cast<double>(trace.peak().step + 1) / trace.step_count());
  }

  // Python's own unpickler reads the file (it is what memory_viz's users have), and sees the
  // same events and the parameter block.
  void python_reads_it() {
    const Trace trace = small_run();
    QTemporaryDir dir;
    const QString path = dir.filePath("ours.pickle");
    export_trace(trace, trace_format_from_name("pickle"), path.toStdString());
    const QString python = qEnvironmentVariable("CKPTLAB_PYTHON", "/usr/bin/python3");
    QProcess p;
    p.start(python, {"-c", R"(import json, pickle, sys
d = pickle.load(open(sys.argv[1], 'rb'))
ev = d['device_traces'][0]
print(json.dumps({'actions': [e['action'] for e in ev], 'sizes': [e['size'] for e in ev],
                  'first_alloc_frames': next(e['frames'] for e in ev if e['action'] == 'alloc'),
                  'segments': [[b['state'], b['size'], b['frames'][-1]['name']]
                               for s in d['segments'] for b in s['blocks']]}))
)",
                     path});
    QVERIFY(p.waitForFinished(60000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    const auto j = nlohmann::json::parse(p.readAllStandardOutput().toStdString());
    const MemorySnapshot s = read_memory_snapshot(path.toStdString());
    const auto& events = s.device_traces[0];
    QCOMPARE(j["actions"].size(), events.size());
    for (std::size_t i = 0; i < events.size(); ++i) {
      QCOMPARE(j["actions"][i].get<std::string>(),
               std::string(snapshot_action_name(events[i].action)));
      QCOMPARE(j["sizes"][i].get<std::int64_t>(), events[i].size);
    }
    QCOMPARE(j["first_alloc_frames"].back()["filename"].get<std::string>(), std::string("ckptlab"));
    bool parameter = false;
    for (const auto& b : j["segments"])
      parameter = parameter || b[2].get<std::string>() == "category parameter";
    QVERIFY(parameter);
    QCOMPARE(trace_format_from_name("snapshot"), TraceFormat::pytorch_snapshot);
  }
};

QTEST_GUILESS_MAIN(TestSnapshotExport)
#include "test_snapshot_export.moc"
