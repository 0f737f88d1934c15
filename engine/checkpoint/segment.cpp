#include "engine/checkpoint/segment.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "engine/kernels/kernels.hpp"
#include "engine/ops/schema/op_schema.hpp"
#include "engine/tensor/device.hpp"
#include "engine/tensor/generator.hpp"
#include "engine/tensor/memory_semantics.hpp"
#include "engine/tensor/reduced_float.hpp"

namespace ckpt::detail {

namespace {

Tensor state_tensor(const std::vector<std::uint8_t>& bytes) {
  const auto words = static_cast<std::int64_t>((bytes.size() + 7) / 8);
  Tensor t = Tensor::zeros({words}, DType::i64);
  if (!t.is_meta()) std::memcpy(t.data<std::int64_t>(), bytes.data(), bytes.size());
  return t;
}

}  // namespace

Tensor stash_rng_state(const std::string& segment) {
  const auto bytes = Generator::current().get_state();
  const MemorySemantics& rules = current_memory_semantics();
  if (rules.rng_stash_in_host_memory) {
    // torch/utils/checkpoint.py on CUDA (MemorySemantics::rng_stash_in_host_memory): the
    // stash is torch.get_rng_state(), a CPU tensor, and torch.cuda.get_rng_state() (16
    // bytes, also a CPU tensor): host memory, reported with the checkpoint and never in the
    // device's figures (oracle: the depth-2 samples hold no device bytes for it). The state
    // itself is real even in a dry run, so a recomputation forks the generator as a real run.
    Tensor host;
    {
      LedgerScope off_device(std::make_shared<MemoryLedger>());
      DeviceScope cpu(Device::cpu);
      host = state_tensor(bytes);
    }
    ExecutionContext::current()->note_host_bytes(
        static_cast<std::int64_t>(bytes.size()) + rules.device_generator_state_bytes,
        "the RNG state of checkpoint '" + segment + "'");
    return host;
  }
  CategoryScope as_rng(MemoryCategory::rng_state);
  AllocationPurpose purpose("the RNG state of checkpoint '" + segment + "'");
  return state_tensor(bytes);
}

RngFork::RngFork(const Tensor& stash) {
  // A dry run's stash (meta) has its bytes in the ledger and no state to restore.
  if (!stash.defined() || stash.is_meta()) return;
  Generator& g = Generator::current();
  saved_ = g.get_state();
  std::vector<std::uint8_t> bytes(Generator::state_bytes());
  std::memcpy(bytes.data(), stash.data<std::int64_t>(), bytes.size());
  g.set_state(bytes);
  active_ = true;
}

RngFork::~RngFork() {
  if (active_) Generator::current().set_state(saved_);
}

SegmentMark::SegmentMark(bool recompute, std::string segment)
    : context_(ExecutionContext::current()), segment_(std::move(segment)), recompute_(recompute) {
  if (!recompute_ && context_->phase() == Phase::recompute) return;
  if (recompute_)
    context_->mark_recompute(true, segment_);
  else
    context_->mark_checkpoint(true, segment_);
  emitted_ = true;
}

SegmentMark::~SegmentMark() {
  if (!emitted_) return;
  if (recompute_)
    context_->mark_recompute(false, segment_);
  else
    context_->mark_checkpoint(false, segment_);
}

std::string segment_name(const CheckpointOptions& options) {
  return options.name.empty() ? std::string("checkpoint") : options.name;
}

void mark_checkpoint_inputs(const TensorList& inputs) {
  for (const auto& t : inputs) {
    if (!t.defined()) continue;
    auto& ledger = t.storage()->ledger();
    const auto id = t.storage()->id();
    const auto c = ledger.category_of(id);
    if (c == MemoryCategory::temporary || c == MemoryCategory::activation)
      ledger.recategorize(id, MemoryCategory::checkpoint_input);
  }
}

namespace {

// A cheap position-dependent weight in [0.5, 1.5).
inline double position_weight(std::int64_t i) {
  return 0.5 +
         static_cast<double>((static_cast<std::uint64_t>(i) * 2654435761ULL >> 16) & 1023) / 1024.0;
}

// A well-mixed 64-bit hash of a position (splitmix64's finaliser).
inline std::uint64_t position_hash(std::int64_t i) {
  std::uint64_t z = static_cast<std::uint64_t>(i) + 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// Adds one tensor's values to `c`; `base` is the position of its first value among the op's
// outputs. The flat pass sums everything; only when its total is not finite (an infinity or a
// NaN among the values) does a second pass keep the finite values in the sums and count the
// others by place.
template <typename T>
void add_values(const Tensor& t, std::int64_t base, OpChecksum& c) {
  const T* p = t.data<T>();
  double sum = 0, weighted = 0, abs = 0;
  const auto add = [&](std::int64_t off, std::int64_t i) {
    const double v = static_cast<double>(p[off]);
    sum += v;
    weighted += v * position_weight(i);
    abs += std::abs(v);
  };
  // Nearly every op output is contiguous: a flat loop that vectorises, instead of the strided
  // walk (which was two thirds of a nested-checkpoint run's time).
  if (t.is_contiguous()) {
    const std::int64_t n = t.numel();
#pragma omp simd reduction(+ : sum, weighted, abs)
    for (std::int64_t i = 0; i < n; ++i) add(i, i);
  } else {
    for_each_offset(t, add);
  }
  if (std::isfinite(abs)) {
    c.sum += sum;
    c.weighted += weighted;
    c.abs += abs;
    return;
  }
  for_each_offset(t, [&](std::int64_t off, std::int64_t i) {
    const double v = static_cast<double>(p[off]);
    NonFinite* kind = std::isnan(v)    ? &c.nan
                      : v == INFINITY  ? &c.pos_inf
                      : v == -INFINITY ? &c.neg_inf
                                       : nullptr;
    if (kind) {
      ++kind->count;
      kind->places += position_hash(base + i);
      return;
    }
    c.sum += v;
    c.weighted += v * position_weight(i);
    c.abs += std::abs(v);
  });
}

// The dtypes a checksum reads: the numeric ones, autocast's reduced floats included.
template <typename F>
decltype(auto) dispatch_numeric(DType t, F&& f) {
  if (t == DType::bf16) return f.template operator()<bfloat16>();
  if (t == DType::f16) return f.template operator()<float16>();
  return dispatch_all(t, std::forward<F>(f));
}

OpChecksum checksum(std::string_view op, const TensorList& outputs) {
  auto context = ExecutionContext::current();
  OpChecksum c = checksum_values(outputs);
  c.op = context->intern(op);
  c.node = context->current_node();
  return c;
}

// "256 values summing to 3.5 (and 16 -inf)": the finite values' sum and the others' counts.
std::string describe(const OpChecksum& c) {
  std::ostringstream s;
  s.precision(9);
  s << c.numel << " values summing to " << c.sum;
  std::string others;
  const auto note = [&](const NonFinite& k, const char* what) {
    if (k.count) others += (others.empty() ? "" : ", ") + std::to_string(k.count) + " " + what;
  };
  note(c.pos_inf, "+inf");
  note(c.neg_inf, "-inf");
  note(c.nan, "NaN");
  if (!others.empty()) s << " (and " << others << ")";
  return s.str();
}

}  // namespace

OpChecksum checksum_values(const TensorList& outputs) {
  OpChecksum c;
  for (const auto& t : outputs) {
    if (!t.defined()) continue;
    const std::int64_t base = c.numel;
    c.dtype = t.dtype();
    c.numel += t.numel();
    // On the meta device (a dry run) only the op sequence and sizes are compared: no values.
    if (t.is_meta()) continue;
    dispatch_numeric(t.dtype(), [&]<typename T>() {
      add_values<T>(t, base, c);
      return 0;
    });
  }
  return c;
}

bool same_values(const OpChecksum& a, const OpChecksum& b) {
  if (a.numel != b.numel || a.dtype != b.dtype) return false;
  if (a.pos_inf != b.pos_inf || a.neg_inf != b.neg_inf || a.nan != b.nan) return false;
  const double tol = 1e-6 * std::max(a.abs, b.abs) + 1e-12;
  const auto close = [&](double x, double y) { return x == y || std::abs(x - y) <= tol; };
  return close(a.sum, b.sum) && close(a.weighted, b.weighted);
}

namespace {
bool is_save_op(const SegmentRecord& r, std::string_view op) {
  return std::find(r.save_ops.begin(), r.save_ops.end(), op) != r.save_ops.end();
}
}  // namespace

TensorList ForwardObserver::replay_outputs(std::string_view op) {
  if (is_save_op(record_, op) && record_.save_seen++ % record_.save_every == 0)
    replayable_ = record_.ops;
  return {};
}

void ForwardObserver::on_outputs(std::string_view op, const TensorList& outputs,
                                 const TensorList& /*saved*/) {
  const std::int64_t index = record_.ops++;
  if (record_.check) record_.checksums.push_back(checksum(op, outputs));
  if (index != replayable_ || outputs.empty() || !outputs[0].defined()) return;
  // Kept for backward instead of being recomputed: an activation, as any saved tensor.
  for (const Tensor& out : outputs) {
    if (!out.defined()) break;
    auto& ledger = out.storage()->ledger();
    if (ledger.category_of(out.storage()->id()) == MemoryCategory::temporary)
      ledger.recategorize(out.storage()->id(), MemoryCategory::activation);
    record_.kept.push_back({index, out.detach(), out.version()});
  }
}

TensorList RecomputeObserver::replay_outputs(std::string_view op) {
  while (next_kept_ < record_.kept.size() && record_.kept[next_kept_].index < next_) ++next_kept_;
  if (next_kept_ >= record_.kept.size() || record_.kept[next_kept_].index != next_ ||
      !is_save_op(record_, op))
    return {};
  TensorList out;
  for (std::size_t i = next_kept_; i < record_.kept.size() && record_.kept[i].index == next_; ++i) {
    const KeptOutput& k = record_.kept[i];
    if (k.tensor.version() != k.version) return {};  // changed in place since: recompute
    out.push_back(k.tensor.detach());
  }
  ++replayed_;
  if (const auto context = ExecutionContext::current()) context->note_replayed();
  return out;
}

void RecomputeObserver::report() const {
  if (replayed_ == 0) return;
  ExecutionContext::current()->message(
      Severity::info, "checkpoint '" + record_.name + "': " + std::to_string(replayed_) +
                          " op outputs reused from the forward (selective policy), " +
                          std::to_string(next_ - replayed_) + " op outputs recomputed");
}

void RecomputeObserver::on_outputs(std::string_view op, const TensorList& outputs,
                                   const TensorList& saved) {
  const std::int64_t index = next_++;
  auto context = ExecutionContext::current();
  // An op that updates buffers in place (training-mode batch_norm's running statistics) did it
  // again.
  const OpSchema* row = OpTable::instance().find(std::string(op));
  const bool updated_buffers = row && row->updates_buffers && row->updates_buffers(saved);
  if (updated_buffers && !batch_norm_noted_) {
    batch_norm_noted_ = true;
    context->message(Severity::warning,
                     "checkpoint '" + record_.name + "': " + std::string(op) +
                         " ran again in the recompute, so its running statistics "
                         "were updated a second time in this step (PyTorch does the same: "
                         "num_batches_tracked grows by 2)");
  }
  if (!record_.check) return;
  const OpChecksum now = checksum(op, outputs);
  std::ostringstream msg;
  if (index >= static_cast<std::int64_t>(record_.checksums.size())) {
    msg << "checkpoint '" << record_.name << "': the recomputation runs more ops than the forward"
        << " did (" << record_.checksums.size() << "); op #" << index << " '" << op
        << "' has no counterpart";
  } else {
    const OpChecksum& then = record_.checksums[static_cast<std::size_t>(index)];
    if (same_values(then, now) && then.op == now.op) return;
    msg.precision(9);
    msg << "checkpoint '" << record_.name
        << "': the recomputed forward differs from the original at op #" << index << " '" << op
        << "'";
    if (now.node) msg << " (node '" << context->label(now.node) << "')";
    if (then.op != now.op) {
      msg << ", which the forward ran as '" << context->label(then.op) << "'";
    } else {
      msg << ": " << describe(now) << " instead of " << describe(then);
    }
  }
  msg << ". Recomputation must repeat the forward exactly; a random op without "
         "preserve_rng_state=True, or anything else that changes between the two runs, makes "
         "the gradients wrong (PyTorch does not detect this).";
  context->message(Severity::error, msg.str());
  throw std::runtime_error(msg.str());
}

}  // namespace ckpt::detail
