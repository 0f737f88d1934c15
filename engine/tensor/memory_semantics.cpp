#include "engine/tensor/memory_semantics.hpp"

#include "engine/tensor/device.hpp"
#include "engine/tensor/memory_ledger.hpp"
#include "engine/tensor/storage.hpp"

namespace ckpt {

namespace {

constexpr std::int64_t kMiB = std::int64_t{1} << 20;

// PyTorch 1.13 on the CPU: the engine's own allocator, bytes exactly as tensors hold them,
// float dropout noise, the RNG stash in the (one) memory, no early stop by default.
const MemorySemantics kCpuSemantics{.device = Device::cpu, .whose = "PyTorch 1.13 on the CPU"};

// PyTorch 2.x on an NVIDIA GPU (measured: 2.11 on an H200, sm90).
const MemorySemantics kCudaSemantics{
    .device = Device::cuda,
    .whose = "PyTorch 2.x on an NVIDIA GPU (CUDA)",
    // c10/cuda/CUDACachingAllocator.cpp, round_size(): every request is rounded up to
    // kMinBlockSize (512 B) multiples, and torch.cuda.memory_allocated() counts the rounded
    // block, not the tensor's bytes (oracle snapshots: a 64 B bias is a 512 B block).
    .granule = 512,
    // aten/src/ATen/cuda/CublasHandlePool.cpp: each cuBLAS handle, one per thread
    // (DeviceThreadHandlePool's per-thread PoolWindow), gets a cuBLAS workspace of
    // parseChosenWorkspaceSize() (":4096:8", 32 MiB, on Hopper, sm90) and a separate cuBLASLt
    // one of getCUDABlasLtWorkspaceSize() (CUBLASLT_WORKSPACE_SIZE, 1,024 KiB), both from the
    // caching allocator and kept for the process's life. Autograd runs a CUDA backward on its
    // own device thread (torch/csrc/autograd/engine.cpp), so a training step has two handles.
    // Oracle: `residue` = 69,206,016 B = 2 x 32 MiB + 2 x 1 MiB, the snapshots' four blocks
    // allocated before the step (two 32 MiB segments, two 1 MiB blocks).
    .workspaces = {{"the cuBLAS workspace of the forward thread's handle", 32 * kMiB},
                   {"the cuBLASLt workspace of the forward thread's handle", kMiB},
                   {"the cuBLAS workspace of autograd's CUDA device thread", 32 * kMiB},
                   {"the cuBLASLt workspace of autograd's CUDA device thread", kMiB}},
    // aten/src/ATen/native/Dropout.cpp, dropout(): a CUDA input takes the fused
    // at::native_dropout, whose mask is bool and which NativeDropoutBackward0 saves (oracle
    // nodes: result1, bool, one byte an element).
    .dropout_bool_mask = true,
    // torch/utils/checkpoint.py: preserve_rng_state stashes torch.get_rng_state() (the CPU
    // generator, a CPU tensor) and, for CUDA inputs, torch.cuda.get_rng_state() per device,
    // which is also a CPU tensor: 16 bytes (CUDAGeneratorImpl::get_state: seed and offset).
    .rng_stash_in_host_memory = true,
    .host_memory_apart = true,
    .device_generator_state_bytes = 16,
    // torch/utils/checkpoint.py (2.1+): _checkpoint_early_stop defaults to True, so a
    // non-reentrant checkpoint's recomputation stops once every saved tensor is back
    // (set_checkpoint_early_stop(False) turns it off).
    .checkpoint_early_stop = true,
    .caching_allocator = true,
    // cuDNN convolutions (a transform workspace instead of im2col columns, conv_cudnn.cpp),
    // copies that read strided sources in place (kernels.cpp, copy_into_raw).
    .kernels = KernelAllocations::pytorch_cuda};

}  // namespace

std::int64_t MemorySemantics::workspace_bytes() const {
  std::int64_t total = 0;
  for (const auto& w : workspaces) total += allocated_bytes(w.bytes);
  return total;
}

const MemorySemantics& memory_semantics(Device device) {
  switch (device) {
    case Device::cpu:
      return kCpuSemantics;
    case Device::cuda:
      return kCudaSemantics;
    case Device::meta:
      break;
  }
  const Device rules = meta_stands_in_for();
  return rules == Device::cuda ? kCudaSemantics : kCpuSemantics;
}

const MemorySemantics& current_memory_semantics() {
  return memory_semantics(current_device());
}

std::vector<std::unique_ptr<Storage>> hold_persistent_workspaces() {
  std::vector<std::unique_ptr<Storage>> held;
  const auto ledger = MemoryLedger::current();
  CategoryScope category(MemoryCategory::workspace);
  for (const auto& w : current_memory_semantics().workspaces) {
    AllocationPurpose purpose(w.what);
    held.push_back(std::make_unique<Storage>(ledger, w.bytes));
  }
  return held;
}

}  // namespace ckpt
