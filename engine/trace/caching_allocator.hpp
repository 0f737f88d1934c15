#pragma once

// Reserved memory: PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp, 2.x,
// default settings: no expandable segments, max_split_size unlimited, one stream) replayed over
// the allocations of a run. What a CUDA run allocates is the ledger's; what the process takes
// from the card (torch.cuda.max_memory_reserved) is the segments this allocator cudaMallocs for
// them, which depends on the order of allocations and frees, not only on their sizes: 8 x 16
// MiB allocated, freed, then 4 x 32 MiB reserve 256 MiB; the reverse order, 128 MiB.
//
// The rules, each as the allocator's source has it:
//   round_size            every request rounded up to 512 B (kMinBlockSize)
//   get_pool              requests up to 1 MiB (kSmallSize) from the small pool, others large
//   get_allocation_size   a new segment: 2 MiB (kSmallBuffer) for a small request, 20 MiB
//                         (kLargeBuffer) below 10 MiB (kMinLargeAlloc), else the request
//                         rounded up to 2 MiB (kRoundLarge)
//   get_free_block        the smallest cached block of the pool that fits (best fit, lowest
//                         address on a tie); an oversize block (>= max_split_size) serves only
//                         a request within kLargeBuffer of it
//   should_split          a small block is split when 512 B or more remain, a large one when
//                         more than 1 MiB remains (and the request is below max_split_size)
//   free_block            a freed block merges with its free neighbours in its own segment
//                         (never across segments) and stays cached: reserved never shrinks
// Checked against the oracle's snapshots (docs/reference/gpu-oracle.md; snapshots in
// tests/engine/data/snapshots): replaying their alloc/free events gives their segments and
// max_memory_reserved exactly.

#include <cstdint>
#include <limits>
#include <set>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace ckpt {

class Trace;

struct CachingAllocatorRules {
  std::int64_t min_block = 512;                                            // kMinBlockSize
  std::int64_t small_size = 1 << 20;                                       // kSmallSize
  std::int64_t small_buffer = 2 << 20;                                     // kSmallBuffer
  std::int64_t min_large_alloc = 10 << 20;                                 // kMinLargeAlloc
  std::int64_t large_buffer = 20 << 20;                                    // kLargeBuffer
  std::int64_t round_large = 2 << 20;                                      // kRoundLarge
  std::int64_t max_split_size = std::numeric_limits<std::int64_t>::max();  // unlimited
};

// The allocator itself, over requests in bytes (usable on hand-made sequences).
class CachingAllocator {
 public:
  using Handle = std::int32_t;
  explicit CachingAllocator(CachingAllocatorRules rules = {});

  // A block for `bytes`; `own_segment` makes it open a segment of its own, as a block made in
  // an earlier step (a persistent workspace) sits in one in the oracle's snapshots.
  Handle malloc(std::int64_t bytes, bool own_segment = false);
  void free(Handle block);

  std::int64_t reserved() const { return reserved_; }
  std::int64_t peak_reserved() const { return peak_reserved_; }
  // What torch.cuda.memory_allocated counts: allocated blocks' sizes, an unsplit remainder
  // included.
  std::int64_t allocated() const { return allocated_; }
  std::int64_t peak_allocated() const { return peak_allocated_; }
  std::int64_t segments() const { return segments_; }
  std::int64_t round_size(std::int64_t bytes) const;
  std::int64_t allocation_size(std::int64_t rounded) const;

 private:
  struct Block {
    std::int64_t address = 0;
    std::int64_t size = 0;
    Handle prev = -1, next = -1;  // neighbours in the same segment
    bool small = false;
    bool allocated = false;
  };
  using Key = std::tuple<std::int64_t, std::int64_t, Handle>;  // size, address, block
  std::set<Key>& pool(bool small) { return small ? small_pool_ : large_pool_; }
  Handle new_segment(std::int64_t size, bool small);
  Handle find_free(std::int64_t size, bool small);
  void split(Handle block, std::int64_t size);
  void merge_into(Handle block, Handle neighbour);

  CachingAllocatorRules rules_;
  std::vector<Block> blocks_;
  std::set<Key> small_pool_, large_pool_;
  std::int64_t next_address_ = 0;
  std::int64_t reserved_ = 0, peak_reserved_ = 0;
  std::int64_t allocated_ = 0, peak_allocated_ = 0;
  std::int64_t segments_ = 0;
};

// The reserved curve of a run with a caching allocator, beside the trace's allocated one.
struct ReservedMemory {
  std::int64_t initial = 0;              // before the first step (the workspaces' segments)
  std::vector<std::int64_t> after_step;  // reserved bytes after each step's events
  std::int64_t peak_bytes = 0;           // torch.cuda.max_memory_reserved
  std::int64_t peak_step = -1;           // the step that reached it
  std::int64_t segments = 0;             // cudaMalloc'd segments at the end
  std::int64_t allocated_peak = 0;       // torch.cuda.max_memory_allocated (block sizes)
  // At the trace's allocated peak: what was reserved, and reserved minus allocated there.
  std::int64_t reserved_at_allocated_peak = 0;
  std::int64_t fragmentation_at_peak = 0;
};

// Replays every alloc and free of `trace` (a run with CUDA's memory semantics: its bytes are
// already rounded to 512 B) through a CachingAllocator. Allocations made before the first step
// in category `workspace` each open a segment of their own (the state a training step finds:
// the workspaces were made in the first step, among other tensors). Linear in the events, a
// logarithm per allocation.
ReservedMemory simulate_reserved(const Trace& trace, CachingAllocatorRules rules = {});

}  // namespace ckpt
