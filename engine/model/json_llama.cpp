// The Llama family's blocks in the native format (issue 39), as eager PyTorch computes them
// (Hugging Face's LlamaRMSNorm, LlamaRotaryEmbedding, LlamaMLP, LlamaAttention; torchtitan's
// Llama 3 is the same arithmetic): rmsnorm, gated_mlp, llama_attention (grouped-query, causal,
// rotary, computed by the scaled_dot_product_attention op) and tied_linear (an LM head that
// reads the embedding's weight). Each op saves what its PyTorch 1.13 op saves.
#include <cmath>
#include <vector>

#include "engine/model/json_builder.hpp"
#include "engine/ops/schema/op_schema.hpp"
#include "engine/tensor/init.hpp"

namespace ckpt::json_model {

namespace {

Attributes dims_attr(std::int64_t dim) {
  return {{"dims", std::vector<std::int64_t>{dim}}, {"keepdim", std::int64_t{1}}};
}

}  // namespace

// x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight: pow saves x, rsqrt its
// result, each mul both of its operands.
Values Builder::rmsnorm(const json& j, const std::string& where, Scope& c, const Values& in) {
  const Values x = expect(in, 1, where, "");
  const std::int64_t dim = get_int(j, "dim", where);
  const double eps = get_double(j, "eps", where, 1e-6);
  if (dim <= 0) throw JsonError(where, "\"dim\" must be positive");
  if (!(eps > 0)) throw JsonError(where, "\"eps\" must be positive");
  const std::string weight = param(c, "weight", {dim}, [&] { return Tensor::ones({dim}); });
  const auto sq = emit(c, "pow", x, {{"exponent", 2.0}}, "pow");
  const auto var = emit(c, "mean_dims", sq, dims_attr(-1), "variance");
  const auto shifted = emit(c, "add_scalar", var, {{"value", eps}}, "add_eps");
  const auto inv = emit(c, "rsqrt", shifted, {}, "rsqrt");
  const auto normed = emit(c, "mul", {x[0], inv[0]}, {}, "normed");
  return emit(c, "mul", {normed[0], weight}, {}, "scaled");
}

// down_proj(act(gate_proj(x)) * up_proj(x)): SwiGLU with "silu", GeGLU with "gelu" or
// "gelu_tanh"; no biases (Llama, Gemma).
Values Builder::gated_mlp(const json& j, const std::string& where, Scope& c, const Values& in) {
  const Values x = expect(in, 1, where, "");
  const std::int64_t dim = get_int(j, "dim", where), hidden = get_int(j, "hidden", where);
  if (dim <= 0 || hidden <= 0) throw JsonError(where, "\"dim\" and \"hidden\" must be positive");
  const std::string act = get_string(j, "activation", where, "silu");
  json act_layer;
  if (act == "silu")
    act_layer = {{"type", "silu"}};
  else if (act == "gelu")
    act_layer = {{"type", "gelu"}};
  else if (act == "gelu_tanh")
    act_layer = {{"type", "gelu"}, {"approximate", "tanh"}};
  else
    throw JsonError(
        where, "\"activation\" must be \"silu\", \"gelu\" or \"gelu_tanh\", got \"" + act + "\"");
  const bool bias = get_bool(j, "bias", where, false);
  const json up{{"type", "linear"}, {"in", dim}, {"out", hidden}, {"bias", bias}};
  const json down{{"type", "linear"}, {"in", hidden}, {"out", dim}, {"bias", bias}};
  const auto gate = module_layer(c, "gate_proj", up, where, x);
  const auto activated = module_layer(c, "act_fn", act_layer, where, gate);
  const auto lifted = module_layer(c, "up_proj", up, where, x);
  const auto product = emit(c, "mul", {activated[0], lifted[0]}, {}, "gated");
  return module_layer(c, "down_proj", down, where, product);
}

// Rotary tables as Hugging Face's LlamaRotaryEmbedding makes them: inv_freq = θ^(-2i/d),
// angles t · inv_freq for positions t < seq, cat(angles, angles), their cos and sin — computed
// in double and rounded once to float. Buffers of the root (`rotary_cos`, `rotary_sin`), shared
// by every block, as the model's one rotary module is.
std::pair<std::string, std::string> Builder::rotary_tables(std::int64_t seq, std::int64_t head_dim,
                                                           double theta, const std::string& where) {
  if (head_dim % 2) throw JsonError(where, "rotary embeddings need an even head size");
  auto table = [&](bool sine) {
    Tensor t = Tensor::empty({seq, head_dim});
    float* d = t.data<float>();
    const std::int64_t half = head_dim / 2;
    for (std::int64_t p = 0; p < seq; ++p)
      for (std::int64_t i = 0; i < half; ++i) {
        const double inv_freq =
            1.0 / std::pow(theta, static_cast<double>(2 * i) / static_cast<double>(head_dim));
        const double angle = static_cast<double>(p) * inv_freq;
        const float v = static_cast<float>(sine ? std::sin(angle) : std::cos(angle));
        d[p * head_dim + i] = v;
        d[p * head_dim + half + i] = v;
      }
    return t;
  };
  const Shape shape{seq, head_dim};
  return {param(
              root_, "rotary_cos", shape, [&] { return table(false); }, false, true),
          param(
              root_, "rotary_sin", shape, [&] { return table(true); }, false, true)};
}

// q * cos + rotate_half(q) * sin, rotate_half(x) = cat(-x[..., d/2:], x[..., :d/2]).
Values Builder::apply_rotary(Scope& c, const Values& x, const std::string& cos,
                             const std::string& sin, std::int64_t head_dim,
                             const std::string& name) {
  const std::int64_t half = head_dim / 2;
  auto part = [&](std::int64_t start, std::int64_t end, const char* what) {
    return emit(
        c, "slice", x,
        {{"dim", std::int64_t{-1}}, {"start", start}, {"end", end}, {"step", std::int64_t{1}}},
        name + what);
  };
  const auto x1 = part(0, half, "_x1");
  const auto x2 = part(half, head_dim, "_x2");
  const auto neg = emit(c, "neg", x2, {}, name + "_neg");
  const auto rotated = emit(c, "cat", {neg[0], x1[0]}, {{"dim", std::int64_t{-1}}}, name + "_rot");
  const auto a = emit(c, "mul", {x[0], cos}, {}, name + "_cos");
  const auto b = emit(c, "mul", {rotated[0], sin}, {}, name + "_sin");
  return emit(c, "add", {a[0], b[0]}, {}, name + "_embed");
}

// Hugging Face's LlamaAttention: q, k, v projections (kv_heads heads for k and v: grouped-query
// when fewer than heads, multi-query at 1), rotary embeddings on q and k, repeat_kv (expand and
// reshape: a copy, as repeat_kv makes one), causal SDPA with the scale on the query, o_proj.
Values Builder::llama_attention(const json& j, const std::string& where, Scope& c,
                                const Values& in) {
  const Values x = expect(in, 1, where, "");
  const std::int64_t dim = get_int(j, "dim", where), heads = get_int(j, "heads", where);
  const std::int64_t kv_heads = get_int(j, "kv_heads", where, heads);
  const std::int64_t seq = get_int(j, "seq", where);
  const double theta = get_double(j, "rope_theta", where, 10000.0);
  if (dim <= 0 || heads <= 0 || dim % heads)
    throw JsonError(where, "\"dim\" must be a positive multiple of \"heads\"");
  if (kv_heads <= 0 || heads % kv_heads)
    throw JsonError(where, "\"heads\" (" + std::to_string(heads) +
                               ") must be a multiple of \"kv_heads\" (" + std::to_string(kv_heads) +
                               ")");
  if (seq <= 0) throw JsonError(where, "\"seq\" (the rotary tables' length) must be positive");
  if (!(theta > 0)) throw JsonError(where, "\"rope_theta\" must be positive");
  const std::int64_t head_dim = dim / heads, rep = heads / kv_heads;
  const bool bias = get_bool(j, "bias", where, false);
  const auto [cos, sin] = rotary_tables(seq, head_dim, theta, where);
  auto proj = [&](const char* name, std::int64_t nout) {
    return module_layer(c, name, {{"type", "linear"}, {"in", dim}, {"out", nout}, {"bias", bias}},
                        where, x);
  };
  auto split = [&](const Values& v, std::int64_t n, const std::string& name) {
    // [B, S, n · d] -> [B, n, S, d]; a 0 in a reshape keeps that dimension.
    const auto r = emit(c, "reshape", v, {{"shape", std::vector<std::int64_t>{0, 0, n, head_dim}}},
                        name + "_heads");
    return emit(c, "transpose", r, {{"dim0", std::int64_t{1}}, {"dim1", std::int64_t{2}}},
                name + "_t");
  };
  auto repeat_kv = [&](const Values& v, const std::string& name) {
    if (rep == 1) return v;
    const auto u = emit(c, "unsqueeze", v, {{"dim", std::int64_t{2}}}, name + "_unsqueeze");
    const auto e = emit(c, "expand", u, {{"shape", std::vector<std::int64_t>{-1, -1, rep, -1, -1}}},
                        name + "_expand");
    return emit(c, "reshape", e, {{"shape", std::vector<std::int64_t>{0, heads, -1, head_dim}}},
                name + "_repeat");
  };
  const auto q = apply_rotary(c, split(proj("q_proj", dim), heads, "q"), cos, sin, head_dim, "q");
  const auto k = apply_rotary(c, split(proj("k_proj", kv_heads * head_dim), kv_heads, "k"), cos,
                              sin, head_dim, "k");
  const auto v = split(proj("v_proj", kv_heads * head_dim), kv_heads, "v");
  const auto kt = emit(c, "transpose", repeat_kv(k, "k"),
                       {{"dim0", std::int64_t{-2}}, {"dim1", std::int64_t{-1}}}, "k_transposed");
  const auto vr = repeat_kv(v, "v");
  auto ctx = emit(c, "scaled_dot_product_attention", {q[0], kt[0], vr[0]},
                  {{"query_scale_op", std::string("mul")},
                   {"query_scale", 1.0 / std::sqrt(static_cast<double>(head_dim))},
                   {"mask", std::string("causal")}},
                  "sdpa");
  ctx = emit(c, "transpose", ctx, {{"dim0", std::int64_t{1}}, {"dim1", std::int64_t{2}}},
             "context_t");
  ctx = emit(c, "reshape", ctx, {{"shape", std::vector<std::int64_t>{0, 0, dim}}}, "merge_heads");
  return module_layer(c, "o_proj", {{"type", "linear"}, {"in", dim}, {"out", dim}, {"bias", bias}},
                      where, ctx);
}

// An LM head whose weight is another module's ({"tied_to": "embed_tokens.weight"}): Hugging
// Face's tie_word_embeddings. The weight is one parameter, its gradient the sum of both uses.
Values Builder::tied_linear(const json& j, const std::string& where, Scope& c, const Values& in) {
  const Values x = expect(in, 1, where, "");
  const std::string tied = get_string(j, "tied_to", where, "");
  if (tied.empty()) throw JsonError(where, "needs \"tied_to\", the name of the weight it reuses");
  const auto it = param_index_.find(tied);
  if (it == param_index_.end())
    throw JsonError(where, "\"tied_to\": no parameter \"" + tied +
                               "\" declared before this layer (e.g. \"embed_tokens.weight\")");
  const ParameterInfo& p = model_.parameters[it->second];
  if (p.initial.dim() != 2 || p.is_buffer)
    throw JsonError(
        where, "\"tied_to\": \"" + tied + "\" is not a 2-d weight (it is " + p.initial.str() + ")");
  c.module->attrs["tied_to"] = tied;
  return emit(c, "linear", {x[0], tied}, {}, "linear");
}

}  // namespace ckpt::json_model
