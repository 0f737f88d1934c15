#pragma once

// Scaled dot-product attention, softmax(scale · q kᵀ + mask) v, as one op: the ONNX importer
// recovers it from the MatMul → scale → [mask] → Softmax → [Dropout] → MatMul chain PyTorch's
// exporter writes (issue 27), in the form the graph had it, so that the arithmetic is the same.
//
// What it keeps for backward depends on the kernel PyTorch would run (attention_kernel.cpp
// chooses it as PyTorch 2.x's sdp_utils.cpp does):
//  - math (the CPU, float64 anywhere, attention written out by hand): PyTorch 1.13's
//    nn.MultiheadAttention, i.e. the decomposed ops themselves, each saving what its PyTorch op
//    saves (the scaled query and key, the attention weights, dropout's mask, the value);
//  - the fused kernels of PyTorch 2.x on CUDA — memory-efficient
//    (ScaledDotProductEfficientAttentionBackward0), flash (...FlashAttentionBackward0) and cuDNN
//    (...CudnnAttentionBackward0): query, key, value, output and the log-sum-exp of each query
//    row in float32 whatever the inputs' dtype, [..., ceil(L / 32) · 32] for the efficient
//    kernel, [..., L] for flash and cuDNN; dropout's mask is drawn again in backward from the
//    Philox seed and offset (host scalars), never stored. Only the forms PyTorch 2.x runs as
//    F.scaled_dot_product_attention: its own export (query and key scaled) and
//    nn.MultiheadAttention's (the query divided); attention written out by hand (the scale on
//    the product, nanoGPT's; the query multiplied, Swin's) runs as its ops on every device, and
//    keeps what they keep.

#include <cstdint>
#include <limits>

#include "engine/tensor/tensor.hpp"

namespace ckpt {

// One scaling step as the exported graph writes it: x · value, x / value, or none.
struct AttentionScale {
  enum class Op : std::uint8_t { none, mul, div };
  Op op = Op::none;
  double value = 1;
  double factor() const { return op == Op::div ? 1.0 / value : op == Op::mul ? value : 1.0; }
};

enum class AttentionMask : std::uint8_t {
  none,
  add,   // scores + mask (a float mask, -inf where a position is hidden)
  fill,  // where(mask, fill, scores): masked_fill, the mask true where a position is hidden
  // F.scaled_dot_product_attention(is_causal=True): no mask tensor; query i sees keys j <= i.
  // The math kernel makes the bool mask (triu(1)) and fills as `fill` does; the efficient
  // kernel masks in place and keeps nothing more.
  causal,
};

struct AttentionOptions {
  AttentionScale query, key, scores;  // on q, on kᵀ, on the product: the graph's own places
  AttentionMask mask = AttentionMask::none;
  double fill = -std::numeric_limits<double>::infinity();
  double dropout = 0;  // on the attention weights (training mode)
};

enum class AttentionKernel : std::uint8_t { math, efficient, flash, cudnn };

const char* attention_kernel_name(AttentionKernel kernel);

// The kernel PyTorch picks for these inputs under this thread's memory semantics (a dry run
// standing in for CUDA counts as CUDA): PyTorch 2.x's choice by dtype, head size, mask and
// dropout on CUDA (attention_kernel.cpp), math on the CPU (PyTorch 1.13).
AttentionKernel attention_kernel_for(const Tensor& query, const Tensor& key_t, const Tensor& value,
                                     bool masked, const AttentionOptions& options);

// The same choice on shapes alone, for a GPU of PyTorch 2.11's oracle (sm90, cuDNN 9.19).
struct AttentionProblem {
  DType dtype = DType::f32;
  std::int64_t query_length = 0, key_length = 0;        // L and S
  std::int64_t head = 0, key_head = 0, value_head = 0;  // E of q, of k, Ev of v
  bool masked = false;
  double dropout = 0;
  bool scaled_product = false;  // attention written out as ops in the model (math in 2.x)
};
AttentionKernel cuda_attention_kernel(const AttentionProblem& problem);

// query [..., L, E], key_t [..., E, S] (the key transposed, as the graph holds it), value
// [..., S, Ev]; mask (undefined for none) broadcasts to [..., L, S]. Returns [..., L, Ev].
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key_t, const Tensor& value,
                                    const Tensor& mask, const AttentionOptions& options,
                                    AttentionKernel kernel);
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key_t, const Tensor& value,
                                    const Tensor& mask, const AttentionOptions& options);

// The efficient kernel's log-sum-exp rows: ceil(L / 32) · 32 (PyTorch's kAlignLSE).
std::int64_t attention_lse_length(std::int64_t query_length);

}  // namespace ckpt
