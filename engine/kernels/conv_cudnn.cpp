// The convolution and the transposed convolution, over 1, 2 or 3 spatial dimensions, as
// PyTorch 2.x runs them on CUDA, through cuDNN (MemorySemantics::kernels == pytorch_cuda): what
// they allocate, in PyTorch's order. ATen describes every rank with cuDNN's N-d tensor and
// filter descriptors (a 1-D convolution as a 2-D one of unit height), so one rule serves all. cuDNN
// needs no im2col columns; it takes a transient workspace from the caching allocator for each
// call instead (aten/src/ATen/native/cudnn/Conv_v8.cpp, run_conv_plan: a plan's
// workspace size, allocated and freed around the call).
//
// The workspace's size is the plan's, which cuDNN's heuristics choose; the rule here is the
// one the oracle shows most often (docs/reference/gpu-oracle.md, snapshot
// tv_resnet34__plain, cuDNN 9.19 on an H200): the input, output and filter converted from
// PyTorch's NCHW (NCDHW) to the NHWC (NDHWC) the tensor-core kernels read, plus 16 bytes of
// alignment —
// exact for 26 of its 36 forward calls and 28 of 35 input-gradient calls; weight-gradient
// plans often take more (split-K reductions, up to 3.4 times), and small convolutions less.
// Nothing is computed: a dry run computes nothing, and the CUDA backend has no cuDNN row yet.

#include "engine/kernels/conv_impl.hpp"
#include "engine/kernels/kernel_table.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/tensor/memory_ledger.hpp"

namespace ckpt::conv_detail {

namespace {

// Allocated and released at once, as run_conv_plan's workspace is; in category `workspace`, so
// that a run can say how much of its peak is a modelled cuDNN workspace.
void transform_workspace(const Geometry& g, DType dtype) {
  CategoryScope category(MemoryCategory::workspace);
  const auto elem = static_cast<std::int64_t>(dtype_size(dtype));
  const std::int64_t in = g.n * g.c * g.hw_in() * elem;
  const std::int64_t out = g.n * g.o * g.hw_out() * elem;
  const std::int64_t filter = g.o * g.k_group() * elem;
  const Tensor workspace = Tensor::empty({in + out + filter + 16}, DType::b8);
}

void no_cudnn(const Tensor& t) {
  if (!t.is_meta()) no_device_kernel(device_name(t.device()), "conv (cuDNN)");
}

// cudnn_convolution_backward: the input gradient, then the weight gradient, each followed by
// its workspace; the bias gradient afterwards (convolution_backward sums grad_output over N,
// H and W for backends that do not, cuDNN among them).
TensorList backward_of(const Tensor& gy, const Tensor& w, const Geometry& g, const Shape& input,
                       const std::vector<bool>& need, bool has_bias, std::int64_t bias_channels) {
  TensorList r(has_bias ? 3 : 2);
  if (need[0]) {
    r[0] = Tensor::empty(input, w.dtype());
    transform_workspace(g, w.dtype());
  }
  if (need[1]) {
    r[1] = Tensor::empty(w.shape(), w.dtype());
    transform_workspace(g, w.dtype());
  }
  if (has_bias && need[2]) r[2] = Tensor::empty({bias_channels}, gy.dtype());
  no_cudnn(gy);
  return r;
}

}  // namespace

Tensor cudnn_forward(const Tensor& x, const Tensor&, const Tensor&, const Geometry& g) {
  Tensor out = Tensor::empty(g.image_shape(g.n, g.o, false), x.dtype());
  transform_workspace(g, x.dtype());
  no_cudnn(out);
  return out;
}

TensorList cudnn_backward(const Tensor& grad_out, const Tensor&, const Tensor& w, const Geometry& g,
                          const std::vector<bool>& need, bool has_bias) {
  return backward_of(as_contiguous(grad_out), w, g, g.image_shape(g.n, g.c, true), need, has_bias,
                     g.o);
}

// The transposed convolution is cuDNN's backward-data call of its adjoint (g describes the
// adjoint: its input is this op's output).
Tensor cudnn_transposed_forward(const Tensor& x, const Tensor&, const Tensor&, const Geometry& g) {
  Tensor out = Tensor::empty(g.image_shape(g.n, g.c, true), x.dtype());
  transform_workspace(g, x.dtype());
  no_cudnn(out);
  return out;
}

TensorList cudnn_transposed_backward(const Tensor& grad_out, const Tensor&, const Tensor& w,
                                     const Geometry& g, const std::vector<bool>& need,
                                     bool has_bias) {
  return backward_of(as_contiguous(grad_out), w, g, g.image_shape(g.n, g.o, false), need, has_bias,
                     g.c);
}

}  // namespace ckpt::conv_detail
