#include "engine/trace/caching_allocator.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/trace/trace.hpp"

namespace ckpt {

CachingAllocator::CachingAllocator(CachingAllocatorRules rules) : rules_(rules) {}

std::int64_t CachingAllocator::round_size(std::int64_t bytes) const {
  if (bytes < rules_.min_block) return rules_.min_block;
  return (bytes + rules_.min_block - 1) / rules_.min_block * rules_.min_block;
}

std::int64_t CachingAllocator::allocation_size(std::int64_t rounded) const {
  if (rounded <= rules_.small_size) return rules_.small_buffer;
  if (rounded < rules_.min_large_alloc) return rules_.large_buffer;
  return (rounded + rules_.round_large - 1) / rules_.round_large * rules_.round_large;
}

// cudaMalloc of a segment: its address is past every earlier one (a tie between equal cached
// sizes goes to the older segment, as the lower address usually is).
CachingAllocator::Handle CachingAllocator::new_segment(std::int64_t size, bool small) {
  Block b;
  b.address = next_address_;
  b.size = size;
  b.small = small;
  next_address_ += size;
  blocks_.push_back(b);
  reserved_ += size;
  peak_reserved_ = std::max(peak_reserved_, reserved_);
  ++segments_;
  return static_cast<Handle>(blocks_.size() - 1);
}

// get_free_block: the smallest cached block of the pool that fits, except the oversize ones.
CachingAllocator::Handle CachingAllocator::find_free(std::int64_t size, bool small) {
  auto& p = pool(small);
  const auto it = p.lower_bound(Key{size, 0, 0});
  if (it == p.end()) return -1;
  const std::int64_t found = std::get<0>(*it);
  if (size < rules_.max_split_size && found >= rules_.max_split_size) return -1;
  if (size >= rules_.max_split_size && found >= size + rules_.large_buffer) return -1;
  const Handle h = std::get<2>(*it);
  p.erase(it);
  return h;
}

// alloc_found_block: the block keeps `size`, the rest becomes a cached block after it.
void CachingAllocator::split(Handle h, std::int64_t size) {
  Block rest;
  rest.address = blocks_[h].address + size;
  rest.size = blocks_[h].size - size;
  rest.small = blocks_[h].small;
  rest.prev = h;
  rest.next = blocks_[h].next;
  blocks_.push_back(rest);
  const auto r = static_cast<Handle>(blocks_.size() - 1);
  if (blocks_[r].next >= 0) blocks_[blocks_[r].next].prev = r;
  blocks_[h].next = r;
  blocks_[h].size = size;
  pool(blocks_[r].small).insert(Key{blocks_[r].size, blocks_[r].address, r});
}

CachingAllocator::Handle CachingAllocator::malloc(std::int64_t bytes, bool own_segment) {
  if (bytes < 0) throw std::invalid_argument("caching allocator: negative request");
  const std::int64_t size = round_size(bytes);
  const bool small = size <= rules_.small_size;
  Handle h = own_segment ? -1 : find_free(size, small);
  if (h < 0) h = new_segment(allocation_size(size), small);
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
  pool(m.small).erase(Key{m.size, m.address, n});
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

void CachingAllocator::free(Handle h) {
  if (h < 0 || h >= static_cast<Handle>(blocks_.size()) || !blocks_[h].allocated)
    throw std::invalid_argument("caching allocator: free of a block that is not allocated");
  Block& b = blocks_[h];
  b.allocated = false;
  allocated_ -= b.size;
  for (const Handle n : {b.prev, b.next})
    if (n >= 0 && !blocks_[n].allocated) merge_into(h, n);
  pool(blocks_[h].small).insert(Key{blocks_[h].size, blocks_[h].address, h});
}

ReservedMemory simulate_reserved(const Trace& trace, CachingAllocatorRules rules) {
  CachingAllocator allocator(rules);
  ReservedMemory r;
  std::unordered_map<std::uint32_t, CachingAllocator::Handle> live;
  const PeakInfo peak = trace.peak();
  const std::int64_t steps = trace.step_count();
  r.after_step.reserve(static_cast<std::size_t>(std::max<std::int64_t>(steps, 0)));
  auto replay = [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      const TraceEvent e = trace.event(i);
      if (e.kind == TraceEventKind::alloc) {
        const bool workspace = e.step < 0 && e.category == MemoryCategory::workspace;
        live[e.allocation] = allocator.malloc(e.bytes, workspace);
      } else if (e.kind == TraceEventKind::free) {
        const auto it = live.find(e.allocation);
        if (it == live.end()) continue;  // made before the trace began
        allocator.free(it->second);
        live.erase(it);
      }
    }
  };
  replay(trace.first_event(-1), trace.first_event(0));
  r.initial = allocator.reserved();
  for (std::int64_t k = 0; k < steps; ++k) {
    const std::int64_t before = allocator.peak_reserved();
    replay(trace.first_event(k), trace.first_event(k + 1));
    r.after_step.push_back(allocator.reserved());
    if (allocator.peak_reserved() > before) r.peak_step = k;
    if (k == peak.step) r.reserved_at_allocated_peak = allocator.reserved();
  }
  r.peak_bytes = allocator.peak_reserved();
  r.segments = allocator.segments();
  r.allocated_peak = allocator.peak_allocated();
  if (peak.step < 0) r.reserved_at_allocated_peak = r.initial;
  r.fragmentation_at_peak = r.reserved_at_allocated_peak - peak.bytes;
  return r;
}

}  // namespace ckpt
