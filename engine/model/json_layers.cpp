// The layer kinds of the native format that are one op, as tables: parameterised layers and
// single ops, each row the PyTorch module class it shows as and how it reads its keys. The
// builder and the list of known types look rows up here. The composite blocks are in
// json_blocks.cpp.
#include <climits>
#include <cmath>
#include <limits>
#include <set>

#include "engine/model/json_builder.hpp"
#include "engine/ops/schema/op_schema.hpp"
#include "engine/tensor/init.hpp"

namespace ckpt::json_model {

namespace {

using LayerCall = Builder::LayerCall;

std::int64_t flag(const LayerCall& c, const char* key, bool fallback) {
  return get_bool(c.j, key, c.where, fallback) ? 1 : 0;
}

}  // namespace

const Builder::LayerRules& Builder::param_layer_rules() {
  static const LayerRules rules{
      {"linear",
       {"Linear",
        [](const LayerCall& c) {
          const std::int64_t nin = get_int(c.j, "in", c.where), nout = get_int(c.j, "out", c.where);
          if (nin <= 0 || nout <= 0)
            throw JsonError(c.where, "\"in\" and \"out\" must be positive");
          Builder& b = c.b;
          Values args{c.one()[0], b.param(c.s, "weight", {nout, nin}, [&] {
                        return default_weight({nout, nin}, nin, b.gen_);
                      })};
          if (get_bool(c.j, "bias", c.where, true))
            args.push_back(
                b.param(c.s, "bias", {nout}, [&] { return default_weight({nout}, nin, b.gen_); }));
          return b.emit(c.s, "linear", args, {}, "");
        }}},
      {"conv2d",
       {"Conv2d",
        [](const LayerCall& c) {
          const std::int64_t nin = get_int(c.j, "in", c.where), nout = get_int(c.j, "out", c.where);
          const auto kernel = get_ints(c.j, "kernel", c.where, 2, -1);
          if (kernel[0] <= 0 || kernel[1] <= 0)
            throw JsonError(c.where, "needs a positive \"kernel\"");
          const std::int64_t groups = get_int(c.j, "groups", c.where, 1);
          if (nin <= 0 || nout <= 0 || groups <= 0 || nin % groups || nout % groups)
            throw JsonError(c.where, "\"in\" and \"out\" must be positive multiples of \"groups\"");
          const std::int64_t fan_in = nin / groups * kernel[0] * kernel[1];
          const Shape wshape{nout, nin / groups, kernel[0], kernel[1]};
          Builder& b = c.b;
          Values args{c.one()[0], b.param(c.s, "weight", wshape,
                                          [&] { return default_weight(wshape, fan_in, b.gen_); })};
          if (get_bool(c.j, "bias", c.where, true))
            args.push_back(b.param(c.s, "bias", {nout},
                                   [&] { return default_weight({nout}, fan_in, b.gen_); }));
          Attributes a{{"stride", get_ints(c.j, "stride", c.where, 2, 1)},
                       {"padding", get_ints(c.j, "padding", c.where, 2, 0)},
                       {"dilation", get_ints(c.j, "dilation", c.where, 2, 1)},
                       {"groups", groups}};
          return b.emit(c.s, "conv2d", args, std::move(a), "");
        }}},
      {"embedding",
       {"Embedding",
        [](const LayerCall& c) {
          // nn.Embedding(num, dim): weight N(0, 1), rows gathered by int64 indices of any shape.
          const std::int64_t num = get_int(c.j, "num", c.where), dim = get_int(c.j, "dim", c.where);
          if (num <= 0 || dim <= 0)
            throw JsonError(c.where, "\"num\" and \"dim\" must be positive");
          const Shape wshape{num, dim};
          Builder& b = c.b;
          const Values x = c.one();
          return b.emit(c.s, "embedding",
                        {b.param(c.s, "weight", wshape,
                                 [&] { return normal_tensor(wshape, 0.0, 1.0, b.gen_); }),
                         x[0]},
                        {}, "");
        }}},
      {"batchnorm2d",
       {"BatchNorm2d",
        [](const LayerCall& c) {
          const std::int64_t n = get_int(c.j, "features", c.where);
          if (n <= 0) throw JsonError(c.where, "\"features\" must be positive");
          Builder& b = c.b;
          auto buffer = [&](const char* name, const Shape& shape, std::function<Tensor()> make) {
            return b.param(c.s, name, shape, make, false, true);
          };
          Values args{
              c.one()[0],
              b.param(c.s, "weight", {n}, [&] { return Tensor::ones({n}); }),
              b.param(c.s, "bias", {n}, [&] { return Tensor::zeros({n}); }),
              buffer("running_mean", {n}, [&] { return Tensor::zeros({n}); }),
              buffer("running_var", {n}, [&] { return Tensor::ones({n}); }),
              buffer("num_batches_tracked", {}, [] { return Tensor::zeros({}, DType::i64); })};
          Attributes a{{"eps", get_double(c.j, "eps", c.where, 1e-5)},
                       {"momentum", get_double(c.j, "momentum", c.where, 0.1)},
                       {"training", std::int64_t{1}}};
          return b.emit(c.s, "batch_norm", args, std::move(a), "");
        }}},
      {"layernorm",
       {"LayerNorm",
        [](const LayerCall& c) {
          const Shape shape = get_int_list(c.j, "shape", c.where);
          Builder& b = c.b;
          Values args{c.one()[0],
                      b.param(c.s, "weight", shape, [&] { return Tensor::ones(shape); }),
                      b.param(c.s, "bias", shape, [&] { return Tensor::zeros(shape); })};
          Attributes a{{"normalized_shape", shape}, {"eps", get_double(c.j, "eps", c.where, 1e-5)}};
          return b.emit(c.s, "layer_norm", args, std::move(a), "");
        }}},
  };
  return rules;
}

const Builder::LayerRules& Builder::simple_layer_rules() {
  // The op of the layer's own type, without attributes.
  constexpr auto same = [](const LayerCall& c) {
    return c.b.emit(c.s, c.type, c.one(), {}, c.hint);
  };
  // The op of the layer's own type with one attribute read from the key of the same name.
  constexpr auto with_dim = [](const LayerCall& c) {
    return c.b.emit(c.s, c.type, c.one(), {{"dim", get_int(c.j, "dim", c.where)}}, c.hint);
  };
  constexpr auto reshaping = [](const LayerCall& c) {
    return c.b.emit(c.s, c.type, c.one(), {{"shape", get_int_list(c.j, "shape", c.where)}}, c.hint);
  };
  constexpr auto reduction = [](const LayerCall& c) {
    if (!c.j.contains("dims")) return c.b.emit(c.s, c.type, c.one(), {}, c.hint);
    return c.b.emit(
        c.s, c.type + "_dims", c.one(),
        {{"dims", get_int_list(c.j, "dims", c.where)}, {"keepdim", flag(c, "keepdim", false)}},
        c.hint);
  };
  constexpr auto arithmetic = [](const LayerCall& c) {
    if (c.in.size() == 2) return c.b.emit(c.s, c.type, c.in, {}, c.hint);
    const Values x = c.one();
    if (c.j.contains("param"))
      return c.b.emit(c.s, c.type,
                      {x[0], c.b.lookup_param(c.s, get_string(c.j, "param", c.where, ""), c.where)},
                      {}, c.hint);
    if (c.j.contains("other"))
      return c.b.emit(c.s, c.type,
                      {x[0], c.b.lookup(c.s, get_string(c.j, "other", c.where, ""), c.where)}, {},
                      c.hint);
    if (c.j.contains("scalar"))
      return c.b.emit(c.s, c.type + "_scalar", x,
                      {{"value", get_double(c.j, "scalar", c.where, 0)}}, c.hint);
    throw JsonError(c.where, c.type +
                                 " takes two inputs, or one input and a \"param\", an "
                                 "\"other\" value or a \"scalar\"");
  };
  constexpr auto pooling = [](const LayerCall& c) {
    const auto kernel = get_ints(c.j, "kernel", c.where, 2, -1);
    if (kernel[0] <= 0 || kernel[1] <= 0) throw JsonError(c.where, "needs a positive \"kernel\"");
    Attributes a{{"kernel", kernel},
                 {"stride", get_ints(c.j, "stride", c.where, 2, -1)},
                 {"padding", get_ints(c.j, "padding", c.where, 2, 0)},
                 {"ceil_mode", flag(c, "ceil_mode", false)}};
    if (std::get<std::vector<std::int64_t>>(a["stride"])[0] < 0) a["stride"] = kernel;
    if (c.type == "maxpool2d") {
      a["dilation"] = get_ints(c.j, "dilation", c.where, 2, 1);
      return c.b.emit(c.s, "max_pool2d", c.one(), std::move(a), c.hint);
    }
    a["count_include_pad"] = flag(c, "count_include_pad", true);
    return c.b.emit(c.s, "avg_pool2d", c.one(), std::move(a), c.hint);
  };
  static const LayerRules rules{
      {"relu", {"ReLU", same}},
      {"gelu", {"GELU", same}},
      {"sigmoid", {"Sigmoid", same}},
      {"tanh", {"Tanh", same}},
      {"sin", {nullptr, same}},
      {"cos", {nullptr, same}},
      {"exp", {nullptr, same}},
      {"log", {nullptr, same}},
      {"sqrt", {nullptr, same}},
      {"neg", {nullptr, same}},
      {"erf", {nullptr, same}},
      {"identity", {"Identity", same}},
      {"clone", {nullptr, same}},
      {"relu6",
       {"ReLU6",
        [](const LayerCall& c) {
          return c.b.emit(c.s, "hardtanh", c.one(), {{"min", 0.0}, {"max", 6.0}}, c.hint);
        }}},
      {"hardtanh",
       {"Hardtanh",
        [](const LayerCall& c) {
          return c.b.emit(c.s, "hardtanh", c.one(),
                          {{"min", get_double(c.j, "min", c.where, -1.0)},
                           {"max", get_double(c.j, "max", c.where, 1.0)}},
                          c.hint);
        }}},
      {"clamp",
       {nullptr,
        [](const LayerCall& c) {
          Attributes a;
          if (c.j.contains("min")) a["min"] = get_double(c.j, "min", c.where, 0);
          if (c.j.contains("max")) a["max"] = get_double(c.j, "max", c.where, 0);
          if (a.empty()) throw JsonError(c.where, "clamp needs \"min\" or \"max\"");
          return c.b.emit(c.s, "clamp", c.one(), std::move(a), c.hint);
        }}},
      {"softmax", {"Softmax", with_dim}},
      {"log_softmax", {"LogSoftmax", with_dim}},
      {"dropout",
       {"Dropout",
        [](const LayerCall& c) {
          const double p = get_double(c.j, "p", c.where, 0.5);
          if (p < 0 || p > 1) throw JsonError(c.where, "dropout \"p\" must be in [0, 1]");
          return c.b.emit(c.s, "dropout", c.one(), {{"p", p}, {"training", std::int64_t{1}}},
                          c.hint);
        }}},
      {"flatten",
       {"Flatten",
        [](const LayerCall& c) {
          return c.b.emit(c.s, "flatten", c.one(),
                          {{"start_dim", get_int(c.j, "start_dim", c.where, 1)},
                           {"end_dim", get_int(c.j, "end_dim", c.where, -1)}},
                          c.hint);
        }}},
      {"reshape", {nullptr, reshaping}},
      {"view", {nullptr, reshaping}},
      {"expand",
       {nullptr,
        [](const LayerCall& c) {
          return c.b.emit(c.s, "expand", c.one(), {{"shape", get_int_list(c.j, "shape", c.where)}},
                          c.hint);
        }}},
      {"transpose",
       {nullptr,
        [](const LayerCall& c) {
          return c.b.emit(
              c.s, "transpose", c.one(),
              {{"dim0", get_int(c.j, "dim0", c.where)}, {"dim1", get_int(c.j, "dim1", c.where)}},
              c.hint);
        }}},
      {"permute",
       {nullptr,
        [](const LayerCall& c) {
          return c.b.emit(c.s, "permute", c.one(), {{"dims", get_int_list(c.j, "dims", c.where)}},
                          c.hint);
        }}},
      {"select",
       {nullptr,
        [](const LayerCall& c) {
          return c.b.emit(
              c.s, "select", c.one(),
              {{"dim", get_int(c.j, "dim", c.where)}, {"index", get_int(c.j, "index", c.where)}},
              c.hint);
        }}},
      {"slice",
       {nullptr,
        [](const LayerCall& c) {
          return c.b.emit(c.s, "slice", c.one(),
                          {{"dim", get_int(c.j, "dim", c.where)},
                           {"start", get_int(c.j, "start", c.where, 0)},
                           {"end", get_int(c.j, "end", c.where, INT64_MAX)},
                           {"step", get_int(c.j, "step", c.where, 1)}},
                          c.hint);
        }}},
      {"unsqueeze", {nullptr, with_dim}},
      {"squeeze", {nullptr, with_dim}},
      {"cat",
       {nullptr,
        [](const LayerCall& c) {
          if (c.in.empty()) throw JsonError(c.where, "cat needs at least one input");
          return c.b.emit(c.s, "cat", c.in, {{"dim", get_int(c.j, "dim", c.where, 1)}}, c.hint);
        }}},
      {"sum", {nullptr, reduction}},
      {"mean", {nullptr, reduction}},
      {"add", {nullptr, arithmetic}},
      {"sub", {nullptr, arithmetic}},
      {"mul", {nullptr, arithmetic}},
      {"div", {nullptr, arithmetic}},
      {"pow",
       {nullptr,
        [](const LayerCall& c) {
          return c.b.emit(c.s, "pow", c.one(),
                          {{"exponent", get_double(c.j, "exponent", c.where, 2.0)}}, c.hint);
        }}},
      {"matmul",
       {nullptr,
        [](const LayerCall& c) {
          return c.b.emit(c.s, "matmul", expect(c.in, 2, c.where, "a, b"), {}, c.hint);
        }}},
      {"maxpool2d", {"MaxPool2d", pooling}},
      {"avgpool2d", {"AvgPool2d", pooling}},
      {"adaptive_avgpool2d",
       {"AdaptiveAvgPool2d",
        [](const LayerCall& c) {
          return c.b.emit(c.s, "adaptive_avg_pool2d", c.one(),
                          {{"output_size", get_ints(c.j, "output", c.where, 2, 1)}}, c.hint);
        }}},
  };
  return rules;
}

Values Builder::param_layer(const std::string& type, const json& j, const std::string& where,
                            Scope& c, const Values& in) {
  return param_layer_rules().at(type).build(LayerCall{*this, type, j, where, c, in, ""});
}

Values Builder::simple_op(const std::string& type, const json& j, const std::string& where,
                          Scope& s, const Values& in, bool own_module) {
  const LayerCall call{*this, type, j, where, s, in, own_module ? "" : type};
  if (auto it = simple_layer_rules().find(type); it != simple_layer_rules().end())
    return it->second.build(call);
  // An op-table row with a native layer name (hardswish, softplus, ...): one input, no keys.
  return emit(s, OpTable::instance().find_native_layer(type)->type, call.one(), {}, call.hint);
}

}  // namespace ckpt::json_model
