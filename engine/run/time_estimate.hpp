#pragma once

// Step times for a dry run, which computes nothing and so measures nothing: each model op's
// FLOPs and bytes (its op-table row's cost) against this machine's rates, which are measured
// once per process by a short real run of the engine's own GEMM and copy kernels.

#include <cstdint>
#include <string>
#include <unordered_map>

#include "engine/ops/schema/op_schema.hpp"
#include "engine/trace/trace.hpp"

namespace ckpt {

struct MachineRates {
  double flops_per_ns = 0;    // the engine's GEMM on this thread's OpenMP team
  double bytes_per_ns = 0;    // a large contiguous copy (read + write)
  double op_overhead_ns = 0;  // dispatch, autograd and trace per op execution
};

// Calibrated on first use (about 20 ms), then cached for the process.
const MachineRates& machine_rates();

// A reference GPU's rates, for what a plan costs on the device whose memory it plans (the
// planner's offload choice: copies at --pcie against recompute on the GPU). Datasheet figures of
// an H100 SXM derated to what eager PyTorch reaches: 50 TFLOP/s (fp32 GEMM and TF32 convolutions
// by PyTorch's defaults), 2.7 TB/s of HBM3, 5 us per op (launch, dispatch and autograd). An
// estimate, not a measurement: a GPU's real times come from profiling it.
const MachineRates& reference_gpu_rates();

std::int64_t estimate_ns(const OpCost& cost, const MachineRates& rates);

// Per step: a forward or recompute step of model node N costs N's estimate over N's forward
// steps; a backward step of N twice that over N's backward steps (PyTorch's rule of thumb: a
// backward is about two forwards); steps outside any costed node, the overhead only.
std::vector<std::int64_t> estimate_step_durations(
    const Trace& trace, const std::unordered_map<std::string, OpCost>& node_costs,
    const MachineRates& rates);

}  // namespace ckpt
