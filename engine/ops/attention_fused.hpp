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

// The bytes of the workspace PyTorch 2.x's memory-efficient backward takes from the allocator
// (_efficient_attention_backward's `workspace`) for `slices` (batch x heads) attentions of
// `queries` rows and a head of `head` (and `value_head`) elements, on an sm80-or-later GPU; 0
// where it is not modelled (half precision) or none is taken. Derived from the source, not
// measured on a GPU (attention_fused.cpp says how).
std::int64_t efficient_attention_backward_workspace_bytes(DType dtype, std::int64_t slices,
                                                          std::int64_t queries, std::int64_t head,
                                                          std::int64_t value_head);

}  // namespace ckpt
