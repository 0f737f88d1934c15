// PyTorch memory snapshots (engine/snapshot): the five real ones the GPU oracle recorded on an
// H200 read back to the very bytes torch.cuda.max_memory_allocated() reported, and hand-made
// ones pin the allocator rules the replay follows and the errors it gives.
#include <QtTest>

#include <QFile>
#include <nlohmann/json.hpp>

#include "engine/snapshot/measured_timeline.hpp"
#include "engine/snapshot/memory_snapshot.hpp"
#include "engine/snapshot/pickle.hpp"

using namespace ckpt;

namespace {

QString data_dir() {
  return qEnvironmentVariable("CKPTLAB_SOURCE_DIR") + "/tests/engine/data/snapshots";
}

nlohmann::json read_json(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return nullptr;
  return nlohmann::json::parse(f.readAll().toStdString());
}

// A snapshot written the way _dump_snapshot() writes one, from a few lines of description.
struct Event {
  const char* action;
  std::int64_t addr;
  std::int64_t size;
};
struct Block {
  std::int64_t address, size;
  const char* state;
};
struct Segment {
  std::int64_t address, total_size;
  std::vector<Block> blocks;
};

void frames(PickleWriter& w, const char* file, int line, const char* name) {
  w.string("frames");
  w.begin_list();
  w.begin_dict();
  w.string("filename");
  w.string(file);
  w.string("line");
  w.integer(line);
  w.string("name");
  w.string(name);
  w.end_dict();
  w.end_list();
}

std::string snapshot_bytes(const std::vector<Segment>& segments, const std::vector<Event>& events) {
  PickleWriter w;
  w.begin_dict();
  w.string("segments");
  w.begin_list();
  for (const Segment& s : segments) {
    w.begin_dict();
    w.string("device");
    w.integer(0);
    w.string("address");
    w.integer(s.address);
    w.string("total_size");
    w.integer(s.total_size);
    w.string("stream");
    w.integer(0);
    w.string("blocks");
    w.begin_list();
    for (const Block& b : s.blocks) {
      w.begin_dict();
      w.string("address");
      w.integer(b.address);
      w.string("size");
      w.integer(b.size);
      w.string("requested_size");
      w.integer(b.size);
      w.string("state");
      w.string(b.state);
      frames(w, "model.py", 7, "build");
      w.end_dict();
    }
    w.end_list();
    w.end_dict();
  }
  w.end_list();
  w.string("device_traces");
  w.begin_list();
  w.begin_list();
  int i = 0;
  for (const Event& e : events) {
    w.begin_dict();
    w.string("action");
    w.string(e.action);
    w.string("addr");
    w.integer(e.addr);
    w.string("size");
    w.integer(e.size);
    w.string("stream");
    w.integer(0);
    w.string("time_us");
    w.integer(1000 + 10 * i++);
    frames(w, "train.py", 40 + i, "forward");
    w.end_dict();
  }
  w.end_list();
  w.end_list();
  w.end_dict();
  return w.finish();
}

constexpr std::int64_t MiB = 1 << 20;
constexpr std::int64_t kBase = 0x7f0000000000;

std::string error_of(const std::string& bytes) {
  try {
    measure_timeline(parse_memory_snapshot(bytes, "s.pickle"));
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

class TestSnapshot : public QObject {
  Q_OBJECT
 private slots:
  void oracle_peaks_data() {
    QTest::addColumn<QString>("name");
    const nlohmann::json peaks = read_json(data_dir() + "/oracle_peaks.json");
    QVERIFY(peaks.is_object());
    for (const auto& [name, _] : peaks["cases"].items())
      QTest::newRow(name.c_str()) << QString::fromStdString(name);
  }
  // The peak of each snapshot equals torch.cuda.max_memory_allocated() for that step, and its
  // reserved peak max_memory_reserved(), to the byte: the trace starts with the workspaces (and,
  // in training, the parameters and optimizer state) already allocated, found in `segments`;
  // each alloc counts the block the allocator gave it (rounded to 512 bytes, or a whole block
  // it did not split: tv_resnet34 would be 4,931,584 bytes short counting requests alone).
  void oracle_peaks() {
    QFETCH(QString, name);
    const nlohmann::json want =
        read_json(data_dir() + "/oracle_peaks.json")["cases"][name.toStdString()];
    const MemorySnapshot s =
        read_memory_snapshot((data_dir() + "/" + name + ".pickle").toStdString());
    const MeasuredTimeline t = measure_timeline(s);
    QVERIFY2(t.exact, t.note.c_str());
    QCOMPARE(t.start_allocated, want["start"].get<std::int64_t>());
    QCOMPARE(t.peak_allocated, want["peak"].get<std::int64_t>());
    QCOMPARE(t.peak_reserved, want["reserved"].get<std::int64_t>());
    QCOMPARE(t.allocated.size(), s.device_traces[0].size());
    QCOMPARE(t.allocated[static_cast<std::size_t>(t.peak_allocated_event)], t.peak_allocated);
    QVERIFY(t.peak_time_us > 0 && t.peak_time_us <= t.duration_us);
    // The end of the replay is the state the snapshot shows.
    std::int64_t in_use = 0, segments = 0;
    for (const auto& seg : s.segments) {
      segments += seg.total_size;
      for (const auto& b : seg.blocks)
        if (b.state == BlockState::active_allocated) in_use += b.size;
    }
    QCOMPARE(t.allocated.back(), in_use);
    QCOMPARE(t.reserved.back(), segments);
    // What was live at the peak adds up to it, largest first, each with its Python frames.
    std::int64_t sum = 0;
    for (std::size_t i = 0; i < t.live_at_peak.size(); ++i) {
      sum += t.live_at_peak[i].bytes;
      if (i > 0) QVERIFY(t.live_at_peak[i - 1].bytes >= t.live_at_peak[i].bytes);
    }
    QCOMPARE(sum, t.peak_allocated);
    // Those made during the step carry their frames: Python's where Python asked (the forward),
    // C++ only where the autograd engine's thread did (the backward).
    const auto top = std::find_if(t.live_at_peak.begin(), t.live_at_peak.end(),
                                  [](const auto& a) { return a.alloc_event >= 0; });
    QVERIFY(top != t.live_at_peak.end());
    QCOMPARE(s.device_traces[0][static_cast<std::size_t>(top->alloc_event)].addr, top->address);
    bool python = false;
    for (const auto& a : t.live_at_peak)
      for (const auto f : s.stack(a.stack))
        python = python || (a.alloc_event >= 0 && s.frames[f].filename.ends_with(".py"));
    QVERIFY(python);
  }

  // Both spellings of a freed block that waits for its streams, and 1.13's list of segments.
  void block_states() {
    const std::string bytes = snapshot_bytes({{kBase,
                                               2 * MiB,
                                               {{kBase, 512, "active_awaiting_free"},
                                                {kBase + 512, 512, "active_pending_free"},
                                                {kBase + 1024, 1024, "active_allocated"},
                                                {kBase + 2048, 2 * MiB - 2048, "inactive"}}}},
                                             {});
    const MemorySnapshot s = parse_memory_snapshot(bytes, "s.pickle");
    QCOMPARE(s.segments[0].blocks[0].state, BlockState::active_pending_free);
    QCOMPARE(s.segments[0].blocks[1].state, BlockState::active_pending_free);
    QCOMPARE(s.segments[0].blocks[2].state, BlockState::active_allocated);
    QCOMPARE(s.frames[s.stack(s.segments[0].blocks[2].stack)[0]].name, std::string("build"));
    const MeasuredTimeline t = measure_timeline(s);
    QCOMPARE(t.start_allocated, std::int64_t{1024});  // pending blocks are no longer allocated
    QCOMPARE(t.start_reserved, 2 * MiB);

    PickleWriter old;  // torch 1.13: [{"address", "total_size", "stream", "blocks": [...]}]
    old.begin_list();
    old.begin_dict();
    old.string("address");
    old.integer(kBase);
    old.string("total_size");
    old.integer(2 * MiB);
    old.string("stream");
    old.integer(0);
    old.string("blocks");
    old.begin_list();
    old.begin_dict();
    old.string("size");
    old.integer(2 * MiB);
    old.string("state");
    old.string("active_allocated");
    old.end_dict();
    old.end_list();
    old.end_dict();
    old.end_list();
    const MemorySnapshot o = parse_memory_snapshot(old.finish(), "old.pickle");
    QCOMPARE(o.segments[0].blocks[0].address, kBase);
    QCOMPARE(measure_timeline(o).peak_allocated, 2 * MiB);
  }

  // The allocator's rules, one event at a time: a small request takes 512-byte multiples; a
  // large one splits its block only when more than 1 MiB would remain, else counts it whole.
  void allocator_rules() {
    const std::int64_t seg = 20 * MiB, small = kBase + 64 * MiB;
    const std::string bytes =
        snapshot_bytes({{kBase, seg, {{kBase, seg, "inactive"}}},
                        {small, 2 * MiB, {{small, 2 * MiB, "inactive"}}}},
                       {
                           {"segment_alloc", kBase, seg},        // 0: reserved 20 MiB
                           {"alloc", kBase, 12 * MiB},           // 1: split: 12 MiB
                           {"free_requested", kBase, 12 * MiB},  // 2
                           {"free_completed", kBase, 12 * MiB},  // 3: merged back to 20 MiB free
                           {"alloc", kBase, seg - MiB},        // 4: 1 MiB would remain: whole block
                           {"segment_alloc", small, 2 * MiB},  // 5
                           {"alloc", small, 100},              // 6: 512
                           {"alloc", small + 512, 513},        // 7: 1024
                           {"free_requested", small, 100},     // 8
                           {"snapshot", 0, 0},                 // 9
                           {"free_completed", small, 100},     // 10
                           {"free_requested", kBase, seg - MiB},  // 11
                           {"free_completed", kBase, seg - MiB},  // 12
                           {"free_requested", small + 512, 513},  // 13
                           {"free_completed", small + 512, 513},  // 14
                       });
    const MeasuredTimeline t = measure_timeline(parse_memory_snapshot(bytes, "s.pickle"));
    QVERIFY2(t.exact, t.note.c_str());
    QCOMPARE(t.start_allocated, std::int64_t{0});
    QCOMPARE(t.start_reserved, std::int64_t{0});
    const std::vector<std::int64_t> allocated = {
        0,          12 * MiB,   0,          0,    seg,  seg, seg + 512, seg + 1536,
        seg + 1024, seg + 1024, seg + 1024, 1024, 1024, 0,   0};
    QCOMPARE(t.allocated, allocated);
    QCOMPARE(t.reserved[0], seg);
    QCOMPARE(t.reserved[5], seg + 2 * MiB);
    QCOMPARE(t.peak_allocated, seg + 1536);
    QCOMPARE(t.peak_allocated_event, std::int64_t{7});
    QCOMPARE(t.peak_time_us, std::int64_t{70});
    QCOMPARE(t.live_at_peak.size(), std::size_t{3});
    QCOMPARE(t.live_at_peak[0].bytes, seg);
    QCOMPARE(t.live_at_peak[0].requested, seg - MiB);
    QCOMPARE(t.live_at_peak[0].alloc_event, std::int64_t{4});
    QCOMPARE(t.live_at_peak[1].bytes, std::int64_t{1024});
    QCOMPARE(t.live_at_peak[2].bytes, std::int64_t{512});
  }

  // A trace the layout cannot explain (an alloc where the segments say no block is free) is
  // still measured, from the rounded requests, and says so.
  void inexact_when_the_layout_breaks() {
    const std::string bytes =
        snapshot_bytes({}, {{"alloc", kBase, 1000}, {"alloc", kBase + 4096, 10}});
    const MeasuredTimeline t = measure_timeline(parse_memory_snapshot(bytes, "s.pickle"));
    QVERIFY(!t.exact);
    QVERIFY2(t.note.find("event 0: alloc at 0x7f0000000000, outside every segment") == 0,
             t.note.c_str());
    QCOMPARE(t.peak_allocated, std::int64_t{1536});
  }

  void errors_name_the_field() {
    QVERIFY(error_of(std::string("\x80\x04]\x94.", 5)).find("holds no trace and no segment") !=
            std::string::npos);
    PickleWriter w;
    w.begin_dict();
    w.string("device_traces");
    w.begin_list();
    w.end_list();
    w.end_dict();
    QVERIFY(error_of(w.finish()).find("s.pickle: the top-level object: no 'segments'") == 0);
    PickleWriter bad;
    bad.begin_dict();
    bad.string("segments");
    bad.begin_list();
    bad.end_list();
    bad.string("device_traces");
    bad.begin_list();
    bad.begin_list();
    bad.begin_dict();
    bad.string("action");
    bad.string("alloc");
    bad.string("addr");
    bad.integer(1);
    bad.string("size");
    bad.string("big");
    bad.end_dict();
    bad.end_list();
    bad.end_list();
    bad.end_dict();
    const std::string e = error_of(bad.finish());
    QVERIFY2(e == "s.pickle: device_traces[0][0].size: expected an int, got a str", e.c_str());
    const std::string state = error_of(snapshot_bytes({{kBase, 512, {{kBase, 512, "lent"}}}}, {}));
    QVERIFY2(
        state.find("segments[0].blocks[0].state: unknown block state 'lent'") != std::string::npos,
        state.c_str());
    QVERIFY_THROWS_EXCEPTION(
        std::invalid_argument,
        measure_timeline(parse_memory_snapshot(snapshot_bytes({{kBase, 512, {}}}, {}), "s.pickle"),
                         3));
  }

  // A file over the limit is refused with its size before a byte of it is read.
  void refuses_a_file_too_large() {
    const std::string path = (data_dir() + "/resnet__plain.pickle").toStdString();
    try {
      read_memory_snapshot(path, 100000);
      QFAIL("read a file over the limit");
    } catch (const std::runtime_error& e) {
      const std::string m = e.what();
      QVERIFY2(m.find(path + ": 0.3 MB (260380 bytes) is more than the 0.1 MB") == 0, m.c_str());
      QVERIFY2(m.find("nothing was read") != std::string::npos, m.c_str());
    }
    try {
      read_memory_snapshot(path + ".missing");
      QFAIL("read a missing file");
    } catch (const std::runtime_error& e) {
      QVERIFY(std::string(e.what()).find(".missing: cannot read") != std::string::npos);
    }
  }
};

QTEST_GUILESS_MAIN(TestSnapshot)
#include "test_snapshot.moc"
