#pragma once

// PyTorch 2.x's fused attention kernels (attention_fused.cpp), behind
// scaled_dot_product_attention (attention.hpp), which picks the kernel.

#include "engine/ops/attention.hpp"

namespace ckpt {

// The memory-efficient, flash or cuDNN kernel: saves query, key, value, output and the
// log-sum-exp, and records under that kernel's backward node name.
Tensor fused_attention(const Tensor& query, const Tensor& key_t, const Tensor& value,
                       const Tensor& mask, const AttentionOptions& options, AttentionKernel kernel);

// float32 for half-precision inputs (the fused kernels keep it so), the inputs' own otherwise
// (float64 in the engine's gradient checks).
DType attention_lse_dtype(DType inputs);

const char* fused_attention_backward_name(AttentionKernel kernel);

}  // namespace ckpt
