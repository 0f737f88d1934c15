// A Trace as a PyTorch memory snapshot (what torch.cuda.memory._dump_snapshot() writes), so
// that PyTorch's memory_viz page shows the engine's run the way it shows a GPU's: every alloc
// and free of the trace in order, each with frames naming its op, phase, model module and
// category, and the category as the entry's `category` (memory_viz colours by it).
//
// The engine has no caching allocator: each allocation gets a segment of its own (its bytes
// rounded up to 512, as PyTorch rounds), made just before it and released just after it, at
// addresses that are never reused. Reserved therefore follows allocated.

#include <algorithm>
#include <map>
#include <unordered_map>

#include "engine/snapshot/pickle.hpp"
#include "engine/trace/export.hpp"

namespace ckpt {

namespace {

constexpr std::int64_t kBase = 0x7f0000000000;  // where a CUDA heap typically starts
constexpr std::int64_t kRound = 512;

std::int64_t rounded(std::int64_t bytes) {
  return bytes <= 0 ? kRound : (bytes + kRound - 1) / kRound * kRound;
}

struct Block {
  std::int64_t address = 0;
  std::int64_t bytes = 0;
  MemoryCategory category = MemoryCategory::temporary;
  std::int64_t step = -1;  // the step that made it (its frames)
};

constexpr std::int64_t kMadeBefore = -2;  // a Block's step when it was live before the trace

class SnapshotWriter {
 public:
  explicit SnapshotWriter(const Trace& t) : trace_(t) {}

  std::string write() {
    std::unordered_map<std::uint32_t, Block> live;  // by allocation id
    std::int64_t next = kBase;
    // The trace's events first: frames are written where first needed and referenced after.
    w_.begin_dict();
    w_.string("device_traces");
    w_.begin_list();
    w_.begin_list();
    for (std::int64_t i = 0; i < trace_.event_count(); ++i) {
      const TraceEvent e = trace_.event(i);
      const std::int64_t time_us = e.step < 0 ? 0 : trace_.step(e.step).start_ns / 1000;
      if (e.kind == TraceEventKind::alloc) {
        Block b{next, e.bytes, e.category, e.step};
        next += rounded(e.bytes);
        entry("segment_alloc", b.address, rounded(b.bytes), time_us, e.step, e.category, "unknown");
        entry("alloc", b.address, b.bytes, time_us, e.step, e.category, category_name(b.category));
        live[e.allocation] = b;
      } else if (e.kind == TraceEventKind::free) {
        const auto it = live.find(e.allocation);
        // Freeing what was made before recording (a parameter the caller released): an
        // address of its own, as PyTorch shows a block allocated before _record_memory_history.
        Block b = it != live.end() ? it->second : Block{next, e.bytes, e.category, kMadeBefore};
        if (it == live.end()) next += rounded(e.bytes);
        for (const char* action : {"free_requested", "free_completed"})
          entry(action, b.address, b.bytes, time_us, e.step, e.category, category_name(e.category));
        entry("segment_free", b.address, rounded(b.bytes), time_us, e.step, e.category, "unknown");
        if (it != live.end()) live.erase(it);
      } else if (const auto it = live.find(e.allocation); it != live.end()) {
        it->second.category = e.category;  // recategorize: memory_viz keeps the alloc's colour
      }
    }
    w_.end_list();
    w_.end_list();
    // What is still allocated at the end: the trace's live allocations, and what was live
    // before it began and never freed (parameters, inputs), one block per category.
    w_.string("segments");
    w_.begin_list();
    CategoryBytes before = trace_.memory_at(trace_.step_count() - 1);
    for (const auto& [id, b] : live) before[static_cast<std::size_t>(b.category)] -= b.bytes;
    for (std::size_t c = 0; c < before.size(); ++c) {
      if (before[c] <= 0) continue;
      const auto category = static_cast<MemoryCategory>(c);
      segment({next, before[c], category, kMadeBefore});
      next += rounded(before[c]);
    }
    std::vector<Block> blocks;
    for (const auto& [id, b] : live) blocks.push_back(b);
    std::sort(blocks.begin(), blocks.end(),
              [](const Block& a, const Block& b) { return a.address < b.address; });
    for (const Block& b : blocks) segment(b);
    w_.end_list();
    w_.string("allocator_settings");
    w_.begin_dict();
    w_.string("expandable_segments");
    w_.boolean(false);
    w_.end_dict();
    w_.end_dict();
    return w_.finish();
  }

 private:
  void entry(const char* action, std::int64_t addr, std::int64_t size, std::int64_t time_us,
             std::int64_t step, MemoryCategory frames_category, const char* category) {
    w_.begin_dict();
    w_.string("action");
    w_.string(action);
    w_.string("addr");
    w_.integer(addr);
    w_.string("size");
    w_.integer(size);
    w_.string("stream");
    w_.integer(0);
    w_.string("time_us");
    w_.integer(time_us);
    w_.string("category");
    w_.string(category);
    w_.string("frames");
    frames(step, frames_category);
    w_.end_dict();
  }

  void segment(const Block& b) {
    const std::int64_t size = rounded(b.bytes);
    w_.begin_dict();
    for (const auto& [key, value] : {std::pair<const char*, std::int64_t>{"device", 0},
                                     {"address", b.address},
                                     {"total_size", size},
                                     {"allocated_size", size},
                                     {"active_size", size},
                                     {"requested_size", b.bytes},
                                     {"stream", 0}}) {
      w_.string(key);
      w_.integer(value);
    }
    w_.string("segment_type");
    w_.string(size <= (1 << 20) ? "small" : "large");
    w_.string("is_expandable");
    w_.boolean(false);
    w_.string("frames");
    w_.begin_list();
    w_.end_list();
    w_.string("blocks");
    w_.begin_list();
    w_.begin_dict();
    w_.string("address");
    w_.integer(b.address);
    w_.string("size");
    w_.integer(size);
    w_.string("requested_size");
    w_.integer(b.bytes);
    w_.string("state");
    w_.string("active_allocated");
    w_.string("frames");
    frames(b.step, b.category);
    w_.end_dict();
    w_.end_list();
    w_.end_dict();
  }

  // A frame {"filename", "line", "name"} in a value's place: written the first time, then a
  // reference to it (as Python's pickler does with a repeated object).
  void frame(const std::string& filename, std::int64_t line, const std::string& name) {
    const std::string key = filename + '\n' + std::to_string(line) + '\n' + name;
    if (const auto it = frame_memo_.find(key); it != frame_memo_.end()) return w_.get(it->second);
    w_.begin_dict();
    w_.string("filename");
    w_.string(filename);
    w_.string("line");
    w_.integer(line);
    w_.string("name");
    w_.string(name);
    w_.end_dict();
    frame_memo_[key] = w_.memoize();
  }
  // The frames of what step `step` allocated or freed as `category`, innermost first as PyTorch
  // writes them: memory_viz prints "module:step:op (phase)", the checkpointed segment if any,
  // then the category. Step -1: before the first op; kMadeBefore: live before the trace.
  void frames(std::int64_t step, MemoryCategory category) {
    const auto key = std::make_pair(step, category);
    if (const auto it = stack_memo_.find(key); it != stack_memo_.end()) return w_.get(it->second);
    w_.begin_list();
    if (step >= 0) {
      const TraceStep s = trace_.step(step);
      frame(s.node.empty() ? "<model>" : s.node, step, s.op + " (" + phase_name(s.phase) + ")");
      if (!s.segment.empty()) frame("checkpoint " + s.segment, 0, "checkpointed segment");
    } else if (step == kMadeBefore) {
      frame("<made before the trace>", 0, category_name(category));
    } else {
      frame("<before the first op>", 0, "setup");
    }
    frame("ckptlab", 0, std::string("category ") + category_name(category));
    w_.end_list();
    stack_memo_[key] = w_.memoize();
  }

  const Trace& trace_;
  PickleWriter w_;
  std::unordered_map<std::string, std::uint32_t> frame_memo_;
  std::map<std::pair<std::int64_t, MemoryCategory>, std::uint32_t> stack_memo_;
};

}  // namespace

void write_memory_snapshot(const Trace& trace, std::ostream& out) {
  const std::string bytes = SnapshotWriter(trace).write();
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace ckpt
