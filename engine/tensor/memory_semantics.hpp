#pragma once

// A device is a memory semantics (docs/ARCHITECTURE.md "Whose memory"): the rules by which a
// framework holds a run's bytes on it. `cpu` is PyTorch 1.13 on the CPU (this engine's own
// figures); `cuda` is PyTorch 2.x on an NVIDIA GPU. The meta device (a dry run) holds no memory and
// borrows the rules of the device it stands in for (DeviceScope's second argument), so that
// `--device cuda --dry-run` on a machine without a GPU gives the trace a CUDA run would.
//
// Each rule says where in PyTorch it comes from; the code that applies it names it again:
//   allocation rounding       Storage (engine/tensor/storage.cpp)
//   persistent workspaces     the Runner's start of a run (hold_persistent_workspaces)
//   dropout's mask            engine/ops/dropout.cpp
//   the RNG stash in host     engine/checkpoint/segment.cpp (stash_rng_state)
//   checkpoint early stop     engine/checkpoint/non_reentrant.cpp
//   reserved memory           engine/trace/caching_allocator.hpp (a simulation over a trace)
// Oracle: docs/reference/gpu-oracle.md (PyTorch 2.11 on an H200).

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/tensor/dtype.hpp"

namespace ckpt {

// A buffer the framework takes from the device's allocator for itself and keeps for the
// process's life (cuBLAS's workspaces): in the ledger's category `workspace`, live from the
// run's start, as they are in every training step after the first.
struct PersistentWorkspace {
  const char* what;
  std::int64_t bytes;
};

// Whose kernels make a run's temporaries: the engine's own CPU kernels (im2col columns,
// contiguous operand copies: real buffers the engine allocates), or PyTorch's CUDA kernels
// (cuDNN with its transform workspaces, TensorIterator reading strided operands in place).
enum class KernelAllocations : std::uint8_t { engine_cpu, pytorch_cuda };

struct MemorySemantics {
  Device device;             // cpu or cuda: whose rules these are
  const char* whose;         // "PyTorch 1.13 on the CPU", for the run's configuration text
  std::int64_t granule = 1;  // every allocation is a multiple of it (1: the tensor's own bytes)
  std::vector<PersistentWorkspace> workspaces;
  // Dropout keeps a bool mask (1 byte an element) and makes no float noise tensor.
  bool dropout_bool_mask = false;
  // A checkpoint's stash of the CPU generator's state (torch.get_rng_state()) is host memory,
  // not the device's; `device_generator_state_bytes` of the device's own generator are stashed
  // beside it (also in host memory).
  bool rng_stash_in_host_memory = false;
  // Host memory is not the device's: save_on_cpu's copies leave the device (on the CPU they
  // would be a second copy in the same memory, so offloading is refused there).
  bool host_memory_apart = false;
  std::int64_t device_generator_state_bytes = 0;
  // Non-reentrant checkpoints stop their recomputation early unless told otherwise.
  bool checkpoint_early_stop = false;
  // A caching allocator holds segments for the tensors (reserved memory is simulated).
  bool caching_allocator = false;
  KernelAllocations kernels = KernelAllocations::engine_cpu;

  // The bytes an allocation of `bytes` counts for: rounded up to the granule; 0 stays 0.
  std::int64_t allocated_bytes(std::int64_t bytes) const {
    return bytes <= 0 ? 0 : (bytes + granule - 1) / granule * granule;
  }
  std::int64_t workspace_bytes() const;
};

// The rules of a device; meta's are those of the device it stands in for on this thread.
const MemorySemantics& memory_semantics(Device device);

// The rules this thread's new tensors follow (its current device's, meta resolved).
const MemorySemantics& current_memory_semantics();

class Storage;

// The current device's persistent workspaces, allocated now from the current ledger in category
// `workspace`, in the order of MemorySemantics::workspaces; they are held as long as the
// returned storages are. None on the CPU.
std::vector<std::unique_ptr<Storage>> hold_persistent_workspaces();

}  // namespace ckpt
