// The composite blocks of the native format: residual, dense block, transition, LSTM,
// attention, repeat. The one-op layers are in json_layers.cpp.
#include <climits>
#include <cmath>
#include <limits>
#include <set>

#include "engine/model/json_builder.hpp"
#include "engine/ops/schema/op_schema.hpp"
#include "engine/tensor/init.hpp"

namespace ckpt::json_model {

Values Builder::residual(const json& j, const std::string& where, Scope& c, const Values& in) {
  const Values x = expect(in, 1, where, "");
  if (!j.contains("layers")) throw JsonError(where, "missing \"layers\" (the residual branch)");
  const Values body = expect(run_layers(j.at("layers"), where + ".layers", c, x), 1,
                             where + ".layers", "the branch must end in one value");
  Values shortcut = x;
  if (j.contains("shortcut") && !j.at("shortcut").is_null()) {
    Scope d =
        child(c, get_string(j, "shortcut_name", where, "downsample"), "Sequential", nullptr, where);
    shortcut = expect(run_layers(j.at("shortcut"), where + ".shortcut", d, x), 1,
                      where + ".shortcut", "the shortcut must end in one value");
  }
  Values out = emit(c, "add", {body[0], shortcut[0]}, {}, "add");
  if (j.contains("after")) out = run_layers(j.at("after"), where + ".after", c, out);
  return out;
}

Values Builder::dense_layer(const json& j, const std::string& where, Scope& block,
                            const Values& features, std::int64_t in_channels) {
  const std::int64_t growth = get_int(j, "growth", where);
  const std::int64_t bn_size = get_int(j, "bn_size", where, 4);
  const std::string name = "denselayer" + std::to_string(features.size());
  Scope layer = child(block, name, "DenseLayer", nullptr, where);
  layer.module->attrs = {{"in", in_channels}, {"growth", growth}, {"bn_size", bn_size}};
  const std::string w = where + "." + name;
  // torchvision's bn_function (concat + norm1 + relu1 + conv1) as its own module, so that the
  // memory-efficient DenseNet's checkpoint is one click.
  Scope bottleneck = child(layer, "bottleneck", "Bottleneck", nullptr, w);
  bottleneck.module->attrs = {{"in", in_channels}, {"out", bn_size * growth}};
  Values h = emit(bottleneck, "cat", features, {{"dim", std::int64_t{1}}}, "cat");
  h = module_layer(bottleneck, "norm1", {{"type", "batchnorm2d"}, {"features", in_channels}}, w, h);
  h = module_layer(bottleneck, "relu1", {{"type", "relu"}}, w, h);
  h = module_layer(bottleneck, "conv1",
                   {{"type", "conv2d"},
                    {"in", in_channels},
                    {"out", bn_size * growth},
                    {"kernel", 1},
                    {"bias", false}},
                   w, h);
  h = module_layer(layer, "norm2", {{"type", "batchnorm2d"}, {"features", bn_size * growth}}, w, h);
  h = module_layer(layer, "relu2", {{"type", "relu"}}, w, h);
  return module_layer(layer, "conv2",
                      {{"type", "conv2d"},
                       {"in", bn_size * growth},
                       {"out", growth},
                       {"kernel", 3},
                       {"padding", 1},
                       {"bias", false}},
                      w, h);
}

Values Builder::dense_block(const json& j, const std::string& where, Scope& c, const Values& in) {
  Values features = expect(in, 1, where, "");
  const std::int64_t n = get_int(j, "num_layers", where);
  const std::int64_t channels = get_int(j, "in", where);
  const std::int64_t growth = get_int(j, "growth", where);
  if (n <= 0 || channels <= 0 || growth <= 0)
    throw JsonError(where, "\"num_layers\", \"in\" and \"growth\" must be positive");
  for (std::int64_t l = 0; l < n; ++l)
    features.push_back(dense_layer(j, where, c, features, channels + l * growth)[0]);
  return emit(c, "cat", features, {{"dim", std::int64_t{1}}}, "cat");
}

Values Builder::transition(const json& j, const std::string& where, Scope& c, const Values& in) {
  const std::int64_t nin = get_int(j, "in", where), nout = get_int(j, "out", where);
  Values h = module_layer(c, "norm", {{"type", "batchnorm2d"}, {"features", nin}}, where, in);
  h = module_layer(c, "relu", {{"type", "relu"}}, where, h);
  h = module_layer(c, "conv",
                   {{"type", "conv2d"}, {"in", nin}, {"out", nout}, {"kernel", 1}, {"bias", false}},
                   where, h);
  return module_layer(c, "pool", {{"type", "avgpool2d"}, {"kernel", 2}, {"stride", 2}}, where, h);
}

Values Builder::lstm(const json& j, const std::string& where, Scope& c, const Values& in) {
  const Values args = expect(in, 3, where, "activation, h0, c0");
  const std::int64_t nin = get_int(j, "input_size", where);
  const std::int64_t hidden = get_int(j, "hidden_size", where);
  std::int64_t steps = get_int(j, "steps", where, -1);
  if (steps < 0) {
    const InputInfo* declared = model_.find_input(args[0]);
    if (!declared || declared->shape.empty() || declared->shape[0] < 0)
      throw JsonError(where, "give \"steps\" (the activation's length is not known here)");
    steps = declared->shape[0];
  }
  if (nin <= 0 || hidden <= 0 || steps <= 0)
    throw JsonError(where, "\"input_size\", \"hidden_size\" and \"steps\" must be positive");
  const double bound = 1.0 / std::sqrt(static_cast<double>(hidden));
  auto u = [&](const Shape& shape) { return uniform_tensor(shape, -bound, bound, gen_); };
  std::string h = args[1], cell_state = args[2];
  for (std::int64_t t = 0; t < steps; ++t) {
    const Values x =
        emit(c, "select", {args[0]}, {{"dim", std::int64_t{0}}, {"index", t}}, "select");
    const Naming naming{t == 0 ? "cell" : "cell_" + std::to_string(t), c.def + ".cell", t};
    Scope cell = child(c, naming.name, "LSTMCell", nullptr, where, &naming);
    cell.module->attrs = {{"input_size", nin}, {"hidden_size", hidden}};
    const auto w_ih = param(cell, "weight_ih", {4 * hidden, nin}, [&] {
      return u({4 * hidden, nin});
    });
    const auto w_hh = param(cell, "weight_hh", {4 * hidden, hidden}, [&] {
      return u({4 * hidden, hidden});
    });
    const auto b_ih = param(cell, "bias_ih", {4 * hidden}, [&] { return u({4 * hidden}); });
    const auto b_hh = param(cell, "bias_hh", {4 * hidden}, [&] { return u({4 * hidden}); });
    const auto gi = emit(cell, "linear", {x[0], w_ih, b_ih}, {}, "linear_ih")[0];
    const auto gh = emit(cell, "linear", {h, w_hh, b_hh}, {}, "linear_hh")[0];
    const auto gates = emit(cell, "add", {gi, gh}, {}, "gates")[0];
    auto gate = [&](std::int64_t k, const char* act, const char* name) {
      const auto part = emit(cell, "slice", {gates},
                             {{"dim", std::int64_t{1}},
                              {"start", k * hidden},
                              {"end", (k + 1) * hidden},
                              {"step", std::int64_t{1}}},
                             std::string(name) + "_slice")[0];
      return emit(cell, act, {part}, {}, name)[0];
    };
    const auto ig = gate(0, "sigmoid", "input_gate");
    const auto fg = gate(1, "sigmoid", "forget_gate");
    const auto gg = gate(2, "tanh", "cell_gate");
    const auto og = gate(3, "sigmoid", "output_gate");
    const auto kept = emit(cell, "mul", {fg, cell_state}, {}, "forget")[0];
    const auto added = emit(cell, "mul", {ig, gg}, {}, "write")[0];
    cell_state = emit(cell, "add", {kept, added}, {}, "c")[0];
    const auto tc = emit(cell, "tanh", {cell_state}, {}, "tanh_c")[0];
    h = emit(cell, "mul", {og, tc}, {}, "h")[0];
  }
  if (get_bool(j, "return_state", where, false)) return {h, cell_state};
  return {h};
}

Values Builder::attention(const json& j, const std::string& where, Scope& c, const Values& in) {
  const Values x = expect(in, 1, where, "");
  const std::int64_t dim = get_int(j, "dim", where), heads = get_int(j, "heads", where);
  if (dim <= 0 || heads <= 0 || dim % heads)
    throw JsonError(where, "\"dim\" must be a positive multiple of \"heads\"");
  const double p = get_double(j, "dropout", where, 0.0);
  const bool causal = get_bool(j, "causal", where, false);
  const std::int64_t seq = causal ? get_int(j, "seq", where, 0) : 0;
  if (causal && seq <= 0)
    throw JsonError(where,
                    "\"causal\": true needs \"seq\", the sequence length (the mask is a "
                    "[seq, seq] buffer)");
  const json proj{{"type", "linear"}, {"in", dim}, {"out", dim}};
  auto split = [&](const Values& v, const char* name) {
    // [B, S, D] -> [B, heads, S, D / heads]; a 0 in a reshape keeps that dimension.
    const auto r =
        emit(c, "reshape", v, {{"shape", std::vector<std::int64_t>{0, 0, heads, dim / heads}}},
             std::string(name) + "_heads");
    return emit(c, "transpose", r, {{"dim0", std::int64_t{1}}, {"dim1", std::int64_t{2}}},
                std::string(name) + "_t");
  };
  const auto q = split(module_layer(c, "q_proj", proj, where, x), "q");
  const auto k = split(module_layer(c, "k_proj", proj, where, x), "k");
  const auto v = split(module_layer(c, "v_proj", proj, where, x), "v");
  const auto kt = emit(c, "transpose", k, {{"dim0", std::int64_t{-2}}, {"dim1", std::int64_t{-1}}},
                       "k_transposed");
  auto scores = emit(c, "matmul", {q[0], kt[0]}, {}, "scores");
  scores = emit(c, "mul_scalar", scores,
                {{"value", 1.0 / std::sqrt(static_cast<double>(dim / heads))}}, "scale");
  if (causal) {
    // A buffer of the module, as nanoGPT's `attn.bias`: 0 where a position may attend (itself
    // and before), the lowest float after, added before the softmax (Hugging Face's GPT-2
    // masks with torch.finfo(dtype).min; -inf would make the recompute check's sums NaN).
    const Shape mshape{seq, seq};
    const auto mask = param(
        c, "causal_mask", mshape,
        [&] {
          Tensor t = Tensor::zeros(mshape);
          float* d = t.data<float>();
          for (std::int64_t r = 0; r < seq; ++r)
            for (std::int64_t k = r + 1; k < seq; ++k)
              d[r * seq + k] = std::numeric_limits<float>::lowest();
          return t;
        },
        false, true);
    scores = emit(c, "add", {scores[0], mask}, {}, "masked");
  }
  auto weights = emit(c, "softmax", scores, {{"dim", std::int64_t{-1}}}, "softmax");
  if (p > 0)
    weights = module_layer(c, "attn_drop", {{"type", "dropout"}, {"p", p}}, where, weights);
  auto ctx = emit(c, "matmul", {weights[0], v[0]}, {}, "context");
  ctx = emit(c, "transpose", ctx, {{"dim0", std::int64_t{1}}, {"dim1", std::int64_t{2}}},
             "context_t");
  ctx = emit(c, "reshape", ctx, {{"shape", std::vector<std::int64_t>{0, 0, dim}}}, "merge_heads");
  return module_layer(c, "out_proj", proj, where, ctx);
}

Values Builder::repeat(const json& j, const std::string& where, Scope& s, const Values& in) {
  const std::int64_t count = get_int(j, "count", where);
  if (count < 0) throw JsonError(where, "\"count\" must not be negative");
  if (!j.contains("body") || !(j.at("body").is_object() || j.at("body").is_array()))
    throw JsonError(where, "needs a \"body\": a layer, or a list of layers run in place");
  const json& body = j.at("body");
  const std::string bw = where + ".body";
  if (body.is_array()) {
    // A list repeats its layers in the enclosing module: `x = torch.sin(x) + a` 100 times
    // without making 100 modules.
    Values cur = in;
    for (std::int64_t k = 0; k < count; ++k) cur = run_layers(body, bw, s, cur);
    return cur;
  }
  const std::string type = get_string(body, "type", bw, "");
  const std::string name = get_string(body, "name", bw, "");
  const bool shared = get_bool(j, "shared", where, true);
  const std::int64_t start = get_int(j, "start", where, 0);
  const NativeLayer* layer = OpTable::instance().find_native_layer(type).layer;
  const bool is_module = !name.empty() || (type != "repeat" && !(layer && !layer->parameters));
  if (is_module && name.empty()) throw JsonError(bw, "a repeated module needs a \"name\"");
  if (is_module && !shared && count > 1 && name.find("{i}") == std::string::npos)
    throw JsonError(bw,
                    "distinct repeated modules (\"shared\": false) need \"{i}\" in their "
                    "name, e.g. \"block{i}\"");
  Values cur = in;
  for (std::int64_t k = 0; k < count; ++k) {
    if (!is_module) {
      cur = expand(body, bw, s, cur, static_cast<std::size_t>(k), nullptr);
      continue;
    }
    Naming naming;
    if (shared) {
      naming.name = k == 0 ? name : name + "_" + std::to_string(k);
      naming.def = s.def.empty() ? name : s.def + "." + name;
      naming.instance = k;
    } else {
      naming.name = name;
      const auto pos = naming.name.find("{i}");
      if (pos != std::string::npos) naming.name.replace(pos, 3, std::to_string(start + k));
      naming.def = s.def.empty() ? naming.name : s.def + "." + naming.name;
    }
    cur = expand(body, bw, s, cur, static_cast<std::size_t>(k), &naming);
  }
  return cur;
}

}  // namespace ckpt::json_model
