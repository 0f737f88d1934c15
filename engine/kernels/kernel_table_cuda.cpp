// The cuda kernel table, over engine/cuda's kernels (device memory; float32 arithmetic, copies
// of any dtype). A case a row does not cover yet (another dtype's arithmetic, a cast, a general
// broadcast, more than 8 dimensions) throws, naming the kernel and the device, rather than
// computing something else.
#ifdef CKPTLAB_HAVE_CUDA

#include <string>

#include "engine/cuda/cuda_api.hpp"
#include "engine/kernels/kernel_table.hpp"

namespace ckpt {

namespace {

void require_f32(const Tensor& t, const char* kernel) {
  if (t.dtype() != DType::f32)
    no_device_kernel("cuda", std::string(kernel) + " of " + dtype_name(t.dtype()) + " tensors");
}

// The step between consecutive elements of an operand read in out's order: 1 for a
// contiguous tensor of out's shape, 0 for a single element (a broadcast scalar).
std::int64_t operand_step(const Tensor& t, const Tensor& out, const char* kernel) {
  if (t.numel() == 1) return 0;
  if (t.shape() == out.shape() && t.is_contiguous()) return 1;
  no_device_kernel("cuda", std::string(kernel) + " of a strided or broadcast " + t.str());
}

// A tensor's geometry for a kernel, over the dimensions `keep` selects (all by default).
cuda_math::StridedLayout layout_of(const Tensor& t, const std::vector<bool>* keep = nullptr,
                                   bool kept = true) {
  cuda_math::StridedLayout l;
  for (std::size_t d = 0; d < t.shape().size(); ++d) {
    if (keep && (*keep)[d] != kept) continue;
    if (l.nd == cuda_math::kMaxDims)
      no_device_kernel("cuda", "a kernel over more than 8 dimensions (" + t.str() + ")");
    l.size[l.nd] = t.shape()[d];
    l.stride[l.nd] = t.strides()[d];
    ++l.nd;
  }
  return l;
}

void cuda_copy(const Tensor& src, Tensor& dst) {
  if (src.dtype() != dst.dtype())
    no_device_kernel("cuda", std::string("cast from ") + dtype_name(src.dtype()) + " to " +
                                 dtype_name(dst.dtype()));
  const auto* from =
      static_cast<const char*>(src.storage()->data()) + src.offset() * src.element_size();
  auto* to = static_cast<char*>(dst.storage()->data()) + dst.offset() * dst.element_size();
  if (src.is_contiguous() && dst.is_contiguous()) {
    if (src.nbytes()) cuda::copy_on_device(to, from, static_cast<std::size_t>(src.nbytes()));
    return;
  }
  cuda::strided_copy(from, layout_of(src), to, layout_of(dst), src.numel(),
                     static_cast<int>(src.element_size()));
}

void cuda_fill(Tensor& t, double value) {
  require_f32(t, "fill");
  if (!t.is_contiguous()) no_device_kernel("cuda", "fill of a strided " + t.str());
  cuda::fill(t.device_data<float>(), static_cast<float>(value), t.numel());
}

void cuda_binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  const char* name = binary_op_name(op);
  require_f32(a, name);
  const std::int64_t a_step = operand_step(a, out, name);
  const std::int64_t b_step = operand_step(b, out, name);
  cuda::binary(static_cast<int>(op), a.device_data<float>(), a_step, b.device_data<float>(), b_step,
               out.device_data<float>(), out.numel());
}

void cuda_binary_scalar(BinaryOp op, const Tensor& a, double s, Tensor& out) {
  const char* name = binary_op_name(op);
  require_f32(a, name);
  if (!a.is_contiguous()) no_device_kernel("cuda", std::string(name) + " of a strided " + a.str());
  cuda::binary_scalar(static_cast<int>(op), a.device_data<float>(), static_cast<float>(s),
                      out.device_data<float>(), out.numel());
}

void cuda_accumulate(Tensor& acc, const Tensor& g, const Tensor& g_contiguous) {
  require_f32(acc, "add_");
  if (!acc.is_contiguous()) no_device_kernel("cuda", "add_ into a strided " + acc.str());
  const Tensor& source = g_contiguous.defined() ? g_contiguous : g;
  cuda::accumulate(acc.device_data<float>(), source.device_data<float>(), acc.numel());
}

void cuda_sum(const Tensor& t, const std::vector<bool>& reduce, Tensor& out) {
  require_f32(t, "sum");
  std::int64_t reduced_count = 1;
  for (std::size_t d = 0; d < reduce.size(); ++d)
    if (reduce[d]) reduced_count *= t.shape()[d];
  cuda::sum(t.device_data<float>(), layout_of(t, &reduce, false), layout_of(t, &reduce, true),
            reduced_count, out.device_data<float>(), out.numel());
}

void cuda_gemm(const Tensor& a, const Tensor& b, Tensor& c, bool accumulate) {
  require_f32(a, "mm");
  cuda::gemm_strided(a.device_data<float>(), a.strides()[0], a.strides()[1], b.device_data<float>(),
                     b.strides()[0], b.strides()[1], c.device_data<float>(),
                     static_cast<int>(a.shape()[0]), static_cast<int>(b.shape()[1]),
                     static_cast<int>(a.shape()[1]), accumulate);
}

const KernelTable kCudaTable{Device::cuda,     "cuda",       &cuda_copy,
                             &cuda_fill,       &cuda_binary, &cuda_binary_scalar,
                             &cuda_accumulate, &cuda_sum,    &cuda_gemm};

}  // namespace

const KernelTable& cuda_kernel_table() {
  return kCudaTable;
}

}  // namespace ckpt

#endif
