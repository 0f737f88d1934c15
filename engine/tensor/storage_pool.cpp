#include "engine/tensor/storage_pool.hpp"

#include <sys/mman.h>

#include <bit>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define CKPT_POOL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CKPT_POOL_ASAN 1
#endif
#endif
#ifdef CKPT_POOL_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace ckpt::storage_pool {

namespace {

constexpr std::size_t kAlignment = 64;
constexpr std::size_t kHugePage = std::size_t{2} << 20;
constexpr std::int64_t kDefaultLimit = std::int64_t{512} << 20;

// A cached block's bytes are off limits until it is handed out again, and a block's bytes past
// the size asked for are off limits too: under AddressSanitizer a use after free of a pooled
// block, or a write past a tensor's end into its class's slack, is still reported.
void poison(void* p, std::size_t n) {
#ifdef CKPT_POOL_ASAN
  ASAN_POISON_MEMORY_REGION(p, n);
#else
  (void)p;
  (void)n;
#endif
}
void unpoison(void* p, std::size_t n) {
#ifdef CKPT_POOL_ASAN
  ASAN_UNPOISON_MEMORY_REGION(p, n);
#else
  (void)p;
  (void)n;
#endif
}

void* system_alloc(std::size_t capacity) {
  const bool huge = capacity >= kHugePage;
  void* p = nullptr;
  if (posix_memalign(&p, huge ? kHugePage : kAlignment, capacity) != 0) throw std::bad_alloc();
  // Large blocks on 2 MiB pages: one fault instead of 512 on first touch, and fewer TLB misses
  // in the GEMMs that stream through them. Advice only: failure changes nothing.
  if (huge) madvise(p, capacity, MADV_HUGEPAGE);
  return p;
}

std::int64_t limit_from_environment() {
  if (const char* v = std::getenv("CKPTLAB_POOL_LIMIT_MB")) {
    char* end = nullptr;
    const long long mb = std::strtoll(v, &end, 10);
    if (end != v && *end == '\0' && mb >= 0) return static_cast<std::int64_t>(mb) << 20;
  }
  return kDefaultLimit;
}

class Pool {
 public:
  void* acquire(std::size_t bytes, std::size_t& capacity) {
    capacity = class_size(bytes);
    {
      std::lock_guard lock(mutex_);
      auto it = free_.find(capacity);
      if (it != free_.end() && !it->second.empty()) {
        const std::uint64_t seq = it->second.back();
        it->second.pop_back();
        auto entry = by_age_.find(seq);
        void* p = entry->second.block;
        by_age_.erase(entry);
        cached_bytes_ -= static_cast<std::int64_t>(capacity);
        ++hits_;
        unpoison(p, bytes);  // the tail past `bytes` stays poisoned: overflows are caught
        return p;
      }
      ++misses_;
    }
    void* p = system_alloc(capacity);
    poison(static_cast<char*>(p) + bytes, capacity - bytes);
    return p;
  }

  void release(void* p, std::size_t capacity) noexcept {
    std::lock_guard lock(mutex_);
    const auto size = static_cast<std::int64_t>(capacity);
    if (size > limit_ || !remember(p, capacity)) {
      released_bytes_ += size;
      unpoison(p, capacity);
      std::free(p);
      return;
    }
    cached_bytes_ += size;
    poison(p, capacity);
    evict_down_to(limit_);
  }

  StoragePoolStats stats() {
    std::lock_guard lock(mutex_);
    StoragePoolStats s;
    s.hits = hits_;
    s.misses = misses_;
    s.cached_bytes = cached_bytes_;
    s.cached_blocks = static_cast<std::int64_t>(by_age_.size());
    s.released_bytes = released_bytes_;
    s.limit_bytes = limit_;
    return s;
  }

  void set_limit(std::int64_t bytes) {
    std::lock_guard lock(mutex_);
    limit_ = bytes < 0 ? 0 : bytes;
    evict_down_to(limit_);
  }

  void trim() {
    std::lock_guard lock(mutex_);
    evict_down_to(0);
  }

 private:
  struct Entry {
    void* block;
    std::size_t capacity;
  };

  // Files the block under its class; false when there is no memory for the bookkeeping.
  bool remember(void* p, std::size_t capacity) noexcept {
    try {
      auto& seqs = free_[capacity];
      seqs.reserve(seqs.size() + 1);
      by_age_.emplace(next_seq_, Entry{p, capacity});
      seqs.push_back(next_seq_++);  // cannot throw: room reserved
      return true;
    } catch (...) {
      return false;
    }
  }

  // Frees idle blocks, oldest first, until at most `bound` bytes are cached.
  void evict_down_to(std::int64_t bound) noexcept {
    while (cached_bytes_ > bound && !by_age_.empty()) {
      auto oldest = by_age_.begin();
      const Entry e = oldest->second;
      auto& seqs = free_.find(e.capacity)->second;
      // Within a class, sequence numbers grow along the vector: the oldest is in front.
      for (auto s = seqs.begin(); s != seqs.end(); ++s)
        if (*s == oldest->first) {
          seqs.erase(s);
          break;
        }
      by_age_.erase(oldest);
      cached_bytes_ -= static_cast<std::int64_t>(e.capacity);
      released_bytes_ += static_cast<std::int64_t>(e.capacity);
      unpoison(e.block, e.capacity);
      std::free(e.block);
    }
  }

  std::mutex mutex_;
  std::unordered_map<std::size_t, std::vector<std::uint64_t>> free_;  // class -> seqs, LIFO
  std::map<std::uint64_t, Entry> by_age_;
  std::uint64_t next_seq_ = 0;
  std::int64_t cached_bytes_ = 0;
  std::int64_t hits_ = 0;
  std::int64_t misses_ = 0;
  std::int64_t released_bytes_ = 0;
  std::int64_t limit_ = limit_from_environment();
};

// Never destroyed: storages held by other static objects may be freed after this translation
// unit's statics are gone. The cached blocks stay reachable from here, so leak checkers see
// no leak (and the system takes them back at exit).
Pool& pool() {
  alignas(Pool) static unsigned char buffer[sizeof(Pool)];
  static Pool* instance = ::new (buffer) Pool();
  return *instance;
}

}  // namespace

std::size_t class_size(std::size_t bytes) {
  if (bytes <= 512) return bytes <= kAlignment ? kAlignment : (bytes + 63) / 64 * 64;
  // Four classes per power of two: steps of a quarter of the power just below the size.
  const int lg = std::bit_width(bytes - 1) - 1;
  const std::size_t step = std::size_t{1} << (lg - 2);
  return (bytes + step - 1) / step * step;
}

void* acquire(std::size_t bytes, std::size_t& capacity) {
  return pool().acquire(bytes, capacity);
}

void release(void* block, std::size_t capacity) noexcept {
  if (block) pool().release(block, capacity);
}

StoragePoolStats stats() {
  return pool().stats();
}

void set_limit(std::int64_t bytes) {
  pool().set_limit(bytes);
}

void trim() {
  pool().trim();
}

}  // namespace ckpt::storage_pool
