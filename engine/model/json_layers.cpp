// The layer kinds of the native format that are one op: single ops and parameterised layers.
// The composite blocks are in json_blocks.cpp.
#include <climits>
#include <cmath>
#include <limits>
#include <set>

#include "engine/model/json_builder.hpp"
#include "engine/ops/schema/op_schema.hpp"
#include "engine/tensor/init.hpp"

namespace ckpt::json_model {

Values Builder::param_layer(const std::string& type, const json& j, const std::string& where,
                            Scope& c, const Values& in) {
  const Values x = expect(in, 1, where, "");
  if (type == "linear") {
    const std::int64_t nin = get_int(j, "in", where), nout = get_int(j, "out", where);
    if (nin <= 0 || nout <= 0) throw JsonError(where, "\"in\" and \"out\" must be positive");
    Values args{x[0], param(c, "weight", {nout, nin}, [&] {
                  return default_weight({nout, nin}, nin, gen_);
                })};
    if (get_bool(j, "bias", where, true))
      args.push_back(param(c, "bias", {nout}, [&] { return default_weight({nout}, nin, gen_); }));
    return emit(c, "linear", args, {}, "");
  }
  if (type == "conv2d") {
    const std::int64_t nin = get_int(j, "in", where), nout = get_int(j, "out", where);
    const auto kernel = get_ints(j, "kernel", where, 2, -1);
    if (kernel[0] <= 0 || kernel[1] <= 0) throw JsonError(where, "needs a positive \"kernel\"");
    const std::int64_t groups = get_int(j, "groups", where, 1);
    if (nin <= 0 || nout <= 0 || groups <= 0 || nin % groups || nout % groups)
      throw JsonError(where, "\"in\" and \"out\" must be positive multiples of \"groups\"");
    const std::int64_t fan_in = nin / groups * kernel[0] * kernel[1];
    const Shape wshape{nout, nin / groups, kernel[0], kernel[1]};
    Values args{x[0],
                param(c, "weight", wshape, [&] { return default_weight(wshape, fan_in, gen_); })};
    if (get_bool(j, "bias", where, true))
      args.push_back(
          param(c, "bias", {nout}, [&] { return default_weight({nout}, fan_in, gen_); }));
    Attributes a{{"stride", get_ints(j, "stride", where, 2, 1)},
                 {"padding", get_ints(j, "padding", where, 2, 0)},
                 {"dilation", get_ints(j, "dilation", where, 2, 1)},
                 {"groups", groups}};
    return emit(c, "conv2d", args, std::move(a), "");
  }
  if (type == "embedding") {
    // nn.Embedding(num, dim): weight N(0, 1), rows gathered by int64 indices of any shape.
    const std::int64_t num = get_int(j, "num", where), dim = get_int(j, "dim", where);
    if (num <= 0 || dim <= 0) throw JsonError(where, "\"num\" and \"dim\" must be positive");
    const Shape wshape{num, dim};
    return emit(
        c, "embedding",
        {param(c, "weight", wshape, [&] { return normal_tensor(wshape, 0.0, 1.0, gen_); }), x[0]},
        {}, "");
  }
  if (type == "batchnorm2d") {
    const std::int64_t n = get_int(j, "features", where);
    if (n <= 0) throw JsonError(where, "\"features\" must be positive");
    Values args{x[0],
                param(c, "weight", {n}, [&] { return Tensor::ones({n}); }),
                param(c, "bias", {n}, [&] { return Tensor::zeros({n}); }),
                param(
                    c, "running_mean", {n}, [&] { return Tensor::zeros({n}); }, false, true),
                param(
                    c, "running_var", {n}, [&] { return Tensor::ones({n}); }, false, true),
                param(
                    c, "num_batches_tracked", {}, [&] { return Tensor::zeros({}, DType::i64); },
                    false, true)};
    Attributes a{{"eps", get_double(j, "eps", where, 1e-5)},
                 {"momentum", get_double(j, "momentum", where, 0.1)},
                 {"training", std::int64_t{1}}};
    return emit(c, "batch_norm", args, std::move(a), "");
  }
  // layernorm
  const Shape shape = get_int_list(j, "shape", where);
  Values args{x[0], param(c, "weight", shape, [&] { return Tensor::ones(shape); }),
              param(c, "bias", shape, [&] { return Tensor::zeros(shape); })};
  Attributes a{{"normalized_shape", shape}, {"eps", get_double(j, "eps", where, 1e-5)}};
  return emit(c, "layer_norm", args, std::move(a), "");
}

Values Builder::simple_op(const std::string& type, const json& j, const std::string& where,
                          Scope& s, const Values& in, bool own_module) {
  const std::string hint = own_module ? "" : type;
  auto one = [&] { return expect(in, 1, where, ""); };
  static const std::set<std::string> unary{"relu", "gelu",     "sigmoid", "tanh", "sin",
                                           "cos",  "exp",      "log",     "sqrt", "neg",
                                           "erf",  "identity", "clone"};
  if (unary.count(type)) return emit(s, type, one(), {}, hint);
  if (const OpSchema* row = OpTable::instance().find_native_layer(type))
    return emit(s, row->type, one(), {}, hint);
  if (type == "relu6") return emit(s, "hardtanh", one(), {{"min", 0.0}, {"max", 6.0}}, hint);
  if (type == "hardtanh")
    return emit(
        s, "hardtanh", one(),
        {{"min", get_double(j, "min", where, -1.0)}, {"max", get_double(j, "max", where, 1.0)}},
        hint);
  if (type == "clamp") {
    Attributes a;
    if (j.contains("min")) a["min"] = get_double(j, "min", where, 0);
    if (j.contains("max")) a["max"] = get_double(j, "max", where, 0);
    if (a.empty()) throw JsonError(where, "clamp needs \"min\" or \"max\"");
    return emit(s, "clamp", one(), std::move(a), hint);
  }
  if (type == "softmax" || type == "log_softmax")
    return emit(s, type, one(), {{"dim", get_int(j, "dim", where)}}, hint);
  if (type == "dropout") {
    const double p = get_double(j, "p", where, 0.5);
    if (p < 0 || p > 1) throw JsonError(where, "dropout \"p\" must be in [0, 1]");
    return emit(s, "dropout", one(), {{"p", p}, {"training", std::int64_t{1}}}, hint);
  }
  if (type == "flatten")
    return emit(s, "flatten", one(),
                {{"start_dim", get_int(j, "start_dim", where, 1)},
                 {"end_dim", get_int(j, "end_dim", where, -1)}},
                hint);
  if (type == "reshape" || type == "view")
    return emit(s, type, one(), {{"shape", get_int_list(j, "shape", where)}}, hint);
  if (type == "transpose")
    return emit(s, "transpose", one(),
                {{"dim0", get_int(j, "dim0", where)}, {"dim1", get_int(j, "dim1", where)}}, hint);
  if (type == "permute")
    return emit(s, "permute", one(), {{"dims", get_int_list(j, "dims", where)}}, hint);
  if (type == "select")
    return emit(s, "select", one(),
                {{"dim", get_int(j, "dim", where)}, {"index", get_int(j, "index", where)}}, hint);
  if (type == "slice")
    return emit(s, "slice", one(),
                {{"dim", get_int(j, "dim", where)},
                 {"start", get_int(j, "start", where, 0)},
                 {"end", get_int(j, "end", where, INT64_MAX)},
                 {"step", get_int(j, "step", where, 1)}},
                hint);
  if (type == "unsqueeze" || type == "squeeze")
    return emit(s, type, one(), {{"dim", get_int(j, "dim", where)}}, hint);
  if (type == "cat") {
    if (in.empty()) throw JsonError(where, "cat needs at least one input");
    return emit(s, "cat", in, {{"dim", get_int(j, "dim", where, 1)}}, hint);
  }
  if (type == "sum" || type == "mean") {
    if (!j.contains("dims")) return emit(s, type, one(), {}, hint);
    return emit(s, type + "_dims", one(),
                {{"dims", get_int_list(j, "dims", where)},
                 {"keepdim", std::int64_t{get_bool(j, "keepdim", where, false) ? 1 : 0}}},
                hint);
  }
  if (type == "add" || type == "sub" || type == "mul" || type == "div") {
    if (in.size() == 2) return emit(s, type, in, {}, hint);
    const Values x = one();
    if (j.contains("param"))
      return emit(s, type, {x[0], lookup_param(s, get_string(j, "param", where, ""), where)}, {},
                  hint);
    if (j.contains("other"))
      return emit(s, type, {x[0], lookup(s, get_string(j, "other", where, ""), where)}, {}, hint);
    if (j.contains("scalar"))
      return emit(s, type + "_scalar", x, {{"value", get_double(j, "scalar", where, 0)}}, hint);
    throw JsonError(where, type +
                               " takes two inputs, or one input and a \"param\", an "
                               "\"other\" value or a \"scalar\"");
  }
  if (type == "pow")
    return emit(s, "pow", one(), {{"exponent", get_double(j, "exponent", where, 2.0)}}, hint);
  if (type == "matmul") return emit(s, "matmul", expect(in, 2, where, "a, b"), {}, hint);
  if (type == "maxpool2d" || type == "avgpool2d") {
    const auto kernel = get_ints(j, "kernel", where, 2, -1);
    if (kernel[0] <= 0 || kernel[1] <= 0) throw JsonError(where, "needs a positive \"kernel\"");
    Attributes a{{"kernel", kernel},
                 {"stride", get_ints(j, "stride", where, 2, -1)},
                 {"padding", get_ints(j, "padding", where, 2, 0)},
                 {"ceil_mode", std::int64_t{get_bool(j, "ceil_mode", where, false) ? 1 : 0}}};
    if (std::get<std::vector<std::int64_t>>(a["stride"])[0] < 0) a["stride"] = kernel;
    if (type == "maxpool2d") {
      a["dilation"] = get_ints(j, "dilation", where, 2, 1);
      return emit(s, "max_pool2d", one(), std::move(a), hint);
    }
    a["count_include_pad"] = std::int64_t{get_bool(j, "count_include_pad", where, true) ? 1 : 0};
    return emit(s, "avg_pool2d", one(), std::move(a), hint);
  }
  // adaptive_avgpool2d
  return emit(s, "adaptive_avg_pool2d", one(),
              {{"output_size", get_ints(j, "output", where, 2, 1)}}, hint);
}

}  // namespace ckpt::json_model
