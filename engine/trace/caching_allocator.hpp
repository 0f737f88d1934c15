#pragma once

// Reserved memory: PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp, 2.x,
// class DeviceCachingAllocator; default settings: no expandable segments, max_split_size
// unlimited, no garbage collection, one stream) replayed over the allocations of a run. What a
// CUDA run allocates is the ledger's; what the process takes from the card
// (torch.cuda.max_memory_reserved) is the segments this allocator cudaMallocs for them, which
// depends on the order of allocations and frees, not only on their sizes: 8 x 16 MiB allocated,
// freed, then 4 x 32 MiB reserve 256 MiB; the reverse order, 128 MiB.
//
// The rules, each as the allocator's source has it (the functions of DeviceCachingAllocator
// named in caching_allocator.cpp where each is applied):
//   round_size              every request rounded up to 512 B (kMinBlockSize)
//   get_pool                requests up to 1 MiB (kSmallSize) from the small pool, others large
//   get_allocation_size     a new segment: 2 MiB (kSmallBuffer) for a small request, 20 MiB
//                           (kLargeBuffer) below 10 MiB (kMinLargeAlloc), else the request
//                           rounded up to 2 MiB (kRoundLarge)
//   get_free_block          the smallest cached block of the pool on the same stream that fits
//                           (BlockComparatorSize: stream, size, then address); an oversize block
//                           (>= max_split_size) serves only a request that is oversize too and
//                           within kLargeBuffer of it
//   should_split            a small block is split when 512 B or more remain, a large one when
//                           more than 1 MiB remains (and the request is below max_split_size):
//                           an unsplit remainder is allocated with the block, and counted in
//                           torch.cuda.memory_allocated
//   free_block              a freed block merges with its free neighbours in its own segment
//                           (never across segments) and stays cached: reserved does not shrink
//   alloc_block             cudaMalloc of a new segment, refused beyond the card's capacity
//   release_available_cached_blocks  on a refusal, with max_split_size set: cached oversize
//                           segments are freed (one that fits, else the largest first)
//   release_cached_blocks   then every cached whole segment is freed (torch.cuda.empty_cache),
//                           and the cudaMalloc retried once more before out of memory
//   garbage_collect_cached_blocks  off unless garbage_collection_threshold is set (with a
//                           memory fraction): before a cudaMalloc above the threshold, cached
//                           whole large segments at least as old as the average are freed
// Checked against the oracle's snapshots (docs/reference/gpu-oracle.md; snapshots in
// tests/engine/data/snapshots): replaying their alloc/free events gives their segments and
// max_memory_reserved exactly.

#include <cstdint>
#include <limits>
#include <set>
#include <stdexcept>
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
  // What cudaMalloc can still take (the card less the CUDA context, or a memory fraction's
  // allowed_memory_maximum): unlimited unless given.
  std::int64_t capacity = std::numeric_limits<std::int64_t>::max();
  // PYTORCH_CUDA_ALLOC_CONF garbage_collection_threshold: 0, off (PyTorch's default).
  double garbage_collection_threshold = 0;
};

// torch.cuda.OutOfMemoryError: nothing cached could be freed to make room.
class CachingAllocatorOutOfMemory : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The allocator itself, over requests in bytes (usable on hand-made sequences).
class CachingAllocator {
 public:
  using Handle = std::int32_t;
  using Stream = std::int32_t;
  explicit CachingAllocator(CachingAllocatorRules rules = {});

  // A block for `bytes` on `stream`; `own_segment` makes it open a segment of its own, as a
  // block made in an earlier step (a persistent workspace) sits in one in the oracle's
  // snapshots. Throws CachingAllocatorOutOfMemory beyond the capacity.
  Handle malloc(std::int64_t bytes, bool own_segment = false, Stream stream = 0);
  void free(Handle block);
  // torch.cuda.empty_cache (release_cached_blocks): frees every cached whole segment.
  void empty_cache();

  std::int64_t reserved() const { return reserved_; }
  std::int64_t peak_reserved() const { return peak_reserved_; }
  // What torch.cuda.memory_allocated counts: allocated blocks' sizes, an unsplit remainder
  // included.
  std::int64_t allocated() const { return allocated_; }
  std::int64_t peak_allocated() const { return peak_allocated_; }
  std::int64_t segments() const { return segments_; }
  // The block's size as allocated (the request rounded, or more when not split).
  std::int64_t block_size(Handle block) const { return blocks_.at(block).size; }
  // memory_stats' num_alloc_retries (a cudaMalloc refused, cached segments freed) and
  // num_ooms; segments freed by empty_cache, retries and garbage collection.
  std::int64_t alloc_retries() const { return alloc_retries_; }
  std::int64_t segments_released() const { return segments_released_; }
  std::int64_t round_size(std::int64_t bytes) const;
  std::int64_t allocation_size(std::int64_t rounded) const;

 private:
  struct Block {
    std::int64_t address = 0;
    std::int64_t size = 0;
    Handle prev = -1, next = -1;  // neighbours in the same segment
    Stream stream = 0;
    bool small = false;
    bool allocated = false;
    bool released = false;           // its segment was cudaFree'd
    std::int64_t gc_count_base = 0;  // the pool's get_free_block count when it was cached
    bool whole_segment() const { return prev < 0 && next < 0; }
  };
  // BlockComparatorSize: stream, then size, then address.
  using Key = std::tuple<Stream, std::int64_t, std::int64_t, Handle>;
  Key key_of(Handle h) const {
    return Key{blocks_[h].stream, blocks_[h].size, blocks_[h].address, h};
  }
  std::set<Key>& pool(bool small) { return small ? small_pool_ : large_pool_; }
  void cache(Handle h);
  Handle alloc_block(std::int64_t size, bool small, Stream stream);
  Handle find_free(std::int64_t size, bool small, Stream stream);
  void split(Handle block, std::int64_t size);
  void merge_into(Handle block, Handle neighbour);
  void release_block(Handle block);
  bool release_available_cached_blocks(std::int64_t size, bool small, Stream stream);
  void garbage_collect_cached_blocks();

  CachingAllocatorRules rules_;
  std::vector<Block> blocks_;
  std::set<Key> small_pool_, large_pool_;
  std::int64_t next_address_ = 0;
  std::int64_t reserved_ = 0, peak_reserved_ = 0;
  std::int64_t allocated_ = 0, peak_allocated_ = 0;
  std::int64_t segments_ = 0;
  std::int64_t alloc_retries_ = 0, segments_released_ = 0;
  std::int64_t large_get_free_calls_ = 0;  // BlockPool::get_free_blocks_call_count
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
  // With a capacity: the cudaMallocs refused and retried after freeing cached segments, and the
  // step at which nothing cached could make room (-1: none; torch.cuda.OutOfMemoryError).
  std::int64_t alloc_retries = 0;
  std::int64_t out_of_memory_step = -1;
  // For each event of the trace, the bytes of the block the allocator gave its allocation (an
  // alloc and its free alike; 0 for other events): what torch.cuda.memory_allocated counts,
  // which is more than the request where a large block was not split.
  std::vector<std::int64_t> block_bytes;
};

// Replays every alloc and free of `trace` (a run with CUDA's memory semantics: its bytes are
// already rounded to 512 B) through a CachingAllocator. Allocations made before the first step
// in category `workspace` each open a segment of their own (the state a training step finds:
// the workspaces were made in the first step, among other tensors). Linear in the events, a
// logarithm per allocation. An out of memory ends the replay at its step.
ReservedMemory simulate_reserved(const Trace& trace, CachingAllocatorRules rules = {});

}  // namespace ckpt
