#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ckpt {

// Where a byte belongs. Follows PyTorch's memory profiler where it fits, plus the three
// categories checkpointing adds (checkpoint input, recomputed, RNG state), the buffers a
// device's libraries keep for themselves (workspace: cuBLAS's on CUDA, memory_semantics.hpp),
// and the optimizer's state (momentum buffers, Adam's moments and steps, the gradient scaler's
// scale): live from before the forward, as in every training step after the first.
enum class MemoryCategory : std::uint8_t {
  parameter,
  input,
  activation,  // saved for backward
  temporary,
  gradient,
  checkpoint_input,
  recomputed,
  rng_state,
  workspace,        // after RNG state: a CPU run never has any, and keeps its category numbers
  optimizer_state,  // last: a run without an optimizer keeps its traces' category numbers
};
inline constexpr std::size_t kMemoryCategoryCount = 10;
const char* category_name(MemoryCategory c);
MemoryCategory category_from_name(std::string_view name);  // throws std::invalid_argument

using AllocationId = std::uint64_t;
// One allocation's bytes are below 2^48 (256 TiB): what a trace event holds (engine/trace). A dry
// run reaches such sizes at absurd batches; it is a named error, never a wrapped-around number.
inline constexpr std::int64_t kMaxAllocationBytes = std::int64_t{1} << 48;
using CategoryBytes = std::array<std::int64_t, kMemoryCategoryCount>;

// One change of what the ledger holds, in the order it happened.
struct AllocationEvent {
  enum class Kind : std::uint8_t {
    alloc,         // allocation, bytes, category
    free,          // allocation, bytes, category
    recategorize,  // allocation, bytes, category (new), previous
    tag,           // allocation, name: the tensor an allocation holds
  };
  Kind kind{};
  MemoryCategory category{};
  MemoryCategory previous{};
  AllocationId allocation = 0;
  std::int64_t bytes = 0;
  std::string_view name;  // tag only; valid during the call
};

class AllocationListener {
 public:
  virtual ~AllocationListener() = default;
  virtual void on_allocation(const AllocationEvent& event) = 0;
};

// The allocator's book behind every tensor's storage: each allocation and free with its bytes
// and category. Live bytes per category and the peak are exact at every moment. It counts what
// tensors hold, never what a cache holds. What the bytes are for (which op, which phase of a
// run) is the business of the floors above (engine/autograd's ExecutionContext), which listen.
class MemoryLedger {
 public:
  MemoryLedger() = default;
  MemoryLedger(const MemoryLedger&) = delete;
  MemoryLedger& operator=(const MemoryLedger&) = delete;

  // The ledger new tensors draw from on this thread (a process-wide default unless a
  // LedgerScope is active).
  static std::shared_ptr<MemoryLedger> current();
  // The ledger of allocations made outside any LedgerScope.
  static std::shared_ptr<MemoryLedger> process_default();

  // Registers bytes in the current category; throws std::runtime_error when a cap is set and
  // would be exceeded.
  AllocationId record_alloc(std::int64_t bytes);
  void record_free(AllocationId id);
  void recategorize(AllocationId id, MemoryCategory to);
  MemoryCategory category_of(AllocationId id) const;
  void tag(AllocationId id, std::string_view tensor_name);

  std::int64_t live_bytes() const;
  std::int64_t live_bytes(MemoryCategory c) const;
  CategoryBytes live_by_category() const;
  std::int64_t peak_bytes() const;
  std::int64_t live_allocations() const;
  void reset_peak();
  // 0 means no cap.
  void set_cap(std::int64_t bytes) { cap_ = bytes; }
  std::int64_t cap() const { return cap_; }
  // Names the place of an allocation in a cap error ("in conv2d (features.conv0)"); set by
  // whoever knows (the execution context), cleared with an empty function.
  void set_locator(std::function<std::string()> locator);
  // What allocations made outside any op are for ("the RNG state of checkpoint 'block'"), named
  // in errors where the locator names no op; innermost AllocationPurpose first.
  void push_purpose(std::string purpose);
  void pop_purpose();

  // Fault injection (tests, `ckptlab-cli run --fail-allocation`): the k-th allocation counted
  // from the ledger's first (1-based, as allocation_count() numbers them) throws the same kind
  // of error as the cap, naming the op, so that every error path of a run can be reached on
  // purpose. 0 turns it off.
  void fail_allocation_at(std::int64_t k);
  // Allocations requested so far, a failed (injected or capped) one included.
  std::int64_t allocation_count() const;

  // The category of new allocations: the innermost CategoryScope's, else the base one (which
  // the phase of a run sets: inputs at setup, temporaries in forward and backward, recomputed
  // in a recomputation).
  MemoryCategory default_category() const;
  void push_category(MemoryCategory c) { category_stack_.push_back(c); }
  void pop_category() { category_stack_.pop_back(); }
  MemoryCategory base_category() const { return base_category_.load(std::memory_order_relaxed); }
  void set_base_category(MemoryCategory c) { base_category_.store(c, std::memory_order_relaxed); }

  void add_listener(AllocationListener* listener);
  void remove_listener(AllocationListener* listener);
  bool has_listeners() const { return !listeners_.empty(); }

 private:
  struct Live {
    std::int64_t bytes;
    MemoryCategory category;
  };
  void publish(const AllocationEvent& e);
  std::string where() const;

  mutable std::recursive_mutex mutex_;
  std::unordered_map<AllocationId, Live> live_;
  CategoryBytes by_category_{};
  std::int64_t live_total_ = 0;
  std::int64_t peak_ = 0;
  std::int64_t cap_ = 0;
  std::int64_t requests_ = 0;
  std::int64_t fail_at_ = 0;
  AllocationId next_id_ = 1;
  std::function<std::string()> locator_;
  std::vector<std::string> purposes_;
  std::vector<MemoryCategory> category_stack_;
  // Atomic: every thread's default execution context sets the phase's category on the
  // process's default ledger (ThreadSanitizer found the concurrent writes, `./run.sh tsan`).
  std::atomic<MemoryCategory> base_category_{MemoryCategory::input};
  std::vector<AllocationListener*> listeners_;
};

// Makes `ledger` the current one on this thread for the scope's lifetime.
class LedgerScope {
 public:
  explicit LedgerScope(std::shared_ptr<MemoryLedger> ledger);
  ~LedgerScope();
  LedgerScope(const LedgerScope&) = delete;
  LedgerScope& operator=(const LedgerScope&) = delete;

 private:
  std::shared_ptr<MemoryLedger> previous_;
};

// Names what the current ledger's allocations in this scope are for (see push_purpose).
class AllocationPurpose {
 public:
  explicit AllocationPurpose(std::string purpose);
  ~AllocationPurpose();
  AllocationPurpose(const AllocationPurpose&) = delete;
  AllocationPurpose& operator=(const AllocationPurpose&) = delete;

 private:
  std::shared_ptr<MemoryLedger> ledger_;
};

// New allocations in this scope get category `c` (parameters, inputs, gradients, RNG state).
class CategoryScope {
 public:
  explicit CategoryScope(MemoryCategory c);
  ~CategoryScope();
  CategoryScope(const CategoryScope&) = delete;
  CategoryScope& operator=(const CategoryScope&) = delete;

 private:
  std::shared_ptr<MemoryLedger> ledger_;
};

}  // namespace ckpt
