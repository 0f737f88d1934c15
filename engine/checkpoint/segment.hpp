#pragma once

// Internals shared by the two checkpoint variants: RNG stash, trace marks, the forward's record
// of a segment (checksums of op outputs, outputs kept by a selective policy) and the observer
// that checks a recomputation against it.

#include <cstdint>
#include <string>
#include <vector>

#include "engine/autograd/op_observer.hpp"
#include "engine/checkpoint/checkpoint.hpp"

namespace ckpt::detail {

// torch.get_rng_state(): the current generator's state as a real tensor (5,056 bytes, int64
// storage) in category `rng state`; with CUDA's memory semantics a host tensor outside the
// run's ledger, its bytes (and the CUDA generator's) noted as host memory of the checkpoint.
Tensor stash_rng_state(const std::string& segment);

// torch.random.fork_rng + set_rng_state: the generator runs from `stash` in this scope and
// gets its own state back afterwards. An undefined stash does nothing (preserve_rng_state off).
class RngFork {
 public:
  explicit RngFork(const Tensor& stash);
  ~RngFork();
  RngFork(const RngFork&) = delete;
  RngFork& operator=(const RngFork&) = delete;

 private:
  std::vector<std::uint8_t> saved_;
  bool active_ = false;
};

// checkpoint_begin/end around a segment's forward (not emitted inside a recompute, where the
// segment is re-run rather than checkpointed), recompute_begin/end around a recomputation.
class SegmentMark {
 public:
  SegmentMark(bool recompute, std::string segment);
  ~SegmentMark();
  SegmentMark(const SegmentMark&) = delete;
  SegmentMark& operator=(const SegmentMark&) = delete;

 private:
  std::shared_ptr<ExecutionContext> context_;
  std::string segment_;
  bool recompute_;
  bool emitted_ = false;
};

std::string segment_name(const CheckpointOptions& options);

// The inputs a checkpoint keeps become `checkpoint input` (temporaries and activations only:
// parameters and model inputs stay what they are).
void mark_checkpoint_inputs(const TensorList& inputs);

// Where an op output holds one kind of non-finite value: how many, and a hash of their
// positions (a sum of mixed indices, exact and independent of the order of the sum).
struct NonFinite {
  std::int64_t count = 0;
  std::uint64_t places = 0;
  bool operator==(const NonFinite&) const = default;
};

// Sums over the finite values, and the places of the others: values that are equal, infinities
// included, give equal checksums, and so do NaNs in the same places (a causal mask's -inf, a
// padded attention row's NaN), which no sum of the values could tell apart.
struct OpChecksum {
  LabelId op = 0;
  LabelId node = 0;
  std::int64_t numel = 0;
  DType dtype = DType::f32;
  double sum = 0;
  double weighted = 0;  // position-weighted, so that a permutation shows
  double abs = 0;
  NonFinite pos_inf, neg_inf, nan;
};

// Whether two checksums stand for the same values (finite sums within float rounding of the
// sums' size, non-finite values in the same places).
bool same_values(const OpChecksum& a, const OpChecksum& b);
// The checksum of `outputs` (op and node left to the caller).
OpChecksum checksum_values(const TensorList& outputs);

// An output a selective policy kept, by its position among the segment's op outputs (the
// record() that made it; an op of several outputs keeps each, in order, under one index).
struct KeptOutput {
  std::int64_t index = 0;
  Tensor tensor;
  std::uint32_t version = 0;  // replayed only while unchanged (no in-place op touched it)
};

// What the forward of one segment leaves for its recomputation.
struct SegmentRecord {
  std::string name;
  bool check = true;
  std::vector<std::string> save_ops;
  int save_every = 1;          // keep the 1st, (n+1)-th, ... save_ops output
  std::int64_t save_seen = 0;  // save_ops outputs seen in the forward
  std::vector<OpChecksum> checksums;
  std::vector<KeptOutput> kept;
  std::int64_t ops = 0;  // op outputs seen in the forward
};

// Watches a segment's forward: checksums every op output, keeps the outputs of save_ops.
class ForwardObserver final : public OpObserver {
 public:
  explicit ForwardObserver(SegmentRecord& record) : record_(record) {}
  void on_outputs(std::string_view op, const TensorList& outputs, const TensorList& saved) override;
  TensorList replay_outputs(std::string_view op) override;

 private:
  SegmentRecord& record_;
  std::int64_t replayable_ = -1;  // index of the next output, when its op can replay it
};

// Watches a recomputation: compares op outputs with the forward's checksums (an error naming
// the first op that differs), replays the outputs a selective policy kept, and notes
// BatchNorm's second update of its running statistics.
class RecomputeObserver final : public OpObserver {
 public:
  explicit RecomputeObserver(const SegmentRecord& record) : record_(record) {}
  void on_outputs(std::string_view op, const TensorList& outputs, const TensorList& saved) override;
  TensorList replay_outputs(std::string_view op) override;
  // Says (as an info message) how many outputs were replayed, when the policy saved any.
  void report() const;

 private:
  const SegmentRecord& record_;
  std::int64_t next_ = 0;
  std::size_t next_kept_ = 0;
  std::int64_t replayed_ = 0;
  bool batch_norm_noted_ = false;
};

TensorList checkpoint_reentrant(const SegmentFunction& fn, const TensorList& inputs,
                                const CheckpointOptions& options);
TensorList checkpoint_non_reentrant(const SegmentFunction& fn, const TensorList& inputs,
                                    const CheckpointOptions& options);

}  // namespace ckpt::detail
