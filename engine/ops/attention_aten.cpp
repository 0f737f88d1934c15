// ATen rules of PyTorch 2.x's fused attention kernels (docs/capture_format.md, "PyTorch 2.x"):
// what F.scaled_dot_product_attention dispatches on CUDA once sdp_utils has chosen, recorded by a
// capture under FakeTensorMode with device="cuda". Each is the engine's
// scaled_dot_product_attention with the captured kernel as its `kernel` attribute, so that a run
// with CUDA's memory semantics (`--device cuda`) runs that kernel and keeps what it keeps
// (query, key, value, output and the float32 log-sum-exp; the Philox seed and offset are host
// scalars), whatever the engine's own choice would be. The math path has no op of its own: 2.x
// decomposes it into the ops other rules translate.
//
// Schemas: PyTorch's aten/src/ATen/native/native_functions.yaml (2.5 and later; e.g. commit
// 8904ba6, lines 14910 and 14958; not run here, no 2.x is installed):
//   _scaled_dot_product_efficient_attention(Tensor query, Tensor key, Tensor value,
//       Tensor? attn_bias, bool compute_log_sumexp, float dropout_p=0.0, bool is_causal=False, *,
//       float? scale=None) -> (Tensor output, Tensor log_sumexp, Tensor philox_seed,
//       Tensor philox_offset)
//   _scaled_dot_product_flash_attention(Tensor query, Tensor key, Tensor value,
//       float dropout_p=0.0, bool is_causal=False, bool return_debug_mask=False, *,
//       float? scale=None) -> (Tensor output, Tensor logsumexp, Tensor cum_seq_q,
//       Tensor cum_seq_k, SymInt max_q, SymInt max_k, Tensor philox_seed, Tensor philox_offset,
//       Tensor debug_attn_mask)
//   _scaled_dot_product_cudnn_attention(Tensor query, Tensor key, Tensor value,
//       Tensor? attn_bias, bool compute_log_sumexp, float dropout_p=0.0, bool is_causal=False,
//       bool return_debug_mask=False, *, float? scale=None) -> (the flash kernel's nine)
// query [B, H, L, E], key [B, H, S, E], value [B, H, S, Ev]; attn_bias an additive float mask
// (sdpa turns a bool mask into one before it calls the kernel).
#include <cmath>

#include "engine/ops/schema/op_schema.hpp"

namespace ckpt {

namespace {

const char* kernel_of(const std::string& aten) {
  if (aten.find("efficient") != std::string::npos) return "efficient";
  if (aten.find("flash") != std::string::npos) return "flash";
  return "cudnn";
}

void aten_fused_attention(AtenNode& n) {
  const std::string q = n.tensor("query"), k = n.tensor("key"), v = n.tensor("value");
  const Tensor& query = n.probe(q);
  const Tensor& key = n.probe(k);
  if (query.dim() < 2 || key.dim() != query.dim())
    n.fail("query and key must have the same rank, at least 2: " + query.str() + ", " + key.str());
  const double scale = n.has("scale") ? n.number("scale")
                                      : 1.0 / std::sqrt(static_cast<double>(query.shape().back()));
  if (!(scale > 0)) n.fail("the scale must be positive");
  const bool causal = n.flag("is_causal", false);
  const bool biased = n.has("attn_bias");
  if (causal && biased)
    n.fail("is_causal with an attn_bias is not supported (the engine's attention takes one mask)");
  const auto rank = static_cast<std::int64_t>(query.dim());
  const std::string key_t =
      n.emit_op("transpose", {k}, {{"dim0", rank - 2}, {"dim1", rank - 1}}, {-1}).at(0);
  // sdpa's own scaling: query and key each by sqrt(scale), as 2.x's math path does.
  const double root = std::sqrt(scale);
  Attributes attrs{{"query_scale_op", std::string("mul")},
                   {"query_scale", root},
                   {"key_scale_op", std::string("mul")},
                   {"key_scale", root},
                   {"mask", std::string(causal   ? "causal"
                                        : biased ? "add"
                                                 : "none")},
                   {"dropout", n.number_or("dropout_p", 0)},
                   {"kernel", std::string(kernel_of(n.name()))}};
  std::vector<std::string> inputs{q, key_t, v};
  if (biased) inputs.push_back(n.tensor("attn_bias"));
  n.emit_op("scaled_dot_product_attention", inputs, std::move(attrs), {0});
}

}  // namespace

void register_attention_aten(OpTable& t) {
  t.add_aten("scaled_dot_product_attention",
             {{"aten::_scaled_dot_product_efficient_attention", aten_fused_attention},
              {"aten::_scaled_dot_product_flash_attention", aten_fused_attention},
              {"aten::_scaled_dot_product_cudnn_attention", aten_fused_attention}});
}

}  // namespace ckpt
