#pragma once

// A PyTorch CUDA memory snapshot: what torch.cuda.memory._snapshot() returns and
// _dump_snapshot() pickles (the file PyTorch's memory_viz page opens). `segments` is the caching
// allocator's state when the snapshot was taken; `device_traces` the events recorded since
// _record_memory_history() (each with its Python and C++ frames). PyTorch 1.13's older form, a
// bare list of segments whose blocks carry a `history`, is read too (it has no trace).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ckpt {

struct SnapshotFrame {
  std::string filename;
  std::int64_t line = 0;
  std::string name;  // the function
};

// Frame lists are interned: traces repeat the same stacks thousands of times.
using StackId = std::uint32_t;
inline constexpr StackId kNoStack = 0;  // the empty stack, always stacks[0]

enum class SnapshotAction : std::uint8_t {
  alloc,
  free_requested,  // the tensor is released; the block waits for its streams (record_stream)
  free_completed,  // the block returns to the cache
  segment_alloc,   // cudaMalloc
  segment_free,    // cudaFree
  segment_map,     // expandable segments: memory mapped into / out of a segment
  segment_unmap,
  oom,
  snapshot,  // a snapshot was taken here
  other,     // an action this reader does not know (kept, counts nothing)
};
const char* snapshot_action_name(SnapshotAction a);

struct SnapshotEvent {
  SnapshotAction action = SnapshotAction::other;
  std::int64_t addr = 0;  // oom: the bytes the device had free
  std::int64_t size = 0;  // alloc/free: the requested bytes; segments: the segment's bytes
  std::int64_t stream = 0;
  std::int64_t time_us = -1;  // -1: not recorded
  StackId stack = kNoStack;
};

enum class BlockState : std::uint8_t {
  active_allocated,
  active_pending_free,  // freed, waiting for its streams ("active_awaiting_free" before 2.1)
  inactive,             // cached, free
};

struct SnapshotBlock {
  std::int64_t address = 0;
  std::int64_t size = 0;  // what the allocator counts (rounded, and unsplit remainders)
  std::int64_t requested_size = 0;
  BlockState state = BlockState::inactive;
  StackId stack = kNoStack;
};

struct SnapshotSegment {
  std::int64_t device = 0;
  std::int64_t address = 0;
  std::int64_t total_size = 0;
  std::int64_t stream = 0;
  std::string segment_type;  // "small" (2 MiB buffers for requests up to 1 MiB) or "large"
  bool is_expandable = false;
  std::vector<SnapshotBlock> blocks;  // in address order, covering the segment
};

// What the caching allocator was told (PYTORCH_CUDA_ALLOC_CONF), as far as it changes how
// many bytes a request takes.
struct AllocatorSettings {
  bool known = false;               // the snapshot carried allocator_settings
  std::int64_t max_split_size = 0;  // 0: none (PyTorch writes -1 or SIZE_MAX)
  bool expandable_segments = false;
  bool power2_rounding = false;  // roundup_power2_divisions set for some size
};

struct MemorySnapshot {
  std::string source;  // the file name, for messages
  std::vector<SnapshotSegment> segments;
  std::vector<std::vector<SnapshotEvent>> device_traces;  // one per device, maybe empty
  std::vector<SnapshotFrame> frames;
  std::vector<std::vector<std::uint32_t>> stacks;  // indices into frames, innermost first
  AllocatorSettings settings;

  const std::vector<std::uint32_t>& stack(StackId id) const { return stacks[id]; }
  // The frames a person reads first, innermost first, at most `max`: the Python ones when the
  // stack has any, else the C++ ones below the allocator's own (memory_viz hides the same).
  std::vector<const SnapshotFrame*> user_frames(StackId id, std::size_t max) const;
  // The devices with a trace or a segment, lowest first.
  std::vector<std::int64_t> devices() const;
};

// Bounds on what a snapshot may say, far beyond any GPU, so that sums of them never overflow:
// a size over 256 TiB or an address at or over 2^62 is an error.
inline constexpr std::int64_t kMaxSnapshotSize = std::int64_t{1} << 48;
inline constexpr std::int64_t kMaxSnapshotAddress = std::int64_t{1} << 62;

// The largest file read_memory_snapshot() accepts unless told otherwise: the file and the
// objects decoded from it are held in memory at once (about 10 bytes decoded per byte read).
inline constexpr std::int64_t kDefaultSnapshotLimit = std::int64_t{1} << 30;

// Reads a snapshot file; a file larger than `max_bytes` is refused with its size before any of
// it is read. Errors (std::runtime_error) name the file, and the byte offset or the field path
// ("device_traces[0][12].size") at fault.
MemorySnapshot read_memory_snapshot(const std::string& path,
                                    std::int64_t max_bytes = kDefaultSnapshotLimit);
// The same from bytes already in memory (`source` names them in errors).
MemorySnapshot parse_memory_snapshot(std::string_view bytes, const std::string& source);

}  // namespace ckpt
