#include "engine/snapshot/measured_timeline.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <stdexcept>
#include <unordered_map>

namespace ckpt {

namespace {

// PyTorch's CUDACachingAllocator: kMinBlockSize, kSmallSize.
constexpr std::int64_t kMinBlock = 512;
constexpr std::int64_t kSmallSize = std::int64_t{1} << 20;
// Totals are checked against this after every event; each event adds at most
// kMaxSnapshotSize, so they never overflow.
constexpr std::int64_t kMaxTotal = std::int64_t{1} << 61;

std::string hex(std::int64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

[[noreturn]] void too_much(const MemorySnapshot& s) {
  throw std::invalid_argument(s.source +
                              ": more than 2^61 bytes in use at once; not a real snapshot");
}

bool is_block_event(SnapshotAction a) {
  return a == SnapshotAction::alloc || a == SnapshotAction::free_requested ||
         a == SnapshotAction::free_completed;
}
bool adds_segment(SnapshotAction a) {
  return a == SnapshotAction::segment_alloc || a == SnapshotAction::segment_map;
}
bool removes_segment(SnapshotAction a) {
  return a == SnapshotAction::segment_free || a == SnapshotAction::segment_unmap;
}

struct LiveBlock {
  std::int64_t bytes = 0;
  std::int64_t requested = 0;
  std::int64_t alloc_event = -1;
  StackId stack = kNoStack;
  bool counted = true;  // false once free_requested (still occupying until free_completed)
};

// What the device held when recording began.
struct Start {
  std::unordered_map<std::int64_t, LiveBlock> blocks;
  std::vector<std::pair<std::int64_t, std::int64_t>> segments;  // address, size
  std::int64_t reserved = 0;
  std::int64_t estimated = 0;  // blocks whose counted size is not known (see the header)
};

Start start_of(const MemorySnapshot& s, std::int64_t device,
               const std::vector<SnapshotEvent>& events) {
  Start st;
  std::unordered_map<std::int64_t, const SnapshotEvent*> first_block_event;
  std::unordered_map<std::int64_t, SnapshotAction> first_segment_event;
  std::int64_t reserved_change = 0;
  for (const SnapshotEvent& e : events) {
    if (is_block_event(e.action)) first_block_event.try_emplace(e.addr, &e);
    if (adds_segment(e.action) || removes_segment(e.action))
      first_segment_event.try_emplace(e.addr, e.action);
    if (adds_segment(e.action)) reserved_change += e.size;
    if (removes_segment(e.action)) reserved_change -= e.size;
    if (reserved_change > kMaxTotal || reserved_change < -kMaxTotal) too_much(s);
  }
  std::int64_t reserved_end = 0;
  for (const SnapshotSegment& seg : s.segments) {
    if (seg.device != device) continue;
    if ((reserved_end += seg.total_size) > kMaxTotal) too_much(s);
    const auto first = first_segment_event.find(seg.address);
    if (first == first_segment_event.end() || !adds_segment(first->second))
      st.segments.emplace_back(seg.address, seg.total_size);
    for (const SnapshotBlock& b : seg.blocks) {
      if (b.state == BlockState::inactive || first_block_event.count(b.address)) continue;
      st.blocks[b.address] = {b.size, b.requested_size, -1, b.stack,
                              b.state == BlockState::active_allocated};
    }
  }
  for (const SnapshotEvent& e : events)
    if (removes_segment(e.action) && first_segment_event.at(e.addr) == e.action &&
        std::none_of(st.segments.begin(), st.segments.end(),
                     [&](const auto& p) { return p.first == e.addr; }))
      st.segments.emplace_back(e.addr, e.size);
  for (const auto& [addr, e] : first_block_event) {
    if (e->action == SnapshotAction::alloc) continue;
    // Made before recording and freed during it: only its requested size is known.
    st.blocks[addr] = {allocator_round(e->size), e->size, -1, e->stack,
                       e->action == SnapshotAction::free_requested};
    ++st.estimated;
  }
  st.reserved = reserved_end - reserved_change;
  std::sort(st.segments.begin(), st.segments.end());
  return st;
}

// An event the allocator's layout cannot explain (a snapshot from another allocator, or a
// trace whose first events were dropped by max_entries).
struct LayoutMismatch {
  std::string what;
};

// The caching allocator's segments and blocks, replayed event by event, so that each alloc
// counts the block it really got: the request rounded to 512 bytes, or the whole free block
// when the remainder was too small to split off.
class Layout {
 public:
  Layout(const Start& st, const AllocatorSettings& settings) : max_split_(settings.max_split_size) {
    for (const auto& [addr, size] : st.segments) add_segment(addr, size);
    for (const auto& [addr, b] : st.blocks) {
      Segment& seg = segment_of(addr, "a block made before recording");
      place(seg, addr, b.bytes, b.counted ? State::live : State::pending);
    }
  }

  void add_segment(std::int64_t addr, std::int64_t size) {
    Segment& seg = segments_[addr];
    seg.size = size;
    seg.blocks.clear();
    seg.blocks[addr] = {size, State::free};
  }
  void remove_segment(std::int64_t addr) {
    const auto it = segments_.find(addr);
    if (it == segments_.end()) throw LayoutMismatch{"segment_free of an unknown segment"};
    for (const auto& [a, b] : it->second.blocks)
      if (b.state != State::free)
        throw LayoutMismatch{"segment_free of a segment with a block in use at " + hex(a)};
    segments_.erase(it);
  }
  // The bytes the allocator counts for a request of `requested` bytes at `addr`.
  std::int64_t alloc(std::int64_t addr, std::int64_t requested) {
    Segment& seg = segment_of(addr, "alloc");
    const auto it = seg.blocks.find(addr);
    if (it == seg.blocks.end() || it->second.state != State::free)
      throw LayoutMismatch{"alloc at " + hex(addr) + ", where no free block starts"};
    const std::int64_t size = allocator_round(requested);
    Block& b = it->second;
    if (b.size < size)
      throw LayoutMismatch{"alloc of " + std::to_string(size) + " bytes at " + hex(addr) +
                           " in a free block of " + std::to_string(b.size)};
    const std::int64_t remaining = b.size - size;
    const bool split = size <= kSmallSize
                           ? remaining >= kMinBlock
                           : (max_split_ == 0 || size < max_split_) && remaining > kSmallSize;
    if (split) {
      seg.blocks[addr + size] = {remaining, State::free};
      b.size = size;
    }
    b.state = State::live;
    return b.size;
  }
  void free_requested(std::int64_t addr) {
    block_at(addr, "free_requested").state = State::pending;
  }
  void free_completed(std::int64_t addr) {
    Segment& seg = segment_of(addr, "free_completed");
    auto it = seg.blocks.find(addr);
    if (it == seg.blocks.end() || it->second.state == State::free)
      throw LayoutMismatch{"free_completed at " + hex(addr) + ", where no block is in use"};
    it->second.state = State::free;
    if (auto next = std::next(it); next != seg.blocks.end() && next->second.state == State::free) {
      it->second.size += next->second.size;
      seg.blocks.erase(next);
    }
    if (it != seg.blocks.begin()) {
      auto prev = std::prev(it);
      if (prev->second.state == State::free) {
        prev->second.size += it->second.size;
        seg.blocks.erase(it);
      }
    }
  }

 private:
  enum class State : std::uint8_t { free, live, pending };
  struct Block {
    std::int64_t size = 0;
    State state = State::free;
  };
  struct Segment {
    std::int64_t size = 0;
    std::map<std::int64_t, Block> blocks;
  };

  Segment& segment_of(std::int64_t addr, const std::string& what) {
    auto it = segments_.upper_bound(addr);
    if (it == segments_.begin() || addr >= std::prev(it)->first + std::prev(it)->second.size)
      throw LayoutMismatch{what + " at " + hex(addr) + ", outside every segment"};
    return std::prev(it)->second;
  }
  Block& block_at(std::int64_t addr, const std::string& what) {
    Segment& seg = segment_of(addr, what);
    const auto it = seg.blocks.find(addr);
    if (it == seg.blocks.end() || it->second.state == State::free)
      throw LayoutMismatch{what + " at " + hex(addr) + ", where no block is in use"};
    return it->second;
  }
  // A block known to be in use when recording began, carved out of its segment's free space.
  void place(Segment& seg, std::int64_t addr, std::int64_t size, State state) {
    auto it = seg.blocks.upper_bound(addr);
    if (it == seg.blocks.begin()) throw LayoutMismatch{"a block before its segment"};
    --it;
    Block& holder = it->second;
    const std::int64_t holder_addr = it->first;
    if (holder.state != State::free || addr + size > holder_addr + holder.size)
      throw LayoutMismatch{"blocks made before recording overlap at " + hex(addr)};
    const std::int64_t after = holder_addr + holder.size - (addr + size);
    if (addr > holder_addr) {
      holder.size = addr - holder_addr;
      seg.blocks[addr] = {size, state};
    } else {
      holder = {size, state};
    }
    if (after > 0) seg.blocks[addr + size] = {after, State::free};
  }

  std::int64_t max_split_;
  std::map<std::int64_t, Segment> segments_;
};

// One pass over the trace; stops after event `stop` (all of them when -1 or past the end) and
// leaves the live blocks then in `live`.
struct Pass {
  std::vector<std::int64_t> allocated, reserved;
  std::unordered_map<std::int64_t, LiveBlock> live;
  std::int64_t start_allocated = 0;
};

Pass replay(const MemorySnapshot& s, const std::vector<SnapshotEvent>& events, const Start& st,
            bool follow_layout, std::int64_t stop) {
  std::optional<Layout> layout;
  if (follow_layout) layout.emplace(st, s.settings);
  Pass p;
  p.live = st.blocks;
  std::int64_t allocated = 0, reserved = st.reserved;
  for (const auto& [addr, b] : st.blocks)
    if (b.counted && (allocated += b.bytes) > kMaxTotal) too_much(s);
  p.start_allocated = allocated;
  const std::size_t end =
      stop < 0 ? events.size() : std::min(events.size(), static_cast<std::size_t>(stop) + 1);
  if (stop < 0) {
    p.allocated.reserve(events.size());
    p.reserved.reserve(events.size());
  }
  for (std::size_t i = 0; i < end; ++i) {
    const SnapshotEvent& e = events[i];
    try {
      switch (e.action) {
        case SnapshotAction::alloc: {
          const std::int64_t bytes =
              layout ? layout->alloc(e.addr, e.size) : allocator_round(e.size);
          if (const auto old = p.live.find(e.addr); old != p.live.end()) {
            if (layout) throw LayoutMismatch{"alloc at " + hex(e.addr) + ", already in use"};
            if (old->second.counted) allocated -= old->second.bytes;
          }
          p.live[e.addr] = {bytes, e.size, static_cast<std::int64_t>(i), e.stack, true};
          allocated += bytes;
          break;
        }
        case SnapshotAction::free_requested:
        case SnapshotAction::free_completed: {
          const auto it = p.live.find(e.addr);
          if (it == p.live.end()) {
            if (layout)
              throw LayoutMismatch{std::string(snapshot_action_name(e.action)) + " at " +
                                   hex(e.addr) + ", where nothing is in use"};
            break;
          }
          if (it->second.counted) allocated -= it->second.bytes;
          it->second.counted = false;
          if (e.action == SnapshotAction::free_completed) {
            if (layout) layout->free_completed(e.addr);
            p.live.erase(it);
          } else if (layout) {
            layout->free_requested(e.addr);
          }
          break;
        }
        case SnapshotAction::segment_alloc:
        case SnapshotAction::segment_map:
          if (layout) layout->add_segment(e.addr, e.size);
          reserved += e.size;
          break;
        case SnapshotAction::segment_free:
        case SnapshotAction::segment_unmap:
          if (layout) layout->remove_segment(e.addr);
          reserved -= e.size;
          break;
        default:
          break;
      }
    } catch (LayoutMismatch& m) {
      m.what = "event " + std::to_string(i) + ": " + m.what;
      throw;
    }
    if (allocated > kMaxTotal || reserved > kMaxTotal || reserved < -kMaxTotal) too_much(s);
    if (stop < 0) {
      p.allocated.push_back(allocated);
      p.reserved.push_back(reserved);
    }
  }
  return p;
}

std::int64_t pick_device(const MemorySnapshot& s, std::int64_t device) {
  const std::vector<std::int64_t> devices = s.devices();
  if (device < 0) {
    if (devices.empty())
      throw std::invalid_argument(s.source + ": the snapshot holds no trace and no segment");
    return devices.front();
  }
  if (std::find(devices.begin(), devices.end(), device) == devices.end()) {
    std::string have;
    for (const auto d : devices) have += (have.empty() ? "" : ", ") + std::to_string(d);
    throw std::invalid_argument(s.source + ": no device " + std::to_string(device) +
                                " in the snapshot (it has " + (have.empty() ? "none" : have) + ")");
  }
  return device;
}

}  // namespace

std::int64_t allocator_round(std::int64_t requested) {
  if (requested < kMinBlock) return kMinBlock;
  return kMinBlock * ((requested + kMinBlock - 1) / kMinBlock);
}

MeasuredTimeline measure_timeline(const MemorySnapshot& s, std::int64_t device) {
  MeasuredTimeline t;
  t.device = pick_device(s, device);
  static const std::vector<SnapshotEvent> no_events;
  const auto& events = static_cast<std::size_t>(t.device) < s.device_traces.size()
                           ? s.device_traces[static_cast<std::size_t>(t.device)]
                           : no_events;
  const Start st = start_of(s, t.device, events);
  bool expandable = s.settings.expandable_segments;
  for (const auto& seg : s.segments) expandable = expandable || seg.is_expandable;
  // Expandable segments always split a block (PyTorch's should_split), so every block counts its
  // rounded size and the layout need not be followed.
  bool follow = !expandable && !s.settings.power2_rounding;
  std::vector<std::string> notes;
  Pass all;
  if (follow) {
    try {
      all = replay(s, events, st, true, -1);
    } catch (const LayoutMismatch& m) {
      follow = false;
      notes.push_back(m.what + ": the allocator's segments could not be followed");
    }
  }
  if (!follow) all = replay(s, events, st, false, -1);
  if (s.settings.power2_rounding)
    notes.push_back("the allocator rounded by roundup_power2_divisions, which is not followed");
  if (st.estimated > 0)
    notes.push_back(std::to_string(st.estimated) +
                    (st.estimated == 1 ? " block made before recording was"
                                       : " blocks made before recording were") +
                    " freed during it");
  t.exact = notes.empty() && (follow || expandable);
  if (!t.exact) {
    for (const auto& n : notes) t.note += (t.note.empty() ? "" : "; ") + n;
    t.note +=
        ". Those block sizes are the requested sizes rounded up to 512 bytes, which "
        "undercounts a block the allocator did not split.";
  }
  t.allocated = std::move(all.allocated);
  t.reserved = std::move(all.reserved);
  t.start_allocated = all.start_allocated;
  t.start_reserved = st.reserved;
  t.peak_allocated = t.start_allocated;
  t.peak_reserved = t.start_reserved;
  for (std::size_t i = 0; i < t.allocated.size(); ++i) {
    if (t.allocated[i] > t.peak_allocated) {
      t.peak_allocated = t.allocated[i];
      t.peak_allocated_event = static_cast<std::int64_t>(i);
    }
    if (t.reserved[i] > t.peak_reserved) {
      t.peak_reserved = t.reserved[i];
      t.peak_reserved_event = static_cast<std::int64_t>(i);
    }
  }
  if (!events.empty() && events.front().time_us >= 0 && events.back().time_us >= 0) {
    t.duration_us = events.back().time_us - events.front().time_us;
    const auto& at = t.peak_allocated_event < 0
                         ? events.front()
                         : events[static_cast<std::size_t>(t.peak_allocated_event)];
    if (at.time_us >= 0) t.peak_time_us = at.time_us - events.front().time_us;
  }
  // The blocks live at the peak: a second pass that stops there.
  const Pass at_peak = t.peak_allocated_event < 0
                           ? Pass{{}, {}, st.blocks, 0}
                           : replay(s, events, st, follow, t.peak_allocated_event);
  for (const auto& [addr, b] : at_peak.live)
    if (b.counted) t.live_at_peak.push_back({addr, b.bytes, b.requested, b.alloc_event, b.stack});
  std::sort(t.live_at_peak.begin(), t.live_at_peak.end(), [](const auto& a, const auto& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.address < b.address;
  });
  return t;
}

}  // namespace ckpt
