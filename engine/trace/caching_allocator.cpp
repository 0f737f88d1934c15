#include "engine/trace/caching_allocator.hpp"

#include <algorithm>
#include <string>

#include "engine/trace/trace.hpp"

// Each function below follows the one of c10/cuda/CUDACachingAllocator.cpp (PyTorch 2.x,
// DeviceCachingAllocator) that its comment names; the header lists the rules.

namespace ckpt {

namespace {

std::string mib(std::int64_t bytes) {
  return std::to_string(static_cast<double>(bytes) / (1 << 20)) + " MiB";
}

}  // namespace

CachingAllocator::CachingAllocator(CachingAllocatorRules rules) : rules_(rules) {}

// round_size: at least kMinBlockSize, in multiples of it.
std::int64_t CachingAllocator::round_size(std::int64_t bytes) const {
  if (bytes < rules_.min_block) return rules_.min_block;
  return (bytes + rules_.min_block - 1) / rules_.min_block * rules_.min_block;
}

// get_allocation_size: kSmallBuffer for the small pool, kLargeBuffer below kMinLargeAlloc, else
// the request rounded up to kRoundLarge.
std::int64_t CachingAllocator::allocation_size(std::int64_t rounded) const {
  if (rounded <= rules_.small_size) return rules_.small_buffer;
  if (rounded < rules_.min_large_alloc) return rules_.large_buffer;
  return (rounded + rules_.round_large - 1) / rules_.round_large * rules_.round_large;
}

// free_block's last step: the block goes back to its pool, its age counted from now
// (gc_count_base, read by garbage_collect_cached_blocks).
void CachingAllocator::cache(Handle h) {
  blocks_[h].gc_count_base = large_get_free_calls_;
  pool(blocks_[h].small).insert(key_of(h));
}

// alloc_block: cudaMalloc of a segment, refused when the card (or the memory fraction) has no
// room for it. Its address is past every earlier one, so that a tie between equal cached sizes
// goes to the older segment, as the lower address usually is.
CachingAllocator::Handle CachingAllocator::alloc_block(std::int64_t size, bool small,
                                                       Stream stream) {
  if (size > rules_.capacity - reserved_) return -1;
  Block b;
  b.address = next_address_;
  b.size = size;
  b.small = small;
  b.stream = stream;
  next_address_ += size;
  blocks_.push_back(b);
  reserved_ += size;
  peak_reserved_ = std::max(peak_reserved_, reserved_);
  ++segments_;
  return static_cast<Handle>(blocks_.size() - 1);
}

// get_free_block: the smallest cached block of the pool on the request's stream that fits
// (lower_bound on BlockComparatorSize), except the oversize ones: a block at or above
// max_split_size serves only a request at or above it too, and only within kLargeBuffer.
CachingAllocator::Handle CachingAllocator::find_free(std::int64_t size, bool small, Stream stream) {
  if (!small && rules_.garbage_collection_threshold > 0) ++large_get_free_calls_;
  auto& p = pool(small);
  const auto it = p.lower_bound(Key{stream, size, 0, 0});
  if (it == p.end() || std::get<0>(*it) != stream) return -1;
  const std::int64_t found = std::get<1>(*it);
  if (size < rules_.max_split_size && found >= rules_.max_split_size) return -1;
  if (size >= rules_.max_split_size && found >= size + rules_.large_buffer) return -1;
  const Handle h = std::get<3>(*it);
  p.erase(it);
  return h;
}

// alloc_found_block: the block keeps `size`, the rest becomes a cached block after it.
void CachingAllocator::split(Handle h, std::int64_t size) {
  Block rest;
  rest.address = blocks_[h].address + size;
  rest.size = blocks_[h].size - size;
  rest.small = blocks_[h].small;
  rest.stream = blocks_[h].stream;
  rest.prev = h;
  rest.next = blocks_[h].next;
  blocks_.push_back(rest);
  const auto r = static_cast<Handle>(blocks_.size() - 1);
  if (blocks_[r].next >= 0) blocks_[blocks_[r].next].prev = r;
  blocks_[h].next = r;
  blocks_[h].size = size;
  cache(r);
}

// release_block: cudaFree of a cached whole segment.
void CachingAllocator::release_block(Handle h) {
  Block& b = blocks_[h];
  pool(b.small).erase(key_of(h));
  reserved_ -= b.size;
  --segments_;
  ++segments_released_;
  b.released = true;
}

// release_available_cached_blocks: with max_split_size set, frees the smallest cached oversize
// segment that covers the request, or else the largest ones until their sizes do; without it,
// nothing.
bool CachingAllocator::release_available_cached_blocks(std::int64_t size, bool small,
                                                       Stream stream) {
  if (rules_.max_split_size == std::numeric_limits<std::int64_t>::max()) return false;
  auto& p = pool(small);
  const std::int64_t want = std::max(size, rules_.max_split_size);
  auto it = p.lower_bound(Key{stream, want, 0, 0});
  if (it != p.end() && std::get<0>(*it) == stream) {
    release_block(std::get<3>(*it));
    return true;
  }
  if (it == p.begin()) return false;
  std::int64_t released = 0;
  --it;  // the largest block of the stream
  std::vector<Handle> victims;
  while (released < want && std::get<1>(*it) >= rules_.max_split_size &&
         std::get<0>(*it) == stream) {
    victims.push_back(std::get<3>(*it));
    released += std::get<1>(*it);
    if (it == p.begin()) break;
    --it;
  }
  for (const Handle h : victims) release_block(h);
  return released >= want;
}

// release_cached_blocks (torch.cuda.empty_cache): release_blocks of both pools, every cached
// block that is a whole segment.
void CachingAllocator::empty_cache() {
  for (const bool small : {false, true}) {
    std::vector<Handle> whole;
    for (const Key& k : pool(small))
      if (blocks_[std::get<3>(k)].whole_segment()) whole.push_back(std::get<3>(k));
    for (const Handle h : whole) release_block(h);
  }
}

// garbage_collect_cached_blocks: above garbage_collection_threshold of the capacity, frees
// cached whole large segments whose age (get_free_block calls since they were cached) is at
// least the average, round after round, until the excess is reclaimed.
void CachingAllocator::garbage_collect_cached_blocks() {
  const auto threshold = static_cast<std::int64_t>(rules_.garbage_collection_threshold *
                                                   static_cast<double>(rules_.capacity));
  if (reserved_ <= threshold) return;
  const std::int64_t target = reserved_ - threshold;
  const auto age = [&](Handle h) { return large_get_free_calls_ - blocks_[h].gc_count_base; };
  std::int64_t total_age = 0, freeable = 0, reclaimed = 0;
  for (const Key& k : large_pool_)
    if (blocks_[std::get<3>(k)].whole_segment()) {
      total_age += age(std::get<3>(k));
      ++freeable;
    }
  bool freed = true;
  while (reclaimed < target && freed && freeable > 0) {
    const double average = static_cast<double>(total_age) / static_cast<double>(freeable);
    freed = false;
    std::vector<Handle> old;
    for (const Key& k : large_pool_) {
      const Handle h = std::get<3>(k);
      if (blocks_[h].whole_segment() && static_cast<double>(age(h)) >= average) old.push_back(h);
    }
    for (const Handle h : old) {
      freed = true;
      reclaimed += blocks_[h].size;
      total_age -= age(h);
      --freeable;
      release_block(h);
    }
  }
}

// malloc: get_free_block, else (garbage collection,) alloc_block, retried after
// release_available_cached_blocks and after release_cached_blocks; then should_split and
// alloc_found_block.
CachingAllocator::Handle CachingAllocator::malloc(std::int64_t bytes, bool own_segment,
                                                  Stream stream) {
  if (bytes < 0) throw std::invalid_argument("caching allocator: negative request");
  const std::int64_t size = round_size(bytes);
  const bool small = size <= rules_.small_size;  // get_pool
  Handle h = own_segment ? -1 : find_free(size, small, stream);
  if (h < 0) {
    const bool fraction_set = rules_.capacity != std::numeric_limits<std::int64_t>::max();
    if (fraction_set && rules_.garbage_collection_threshold > 0) garbage_collect_cached_blocks();
    const std::int64_t segment = allocation_size(size);
    h = alloc_block(segment, small, stream);
    if (h < 0 && release_available_cached_blocks(size, small, stream))
      h = alloc_block(segment, small, stream);
    if (h < 0) {
      empty_cache();
      ++alloc_retries_;
      h = alloc_block(segment, small, stream);
    }
    if (h < 0)
      throw CachingAllocatorOutOfMemory("CUDA out of memory. Tried to allocate " + mib(size) +
                                        ": " + mib(reserved_) + " reserved in total by PyTorch, " +
                                        mib(allocated_) + " allocated, capacity " +
                                        mib(rules_.capacity));
  }
  // should_split: a small block when kMinBlockSize or more remain; a large one below
  // max_split_size when more than kSmallSize remain.
  const std::int64_t remaining = blocks_[h].size - size;
  const bool split_it = small ? remaining >= rules_.min_block
                              : size < rules_.max_split_size && remaining > rules_.small_size;
  if (split_it) split(h, size);
  blocks_[h].allocated = true;
  allocated_ += blocks_[h].size;
  peak_allocated_ = std::max(peak_allocated_, allocated_);
  return h;
}

// try_merge_blocks: `neighbour` (free, same segment) is absorbed into `h`.
void CachingAllocator::merge_into(Handle h, Handle n) {
  Block& b = blocks_[h];
  Block& m = blocks_[n];
  pool(m.small).erase(key_of(n));
  if (b.prev == n) {
    b.address = m.address;
    b.prev = m.prev;
    if (b.prev >= 0) blocks_[b.prev].next = h;
  } else {
    b.next = m.next;
    if (b.next >= 0) blocks_[b.next].prev = h;
  }
  b.size += m.size;
  m.size = 0;
  m.prev = m.next = -1;
}

// free_block: merged with its free neighbours (try_merge_blocks, previous then next), then
// cached in its pool.
void CachingAllocator::free(Handle h) {
  if (h < 0 || h >= static_cast<Handle>(blocks_.size()) || !blocks_[h].allocated ||
      blocks_[h].released)
    throw std::invalid_argument("caching allocator: free of a block that is not allocated");
  Block& b = blocks_[h];
  b.allocated = false;
  allocated_ -= b.size;
  for (const Handle n : {b.prev, b.next})
    if (n >= 0 && !blocks_[n].allocated) merge_into(h, n);
  cache(h);
}

ReservedMemory simulate_reserved(const Trace& trace, CachingAllocatorRules rules) {
  CachingAllocator allocator(rules);
  ReservedMemory r;
  std::unordered_map<std::uint32_t, CachingAllocator::Handle> live;
  r.block_bytes.assign(static_cast<std::size_t>(trace.event_count()), 0);
  const PeakInfo peak = trace.peak();
  const std::int64_t steps = trace.step_count();
  r.after_step.reserve(static_cast<std::size_t>(std::max<std::int64_t>(steps, 0)));
  auto replay = [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      const TraceEvent e = trace.event(i);
      if (e.kind == TraceEventKind::alloc) {
        const bool workspace = e.step < 0 && e.category == MemoryCategory::workspace;
        const auto h = allocator.malloc(e.bytes, workspace);
        live[e.allocation] = h;
        r.block_bytes[static_cast<std::size_t>(i)] = allocator.block_size(h);
      } else if (e.kind == TraceEventKind::free) {
        const auto it = live.find(e.allocation);
        if (it == live.end()) continue;  // made before the trace began
        r.block_bytes[static_cast<std::size_t>(i)] = allocator.block_size(it->second);
        allocator.free(it->second);
        live.erase(it);
      }
    }
  };
  const auto finish = [&] {
    r.peak_bytes = allocator.peak_reserved();
    r.segments = allocator.segments();
    r.allocated_peak = allocator.peak_allocated();
    r.alloc_retries = allocator.alloc_retries();
    if (peak.step < 0) r.reserved_at_allocated_peak = r.initial;
    r.fragmentation_at_peak = r.reserved_at_allocated_peak - peak.bytes;
  };
  try {
    replay(trace.first_event(-1), trace.first_event(0));
  } catch (const CachingAllocatorOutOfMemory&) {
    r.out_of_memory_step = 0;
    finish();
    return r;
  }
  r.initial = allocator.reserved();
  for (std::int64_t k = 0; k < steps; ++k) {
    const std::int64_t before = allocator.peak_reserved();
    try {
      replay(trace.first_event(k), trace.first_event(k + 1));
    } catch (const CachingAllocatorOutOfMemory&) {
      r.out_of_memory_step = k;
      r.after_step.push_back(allocator.reserved());
      break;
    }
    r.after_step.push_back(allocator.reserved());
    if (allocator.peak_reserved() > before) r.peak_step = k;
    if (k == peak.step) r.reserved_at_allocated_peak = allocator.reserved();
  }
  finish();
  return r;
}

}  // namespace ckpt
