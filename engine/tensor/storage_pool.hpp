#pragma once

#include <cstddef>
#include <cstdint>

namespace ckpt {

// Process-wide cache of freed CPU blocks behind Storage. A training step allocates the same
// sizes every time; handing a freed block back to the next request of its size class spares
// the page faults (and zero-filling by the kernel) that a fresh large block costs on every
// step. The MemoryLedger never sees the cache: it records what tensors hold, and a cached
// block belongs to no tensor. Thread-safe (Runners allocate on their own worker threads).
//
// Sizes are rounded up to classes of four per power of two (at most 25% more than asked,
// address space only: untouched pages cost nothing); a request is served from the smallest
// idle block of its class or of a larger one up to one and a half times its size. In-use plus
// idle bytes stay within the high-water mark of in-use bytes plus an eighth of it (at least
// 64 MiB): a request no idle block serves releases the least recently cached blocks first, and
// so does a release past that bound. What the process holds follows the traced peak, and a
// step's blocks all serve the next step. trim() returns every idle block and starts the
// high-water mark afresh (the app does so when it opens another model). The environment
// variable CKPTLAB_POOL_LIMIT_MB at start-up, or set_limit(), bounds idle bytes by a fixed
// figure instead (0 disables caching). Blocks from 256 KiB up are mapped and unmapped
// directly, so that a released block leaves the process at once.
struct StoragePoolStats {
  std::int64_t hits = 0;              // requests served from the cache
  std::int64_t misses = 0;            // requests that went to the system allocator
  std::int64_t cached_bytes = 0;      // idle bytes held now (by class size)
  std::int64_t cached_blocks = 0;     // idle blocks held now
  std::int64_t released_bytes = 0;    // idle bytes returned to the system so far
  std::int64_t limit_bytes = 0;       // bound on cached_bytes now
  std::int64_t in_use_bytes = 0;      // held by storages now (by class size)
  std::int64_t high_water_bytes = 0;  // the most ever held by storages at once
};

namespace storage_pool {

// A block of at least `bytes` bytes, 64-byte aligned (2 MiB aligned, with transparent huge
// pages requested, from 2 MiB up); `capacity` receives its class size, which release() needs.
// Throws std::bad_alloc when the system has no memory left.
void* acquire(std::size_t bytes, std::size_t& capacity);
// Returns a block from acquire() to the cache (or to the system when caching it would pass
// the limit).
void release(void* block, std::size_t capacity) noexcept;

StoragePoolStats stats();
// Sets a fixed bound on idle bytes (negative: follow the high-water mark, the default) and
// trims the cache down to it at once.
void set_limit(std::int64_t bytes);
// Returns every idle block to the system and restarts the high-water mark from the bytes in
// use now (when another model is opened, or the bench moves to its next model).
void trim();
// The class size a request of `bytes` is served from.
std::size_t class_size(std::size_t bytes);

}  // namespace storage_pool

}  // namespace ckpt
