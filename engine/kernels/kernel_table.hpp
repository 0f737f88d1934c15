#pragma once

// The device seam (docs/ARCHITECTURE.md "Devices behind one seam"), arithmetic half: the kernels
// every op's arithmetic is built on, one table per device, in the spirit of ggml's backend struct.
// The entry points in kernels.hpp (add_raw, gemm_raw, sum_dims_raw, ...) check their
// arguments and make their outputs the same way on every device (same bytes, same order, same
// ledger category: a trace does not depend on the device), then call the row of their tensors'
// device:
//   cpu   Eigen and OpenMP (kernel_table_cpu.cpp);
//   meta  no arithmetic at all: a dry run (kernel_table.cpp);
//   cuda  the rows written so far (kernel_table_cuda.cpp, when the CUDA backend is built); a
//         row it lacks throws, naming the kernel and the device.
// The storage half (memory, byte moves across the host boundary) is engine/tensor/device.hpp.
// An op's own loops (unary_map, binary_map, the norm, pool and loss bodies) run on the host:
// on a device tensor they throw from Tensor::data() until the device's table has their row.

#include <string>
#include <vector>

#include "engine/tensor/tensor.hpp"

namespace ckpt {

// The order is the CUDA arithmetic's op index (engine/cuda/elementwise.cuh, binary()).
enum class BinaryOp : int { add = 0, sub = 1, mul = 2, div = 3 };
const char* binary_op_name(BinaryOp op);

struct KernelTable {
  Device device;
  const char* name;
  // dst = src elementwise, same shape; src's dtype converted to dst's; either may be strided.
  void (*copy)(const Tensor& src, Tensor& dst);
  void (*fill)(Tensor& t, double value);  // any strides
  // out = a op b with NumPy broadcasting; out is contiguous and has the broadcast shape.
  void (*binary)(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out);
  // out = a op s; out is contiguous and has a's shape.
  void (*binary_scalar)(BinaryOp op, const Tensor& a, double s, Tensor& out);
  // acc += g, same shape; `g_contiguous` is g itself or its contiguous copy, made by the
  // caller so that its bytes are in the ledger on every device alike.
  void (*accumulate)(Tensor& acc, const Tensor& g, const Tensor& g_contiguous);
  // out (zeroed, contiguous) = t (contiguous) summed over the dimensions marked in `reduce`.
  void (*sum)(const Tensor& t, const std::vector<bool>& reduce, Tensor& out);
  // c (contiguous [m, n]) = a [m, k] @ b [k, n] (+ c when accumulate); a and b of any strides.
  // Operand copies a device needs are the caller's (gemm_raw), so that they are on the ledger.
  void (*gemm)(const Tensor& a, const Tensor& b, Tensor& c, bool accumulate);
};

// The table of a device; throws std::runtime_error for a device this build or machine cannot
// use (the storage backend's reason).
const KernelTable& kernel_table(Device device);

// The tables of every device: cpu and meta always, cuda when built (each defined beside its
// implementation).
const KernelTable& cpu_kernel_table();
const KernelTable& meta_kernel_table();
#ifdef CKPTLAB_HAVE_CUDA
const KernelTable& cuda_kernel_table();
#endif

// A contiguous copy of `t` on `device` (t itself when it is already there and contiguous): the
// host-device crossing of inputs, parameters, gradients and .npy dumps. Its bytes are in the
// current ledger on the destination device.
Tensor to_device(const Tensor& t, Device device);

// The error a device's table throws for a kernel it has no row (or case) for.
[[noreturn]] void no_device_kernel(const char* device, const std::string& what);

}  // namespace ckpt
