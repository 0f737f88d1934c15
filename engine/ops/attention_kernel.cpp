// Which attention kernel PyTorch runs, and so what it keeps for backward.
//
// On the CPU the engine is PyTorch 1.13, which has no fused attention: nn.MultiheadAttention runs
// its decomposed ops (the math kernel). On CUDA it is PyTorch 2.x, whose
// F.scaled_dot_product_attention (and nn.MultiheadAttention with need_weights=False, as
// nn.TransformerEncoderLayer and torchvision's ViT call it) dispatches by
// aten/src/ATen/native/transformers/cuda/sdp_utils.cpp, select_sdp_backend: the first backend
// of the priority order whose constraints all hold. The GPU is the oracle's (an H200: sm90,
// cuDNN 9.19, CUDA 13; ../shared/reference/gpu-oracle).
#include <cmath>

#include "engine/ops/attention.hpp"
#include "engine/tensor/memory_semantics.hpp"

namespace ckpt {

namespace {

bool half(DType t) {
  return t == DType::bf16 || t == DType::f16;
}

// can_use_cudnn_attention. It comes first: priority_order puts cuDNN ahead of flash when
// check_prefer_cudnn_attention holds (cuDNN newer than 9.15 on sm90 or sm10x).
bool cudnn_fits(const AttentionProblem& p) {
  if (!half(p.dtype)) return false;  // check_dtypes_low_precision
  // check_cudnn_dropout: its dropout's resolution is 1/16.
  if (p.dropout * 16.0 != std::floor(p.dropout * 16.0)) return false;
  // check_cudnn_tensor_shapes: head dims up to 128 below cuDNN 9.22 (192 for q and k with 128
  // for v on sm90), multiples of 8; a key length of 1 is refused, and a query length of 1 with
  // dropout.
  const bool d192 = p.head == 192 && p.value_head == 128;
  if (!d192 && (p.head > 128 || p.value_head > 128)) return false;
  if (p.head % 8 != 0 || p.value_head % 8 != 0) return false;
  if (p.key_length == 1) return false;
  if (p.dropout > 0 && p.query_length == 1) return false;
  // check_cudnn_layout wants q, k, v as views [B, H, S, D] of [B, S, H, D] (a projection's output
  // viewed per head and transposed), which is how both nn.MultiheadAttention and hand-written
  // multi-head code make them; the engine's graph does not keep strides of PyTorch 2.x's own
  // views, so this one constraint is taken as met.
  return true;
}

// can_use_flash_attention: half precision only, no attention mask (check_for_attn_mask), one head
// dim for q, k and v, at most 256 (check_head_dim_size_flash).
bool flash_fits(const AttentionProblem& p) {
  if (!half(p.dtype) || p.masked) return false;
  return p.head == p.key_head && p.head == p.value_head && p.head <= 256;
}

// can_use_mem_efficient_attention: float32, float16 and bfloat16 on sm80 and newer; q and k of
// one head dim, q's and v's a multiple of minimum_gemm_alignment (4 elements in float32, 8 in
// half precision, with tensor cores); any additive mask.
bool efficient_fits(const AttentionProblem& p) {
  if (p.dtype != DType::f32 && !half(p.dtype)) return false;
  const std::int64_t alignment = half(p.dtype) ? 8 : 4;
  return p.head == p.key_head && p.head > 0 && p.value_head > 0 && p.head % alignment == 0 &&
         p.value_head % alignment == 0;
}

// Whether the exported graph is attention written out as ops in the model's own code, which
// PyTorch 2.x runs as those ops (math) — told apart by where the exporters put the scale:
//  - nn.MultiheadAttention (PyTorch 1.13's _scaled_dot_product_attention): q / sqrt(E), a Div on
//    the query; in 2.x the module calls F.scaled_dot_product_attention (need_weights=False);
//  - F.scaled_dot_product_attention's own export (torch.onnx, opset 14 and later, and the
//    opset-18 torch.export exporter): q · sqrt(scale) and kᵀ · sqrt(scale), both scaled;
//  - hand-written attention: the scale on the product (nanoGPT, GPT-2), or a Mul on the query
//    alone (torchvision's Swin, q * head_dim ** -0.5; timm's q * self.scale).
bool written_out(const AttentionOptions& o) {
  using Op = AttentionScale::Op;
  // is_causal is an argument of F.scaled_dot_product_attention alone (the native format's
  // Llama attention): PyTorch's own kernel, whatever the scale.
  if (o.mask == AttentionMask::causal) return false;
  if (o.scores.op != Op::none) return true;
  return o.query.op == Op::mul && o.key.op == Op::none;
}

}  // namespace

const char* attention_kernel_name(AttentionKernel kernel) {
  switch (kernel) {
    case AttentionKernel::math:
      return "math";
    case AttentionKernel::efficient:
      return "memory-efficient";
    case AttentionKernel::flash:
      return "flash";
    case AttentionKernel::cudnn:
      return "cuDNN";
  }
  return "?";
}

AttentionKernel cuda_attention_kernel(const AttentionProblem& p) {
  // Attention written out by hand (the scale on the product) is its own ops in PyTorch too.
  if (p.scaled_product) return AttentionKernel::math;
  if (p.query_length == 0 || p.key_length == 0) return AttentionKernel::math;
  if (cudnn_fits(p)) return AttentionKernel::cudnn;
  if (flash_fits(p)) return AttentionKernel::flash;
  if (efficient_fits(p)) return AttentionKernel::efficient;
  return AttentionKernel::math;
}

AttentionKernel attention_kernel_for(const Tensor& query, const Tensor& key_t, const Tensor& value,
                                     bool masked, const AttentionOptions& options) {
  // The device whose rules this run follows: a dry run (meta) standing in for CUDA is CUDA.
  const bool cuda =
      query.device() == Device::cuda ||
      (query.device() == Device::meta && current_memory_semantics().device == Device::cuda);
  if (!cuda || query.dim() < 2 || key_t.dim() < 2 || value.dim() < 2) return AttentionKernel::math;
  const Shape& q = query.shape();
  const Shape& kt = key_t.shape();
  AttentionProblem p;
  p.dtype = query.dtype();
  p.query_length = q[q.size() - 2];
  p.key_length = kt.back();
  p.head = q.back();
  p.key_head = kt[kt.size() - 2];
  p.value_head = value.shape().back();
  p.masked = masked;
  p.dropout = options.dropout;
  p.scaled_product = written_out(options);
  return cuda_attention_kernel(p);
}

}  // namespace ckpt
