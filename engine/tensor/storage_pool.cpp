#include "engine/tensor/storage_pool.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <new>
#include <string>
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
// The default bound on idle bytes: follow the high-water mark (see Pool::idle_bound).
constexpr std::int64_t kFollowHighWater = -1;

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

// From this size up, blocks are mapped from the system directly and unmapped when freed:
// glibc's malloc raises its mmap threshold after each large free and then keeps such blocks in
// its heap, so a trimmed pool would still hold them resident (measured: 0.5-1.1 GiB left after
// a DenseNet-121 run and trim()).
constexpr std::size_t kMapFrom = std::size_t{256} << 10;
constexpr std::size_t kPage = 4096;

std::size_t mapped_length(std::size_t capacity) {
  return (capacity + kPage - 1) / kPage * kPage;
}

void* system_alloc(std::size_t capacity) {
  if (capacity < kMapFrom) {
    void* p = nullptr;
    if (posix_memalign(&p, kAlignment, capacity) != 0) throw std::bad_alloc();
    return p;
  }
  // Large blocks on 2 MiB pages: one fault instead of 512 on first touch, and fewer TLB misses
  // in the GEMMs that stream through them. Over-map by the alignment, then unmap both ends.
  const bool huge = capacity >= kHugePage;
  const std::size_t align = huge ? kHugePage : kPage;
  const std::size_t length = mapped_length(capacity);
  const std::size_t over = length + (huge ? align : 0);
  void* raw = mmap(nullptr, over, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const auto base = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (base + align - 1) / align * align;
  const std::size_t head = aligned - base;
  const std::size_t tail = over - head - length;
  if (head) munmap(raw, head);
  if (tail) munmap(reinterpret_cast<void*>(aligned + length), tail);
  void* p = reinterpret_cast<void*>(aligned);
  if (huge) madvise(p, length, MADV_HUGEPAGE);  // advice only: failure changes nothing
  return p;
}

void system_free(void* p, std::size_t capacity) noexcept {
  if (capacity < kMapFrom)
    std::free(p);
  else
    munmap(p, mapped_length(capacity));
}

std::int64_t limit_from_environment() {
  if (const char* v = std::getenv("CKPTLAB_POOL_LIMIT_MB")) {
    char* end = nullptr;
    const long long mb = std::strtoll(v, &end, 10);
    if (end != v && *end == '\0' && mb >= 0) return static_cast<std::int64_t>(mb) << 20;
  }
  return kFollowHighWater;
}

class Pool {
 public:
  void* acquire(std::size_t bytes, std::size_t& capacity) {
    capacity = class_size(bytes);
    {
      std::lock_guard lock(mutex_);
      auto it = idle_block_for(capacity);
      if (it != free_.end()) {
        capacity = it->first;
        const std::uint64_t seq = it->second.back();
        it->second.pop_back();
        auto entry = by_age_.find(seq);
        void* p = entry->second.block;
        by_age_.erase(entry);
        cached_bytes_ -= static_cast<std::int64_t>(capacity);
        ++hits_;
        note_in_use(capacity);
        unpoison(p, bytes);  // the tail past `bytes` stays poisoned: overflows are caught
        return p;
      }
      ++misses_;
      make_room_for(capacity);
      note_in_use(capacity);
    }
    void* p = nullptr;
    try {
      p = system_alloc(capacity);
    } catch (...) {
      std::lock_guard lock(mutex_);
      in_use_ -= static_cast<std::int64_t>(capacity);
      throw;
    }
    poison(static_cast<char*>(p) + bytes, capacity - bytes);
    return p;
  }

  void release(void* p, std::size_t capacity) noexcept {
    std::lock_guard lock(mutex_);
    const auto size = static_cast<std::int64_t>(capacity);
    in_use_ -= size;
    const std::int64_t bound = idle_bound();
    if (size > bound || !remember(p, capacity)) {
      released_bytes_ += size;
      unpoison(p, capacity);
      system_free(p, capacity);
      return;
    }
    cached_bytes_ += size;
    poison(p, capacity);
    evict_down_to(bound);
  }

  StoragePoolStats stats() {
    std::lock_guard lock(mutex_);
    StoragePoolStats s;
    s.hits = hits_;
    s.misses = misses_;
    s.cached_bytes = cached_bytes_;
    s.cached_blocks = static_cast<std::int64_t>(by_age_.size());
    s.released_bytes = released_bytes_;
    s.limit_bytes = idle_bound();
    s.in_use_bytes = in_use_;
    s.high_water_bytes = high_water_;
    return s;
  }

  void set_limit(std::int64_t bytes) {
    std::lock_guard lock(mutex_);
    limit_ = bytes < 0 ? kFollowHighWater : bytes;
    evict_down_to(idle_bound());
  }

  void trim() {
    std::lock_guard lock(mutex_);
    evict_down_to(0);
    high_water_ = in_use_;
  }

 private:
  struct Entry {
    void* block;
    std::size_t capacity;
  };
  using FreeLists = std::map<std::size_t, std::deque<std::uint64_t>>;

  // The smallest class with an idle block that serves `capacity`, up to one and a half times
  // its size. A step frees a layer's activations in one class and asks for its gradients in a
  // neighbouring one: served from exact classes only, ResNet-50 (224², batch 8) returned
  // 0.6-0.8 GiB to the system per step and mapped as much afresh, every page of it zero-filled
  // by the kernel on first touch; with this, 0.15 GiB. Up to twice the size left nothing to
  // return, but held the resident peak at 1.28-1.31 x (traced + weights) instead of 1.24-1.26.
  FreeLists::iterator idle_block_for(std::size_t capacity) {
    for (auto it = free_.lower_bound(capacity);
         it != free_.end() && it->first <= capacity + capacity / 2; ++it)
      if (!it->second.empty()) return it;
    return free_.end();
  }

  // Files the block under its class; false when there is no memory for the bookkeeping.
  // A deque, not a vector grown one slot at a time: a backward that releases 200,000 saved
  // scalars (HeavyModel) made that a copy of the whole class per release, a quadratic that was
  // a quarter of its run, and eviction erases at the front.
  bool remember(void* p, std::size_t capacity) noexcept {
    std::deque<std::uint64_t>* seqs = nullptr;
    try {
      seqs = &free_[capacity];
      seqs->push_back(next_seq_);
    } catch (...) {
      return false;
    }
    try {
      by_age_.emplace(next_seq_, Entry{p, capacity});
    } catch (...) {
      seqs->pop_back();
      return false;
    }
    ++next_seq_;
    return true;
  }

  // What idle blocks may add up to. By default, what keeps in-use plus idle bytes within the
  // high-water mark plus its slack, the same bound a miss enforces: a training step's blocks
  // all stay cached for the next step, and the process holds no more than at its peak. A fixed
  // 512 MiB bound sent ResNet-50's (224², batch 8) 0.6-0.8 GiB of blocks beyond it back to the
  // system every step, to be mapped and zero-filled again by the next: 10-25% of its step.
  std::int64_t idle_bound() const {
    if (limit_ != kFollowHighWater) return limit_;
    const std::int64_t slack = std::max(kMinSlack, high_water_ / 8);
    return std::max<std::int64_t>(high_water_ + slack - in_use_, 0);
  }

  void note_in_use(std::size_t capacity) {
    in_use_ += static_cast<std::int64_t>(capacity);
    high_water_ = std::max(high_water_, in_use_);
  }

  // A miss is served by the system: idle blocks of other classes make way first, so that what
  // the process holds (blocks in use plus idle ones) stays within an eighth (at least 64 MiB)
  // of the most it ever had in use. Without this, a run's peak finds the previous phase's
  // blocks idle beside it: DenseNet-121's 1.01 GiB peak was 1.88 GiB resident, 511 MiB of it
  // idle in the pool.
  void make_room_for(std::size_t capacity) noexcept {
    const auto c = static_cast<std::int64_t>(capacity);
    const std::int64_t slack = std::max(kMinSlack, high_water_ / 8);
    const std::int64_t bound = std::max(high_water_, in_use_ + c) + slack - in_use_ - c;
    evict_down_to(std::max<std::int64_t>(bound, 0));
  }

  // Frees idle blocks, oldest first, until at most `bound` bytes are cached.
  void evict_down_to(std::int64_t bound) noexcept {
    while (cached_bytes_ > bound && !by_age_.empty()) {
      auto oldest = by_age_.begin();
      const Entry e = oldest->second;
      auto& seqs = free_.find(e.capacity)->second;
      // Within a class, sequence numbers grow along the deque: the oldest is in front.
      for (auto s = seqs.begin(); s != seqs.end(); ++s)
        if (*s == oldest->first) {
          seqs.erase(s);
          break;
        }
      by_age_.erase(oldest);
      cached_bytes_ -= static_cast<std::int64_t>(e.capacity);
      released_bytes_ += static_cast<std::int64_t>(e.capacity);
      unpoison(e.block, e.capacity);
      system_free(e.block, e.capacity);
    }
  }

  std::mutex mutex_;
  FreeLists free_;  // class -> seqs, LIFO
  std::map<std::uint64_t, Entry> by_age_;
  std::uint64_t next_seq_ = 0;
  std::int64_t cached_bytes_ = 0;
  std::int64_t hits_ = 0;
  std::int64_t misses_ = 0;
  std::int64_t released_bytes_ = 0;
  std::int64_t limit_ = limit_from_environment();
  std::int64_t in_use_ = 0;      // bytes (by class) of blocks handed out and not yet returned
  std::int64_t high_water_ = 0;  // the most in_use_ has been
  static constexpr std::int64_t kMinSlack = std::int64_t{64} << 20;
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
