#include "engine/kernels/kernel_table.hpp"

#include <stdexcept>

#include "engine/kernels/kernels.hpp"
#include "engine/tensor/device.hpp"

namespace ckpt {

namespace {

// A dry run: every output and scratch buffer was made by the entry point; nothing is computed.
void meta_copy(const Tensor&, Tensor&) {}
void meta_fill(Tensor&, double) {}
void meta_binary(BinaryOp, const Tensor&, const Tensor&, Tensor&) {}
void meta_binary_scalar(BinaryOp, const Tensor&, double, Tensor&) {}
void meta_accumulate(Tensor&, const Tensor&, const Tensor&) {}
void meta_sum(const Tensor&, const std::vector<bool>&, Tensor&) {}
void meta_gemm(const Tensor&, const Tensor&, Tensor&, bool) {}

const KernelTable kMetaTable{Device::meta,     "meta",       &meta_copy,
                             &meta_fill,       &meta_binary, &meta_binary_scalar,
                             &meta_accumulate, &meta_sum,    &meta_gemm};

}  // namespace

const char* binary_op_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::add:
      return "add";
    case BinaryOp::sub:
      return "sub";
    case BinaryOp::mul:
      return "mul";
    case BinaryOp::div:
      return "div";
  }
  return "?";
}

const KernelTable& meta_kernel_table() {
  return kMetaTable;
}

const KernelTable& kernel_table(Device device) {
  switch (device) {
    case Device::cpu:
      return cpu_kernel_table();
    case Device::meta:
      return meta_kernel_table();
    case Device::cuda:
      break;
  }
  backend(device);  // throws, saying why this device cannot be used here
#ifdef CKPTLAB_HAVE_CUDA
  return cuda_kernel_table();
#else
  throw std::logic_error("unreachable: a cuda backend without a cuda kernel table");
#endif
}

Tensor to_device(const Tensor& t, Device device) {
  if (t.device() == device && t.is_contiguous()) return t;
  if (t.is_meta() && device != Device::meta)
    throw std::runtime_error("to_device: " + t.str() +
                             " is on the meta device and has no values "
                             "to move to the " +
                             device_name(device) + " (a dry run's tensor)");
  const Tensor source = as_contiguous(t);  // on its own device, by that device's table
  Tensor out;
  {
    DeviceScope on(device);
    out = Tensor::empty(t.shape(), t.dtype());
  }
  const Backend& from = backend(source.device());
  const Backend& to = backend(device);
  if (!from.computes || !to.computes || t.nbytes() == 0) return out;
  const auto bytes = static_cast<std::size_t>(t.nbytes());
  const void* src =
      static_cast<const char*>(source.storage()->data()) + source.offset() * source.element_size();
  void* dst = out.storage()->data();
  if (source.device() == device) {
    to.copy(dst, src, bytes);
  } else if (source.device() == Device::cpu) {
    to.write(dst, src, bytes);
  } else if (device == Device::cpu) {
    from.read(dst, src, bytes);
  } else {
    throw std::runtime_error(std::string("to_device: no direct copy from ") + from.name + " to " +
                             to.name + "; go through the cpu");
  }
  return out;
}

void no_device_kernel(const char* device, const std::string& what) {
  throw std::runtime_error(what + " has no " + device + " kernel yet (" + device +
                           " kernel table: engine/kernels/kernel_table_" + device + ".cpp)");
}

}  // namespace ckpt
