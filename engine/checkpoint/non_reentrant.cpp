// The non-reentrant variant: PyTorch 1.13's _checkpoint_without_reentrant. The forward records
// the graph as usual, but every tensor an op saves is packed as a placeholder (a Holder), so the
// segment's intermediates die by refcount as soon as the forward has moved on. The first unpack
// in backward re-runs the segment under inner hooks that fill every placeholder still alive.

#include <algorithm>
#include <any>
#include <optional>
#include <stdexcept>
#include <unordered_map>

#include "engine/autograd/execution_context.hpp"
#include "engine/autograd/grad_mode.hpp"
#include "engine/checkpoint/segment.hpp"
#include "engine/ops/autocast.hpp"
#include "engine/tensor/memory_semantics.hpp"

namespace ckpt::detail {

namespace {

struct Segment;

// What a pack hook returns: a placeholder whose lifetime is the saved variable's. A tensor a
// selective policy kept is held for real.
struct Holder {
  std::size_t index = 0;
  std::weak_ptr<Segment> segment;
  Tensor kept;
  ~Holder();
};

// Thrown by the inner pack hook to end an early-stopped recomputation.
struct StopRecomputation {};

// PyTorch's closure: the function, its arguments, the RNG state and the weak holders.
struct Segment : std::enable_shared_from_this<Segment> {
  SegmentFunction fn;
  TensorList inputs;
  Tensor rng;
  AutocastState autocast;  // at the forward, restored to recompute (as 1.13's closure does)
  bool early_stop = false;
  SegmentRecord record;
  std::vector<std::weak_ptr<Holder>> holders;
  std::unordered_map<std::size_t, Tensor> storage;  // recomputed tensors by holder index

  std::any pack(const Tensor& t) {
    auto h = std::make_shared<Holder>();
    h->index = holders.size();
    h->segment = weak_from_this();
    for (const auto& k : record.kept) {
      if (k.tensor.storage() == t.storage()) {
        h->kept = t;
        break;
      }
    }
    holders.push_back(h);
    return h;
  }

  Tensor unpack(std::any& packed) {
    auto h = std::any_cast<std::shared_ptr<Holder>>(packed);
    if (h->kept.defined()) return h->kept;
    if (storage.empty()) recompute();
    auto it = storage.find(h->index);
    if (it == storage.end())
      throw std::runtime_error(
          "Attempt to retrieve a tensor saved by autograd multiple times without checkpoint "
          "recomputation being triggered in between, this is not currently supported. Please "
          "open an issue with details on your use case so that we can prioritize adding this.");
    return it->second;
  }

  void recompute() {
    std::size_t counter = 0;
    auto inner = std::make_shared<SavedTensorHooks>();
    // PyTorch 2.x's _recomputation_hook: a tensor is stored for a holder still alive, and the
    // early stop comes once the recompute has packed as many tensors as the forward did
    // (recomp_counter == len(weak_holders)), holders dead or alive: a saving op after the last
    // live holder is still recomputed.
    inner->pack = [this, &counter](const Tensor& t) -> std::any {
      const std::size_t i = counter++;
      auto h = i < holders.size() ? holders[i].lock() : nullptr;
      if (h && !h->kept.defined()) storage[i] = t.detach();
      if (early_stop && counter == holders.size()) throw StopRecomputation{};
      return {};
    };
    inner->unpack = [](std::any&) -> Tensor {
      throw std::runtime_error(
          "You are calling backwards on a tensor that is never exposed. Please open an issue.");
    };
    RngFork fork(rng);
    GradModeGuard enable_grad(true);
    AutocastScope autocast_scope(autocast);
    PhaseScope phase(Phase::recompute);
    SegmentMark mark(true, record.name);
    RecomputeObserver observer(record);
    OpObserverScope observe(&observer);
    SavedTensorHooksScope hooks(inner);
    try {
      TensorList unused = fn(inputs);
    } catch (const StopRecomputation&) {
      // Early stop: everything backward still needs is back.
    }
    observer.report();
  }
};

Holder::~Holder() {
  if (auto s = segment.lock()) s->storage.erase(index);
}

}  // namespace

TensorList checkpoint_non_reentrant(const SegmentFunction& fn, const TensorList& inputs,
                                    const CheckpointOptions& options) {
  auto segment = std::make_shared<Segment>();
  segment->fn = fn;
  segment->inputs = inputs;
  // PyTorch 2.x's default where the device's semantics are 2.x's (memory_semantics.hpp:
  // torch/utils/checkpoint.py, set_checkpoint_early_stop, on unless turned off).
  segment->early_stop =
      options.early_stop.value_or(current_memory_semantics().checkpoint_early_stop);
  segment->autocast = autocast_state();
  segment->record.name = segment_name(options);
  segment->record.check = options.determinism_check;
  segment->record.save_ops = options.save_ops;
  segment->record.save_every = std::max(1, options.save_every);
  // Marked before the stash, as the reentrant variant does: the stash is the segment's own.
  SegmentMark mark(false, segment->record.name);
  if (options.preserve_rng_state) segment->rng = stash_rng_state(segment->record.name);
  // The hooks hold the segment: it lives exactly as long as a saved variable packed by them.
  auto hooks = std::make_shared<SavedTensorHooks>();
  std::weak_ptr<Segment> weak = segment;
  hooks->pack = [segment](const Tensor& t) { return segment->pack(t); };
  hooks->unpack = [segment](std::any& packed) { return segment->unpack(packed); };
  TensorList outputs;
  {
    ForwardObserver observer(segment->record);
    OpObserverScope observe(&observer);
    SavedTensorHooksScope scope(hooks);
    outputs = fn(inputs);
  }
  hooks.reset();
  segment.reset();
  // Still alive: some op saved something, so the inputs are kept for the recomputation.
  if (auto alive = weak.lock()) mark_checkpoint_inputs(alive->inputs);
  return outputs;
}

}  // namespace ckpt::detail
