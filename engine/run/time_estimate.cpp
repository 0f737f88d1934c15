#include "engine/run/time_estimate.hpp"

#include <algorithm>
#include <chrono>
#include <mutex>

#include "engine/kernels/kernels.hpp"

namespace ckpt {

namespace {

using Clock = std::chrono::steady_clock;

// The fastest of a few repetitions: the machine's rate, not its noise.
template <typename F>
double best_ns(int reps, F&& f) {
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    f();
    best = std::min(best, std::chrono::duration<double, std::nano>(Clock::now() - t0).count());
  }
  return std::max(best, 1.0);
}

MachineRates calibrate() {
  // Its own ledger and the cpu, whatever run (a dry one included) asks first.
  DeviceScope cpu(Device::cpu);
  LedgerScope ledger(std::make_shared<MemoryLedger>());
  MachineRates r;
  const std::int64_t n = 256;
  const Tensor a = Tensor::full({n, n}, 0.5), b = Tensor::full({n, n}, 0.25);
  Tensor c = Tensor::empty({n, n});
  const double gemm = best_ns(4, [&] { gemm_raw(a, b, c); });
  r.flops_per_ns = 2.0 * static_cast<double>(n * n * n) / gemm;
  const Tensor big = Tensor::full({1 << 22}, 1.0);  // 16 MiB: out of cache
  const double copy = best_ns(3, [&] { contiguous_copy(big); });
  r.bytes_per_ns = 2.0 * static_cast<double>(big.nbytes()) / copy;
  const Tensor one = Tensor::full({4}, 1.0);
  r.op_overhead_ns = best_ns(50, [&] { add_raw(one, one); }) + 3000.0;  // + autograd and trace
  return r;
}

}  // namespace

const MachineRates& machine_rates() {
  static std::once_flag once;
  static MachineRates rates;
  std::call_once(once, [] { rates = calibrate(); });
  return rates;
}

const MachineRates& reference_gpu_rates() {
  static const MachineRates rates{50'000.0, 2'700.0, 5'000.0};
  return rates;
}

std::int64_t estimate_ns(const OpCost& cost, const MachineRates& rates) {
  const double ns = cost.flops / rates.flops_per_ns + cost.bytes / rates.bytes_per_ns;
  return static_cast<std::int64_t>(ns + rates.op_overhead_ns);
}

std::vector<std::int64_t> estimate_step_durations(
    const Trace& trace, const std::unordered_map<std::string, OpCost>& node_costs,
    const MachineRates& rates) {
  // Per distinct node (the trace interns node names: one object per name), its cost and its
  // forward and backward step counts; no step is copied. Copying 200,000 steps' strings and
  // hashing their names was 14% of HeavyModel's dry run.
  struct NodeSteps {
    const OpCost* cost = nullptr;
    std::int64_t forward = 0, backward = 0;
  };
  std::unordered_map<const std::string*, NodeSteps> by_node;
  const std::int64_t steps = trace.step_count();
  std::vector<NodeSteps*> of_step(static_cast<std::size_t>(steps));
  for (std::int64_t k = 0; k < steps; ++k) {
    const std::string& node = trace.step_node(k);
    auto [it, fresh] = by_node.try_emplace(&node);
    if (fresh)
      if (auto c = node_costs.find(node); c != node_costs.end()) it->second.cost = &c->second;
    NodeSteps& n = it->second;
    of_step[static_cast<std::size_t>(k)] = &n;
    const Phase phase = trace.step_phase(k);
    if (phase == Phase::forward) ++n.forward;
    if (phase == Phase::backward) ++n.backward;
  }
  const auto overhead = static_cast<std::int64_t>(rates.op_overhead_ns);
  std::vector<std::int64_t> out(static_cast<std::size_t>(steps), overhead);
  for (std::int64_t k = 0; k < steps; ++k) {
    const NodeSteps& n = *of_step[static_cast<std::size_t>(k)];
    if (!n.cost) continue;
    // A replayed output (a per-op policy's) ran no kernel: the overhead only.
    if (trace.step_phase(k) == Phase::recompute && trace.step(k).replayed) continue;
    const auto node_ns = static_cast<double>(estimate_ns(*n.cost, rates));
    const bool backward = trace.step_phase(k) == Phase::backward;
    const auto per = std::max<std::int64_t>(1, backward ? n.backward : n.forward);
    out[static_cast<std::size_t>(k)] =
        static_cast<std::int64_t>((backward ? 2.0 : 1.0) * node_ns / static_cast<double>(per));
  }
  return out;
}

}  // namespace ckpt
