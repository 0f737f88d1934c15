#include "engine/model/op_registry.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <stdexcept>
#include <unordered_map>

#include "engine/ops/ops.hpp"

namespace ckpt {

namespace {

[[noreturn]] void attr_error(const OpNode& n, const std::string& key, const std::string& what) {
  throw std::invalid_argument("node '" + n.name + "' (" + n.op_type + "): attribute '" + key +
                              "' " + what);
}

const AttrValue* find_attr(const OpNode& n, const std::string& key) {
  auto it = n.attrs.find(key);
  return it == n.attrs.end() ? nullptr : &it->second;
}

const Tensor& in(const TensorList& xs, std::size_t i) {
  static const Tensor undefined;
  return i < xs.size() ? xs[i] : undefined;
}

// Kernels, one per op kind. Each is a direct engine op call: all the memory behaviour (what is
// saved, what is a view) is the engine op's.
#define UNARY(fn) [](const OpNode&, const TensorList& x) -> TensorList { return {fn(x[0])}; }
#define BINARY(fn) [](const OpNode&, const TensorList& x) -> TensorList { return {fn(x[0], x[1])}; }
#define SCALAR(fn)                                         \
  [](const OpNode& n, const TensorList& x) -> TensorList { \
    return {fn(x[0], attr_double(n, "value"))};            \
  }

TensorList run_linear(const OpNode&, const TensorList& x) {
  return {linear(x[0], x[1], in(x, 2))};
}
TensorList run_pow(const OpNode& n, const TensorList& x) {
  return {pow(x[0], attr_double(n, "exponent"))};
}
TensorList run_sum_dims(const OpNode& n, const TensorList& x) {
  return {sum(x[0], attr_ints(n, "dims"), attr_int(n, "keepdim", 0) != 0)};
}
TensorList run_mean_dims(const OpNode& n, const TensorList& x) {
  return {mean(x[0], attr_ints(n, "dims"), attr_int(n, "keepdim", 0) != 0)};
}
// A 0 in a target shape keeps the input's size there (ONNX Reshape's rule), so that a graph
// can reshape [B, S, D] to [B, S, heads, D / heads] whatever the batch.
Shape target_shape(const OpNode& n, const Tensor& x) {
  Shape s = attr_ints(n, "shape");
  for (std::size_t i = 0; i < s.size(); ++i)
    if (s[i] == 0 && i < x.shape().size()) s[i] = x.shape()[i];
  return s;
}
TensorList run_view(const OpNode& n, const TensorList& x) {
  return {view(x[0], target_shape(n, x[0]))};
}
TensorList run_reshape(const OpNode& n, const TensorList& x) {
  return {reshape(x[0], target_shape(n, x[0]))};
}
TensorList run_flatten(const OpNode& n, const TensorList& x) {
  return {flatten(x[0], attr_int(n, "start_dim", 1), attr_int(n, "end_dim", -1))};
}
TensorList run_transpose(const OpNode& n, const TensorList& x) {
  return {transpose(x[0], attr_int(n, "dim0"), attr_int(n, "dim1"))};
}
TensorList run_permute(const OpNode& n, const TensorList& x) {
  return {permute(x[0], attr_ints(n, "dims"))};
}
TensorList run_slice(const OpNode& n, const TensorList& x) {
  return {slice(x[0], attr_int(n, "dim"), attr_int(n, "start", 0), attr_int(n, "end", INT64_MAX),
                attr_int(n, "step", 1))};
}
TensorList run_select(const OpNode& n, const TensorList& x) {
  const std::int64_t dim = wrap_dim(attr_int(n, "dim"), x[0].dim(), "select");
  std::int64_t index = attr_int(n, "index");
  const std::int64_t size = x[0].size(dim);
  if (index < -size || index >= size)
    throw std::invalid_argument("select: index " + std::to_string(index) +
                                " out of range for dimension " + std::to_string(dim) + " of size " +
                                std::to_string(size));
  if (index < 0) index += size;
  return {squeeze(slice(x[0], dim, index, index + 1, 1), dim)};
}
TensorList run_unsqueeze(const OpNode& n, const TensorList& x) {
  return {unsqueeze(x[0], attr_int(n, "dim"))};
}
TensorList run_squeeze(const OpNode& n, const TensorList& x) {
  return {squeeze(x[0], attr_int(n, "dim"))};
}
TensorList run_expand(const OpNode& n, const TensorList& x) {
  return {expand(x[0], attr_ints(n, "shape"))};
}
TensorList run_cat(const OpNode& n, const TensorList& x) {
  return {cat(x, attr_int(n, "dim", 0))};
}
TensorList run_identity(const OpNode&, const TensorList& x) {
  return {x[0]};
}

std::array<std::int64_t, 2> pair_attr(const OpNode& n, const std::string& key,
                                      std::array<std::int64_t, 2> fallback) {
  if (!has_attr(n, key)) return fallback;
  const auto v = attr_ints(n, key);
  if (v.size() == 1) return {v[0], v[0]};
  if (v.size() != 2) attr_error(n, key, "must have 1 or 2 values");
  return {v[0], v[1]};
}

TensorList run_conv2d(const OpNode& n, const TensorList& x) {
  return {conv2d(x[0], x[1], in(x, 2), pair_attr(n, "stride", {1, 1}),
                 pair_attr(n, "padding", {0, 0}), pair_attr(n, "dilation", {1, 1}),
                 attr_int(n, "groups", 1))};
}
TensorList run_batch_norm(const OpNode& n, const TensorList& x) {
  return {batch_norm(x[0], in(x, 1), in(x, 2), in(x, 3), in(x, 4), attr_int(n, "training", 1) != 0,
                     attr_double(n, "momentum", 0.1), attr_double(n, "eps", 1e-5), in(x, 5))};
}
TensorList run_layer_norm(const OpNode& n, const TensorList& x) {
  return {layer_norm(x[0], attr_ints(n, "normalized_shape"), in(x, 1), in(x, 2),
                     attr_double(n, "eps", 1e-5))};
}
TensorList run_max_pool2d(const OpNode& n, const TensorList& x) {
  const auto kernel = pair_attr(n, "kernel", {0, 0});
  return {max_pool2d(x[0], kernel, pair_attr(n, "stride", kernel), pair_attr(n, "padding", {0, 0}),
                     pair_attr(n, "dilation", {1, 1}), attr_int(n, "ceil_mode", 0) != 0)};
}
TensorList run_avg_pool2d(const OpNode& n, const TensorList& x) {
  const auto kernel = pair_attr(n, "kernel", {0, 0});
  return {avg_pool2d(x[0], kernel, pair_attr(n, "stride", kernel), pair_attr(n, "padding", {0, 0}),
                     attr_int(n, "ceil_mode", 0) != 0, attr_int(n, "count_include_pad", 1) != 0)};
}
TensorList run_adaptive_avg_pool2d(const OpNode& n, const TensorList& x) {
  return {adaptive_avg_pool2d(x[0], pair_attr(n, "output_size", {1, 1}))};
}
TensorList run_softmax(const OpNode& n, const TensorList& x) {
  return {softmax(x[0], attr_int(n, "dim"))};
}
TensorList run_log_softmax(const OpNode& n, const TensorList& x) {
  return {log_softmax(x[0], attr_int(n, "dim"))};
}
TensorList run_cross_entropy(const OpNode& n, const TensorList& x) {
  return {cross_entropy(x[0], x[1], attr_string(n, "reduction", "mean"),
                        attr_int(n, "ignore_index", -100))};
}
TensorList run_nll_loss(const OpNode& n, const TensorList& x) {
  return {
      nll_loss(x[0], x[1], attr_string(n, "reduction", "mean"), attr_int(n, "ignore_index", -100))};
}
TensorList run_mse_loss(const OpNode& n, const TensorList& x) {
  return {mse_loss(x[0], x[1], attr_string(n, "reduction", "mean"))};
}
TensorList run_dropout(const OpNode& n, const TensorList& x) {
  // The generator is the run's (Generator::current()), so a checkpoint can stash its state.
  return {dropout(x[0], attr_double(n, "p", 0.5), attr_int(n, "training", 1) != 0)};
}
TensorList run_embedding(const OpNode&, const TensorList& x) {
  return {embedding(x[0], x[1])};
}
TensorList run_clamp(const OpNode& n, const TensorList& x) {
  std::optional<double> lo, hi;
  if (has_attr(n, "min")) lo = attr_double(n, "min");
  if (has_attr(n, "max")) hi = attr_double(n, "max");
  return {clamp(x[0], lo, hi)};
}
TensorList run_hardtanh(const OpNode& n, const TensorList& x) {
  return {hardtanh(x[0], attr_double(n, "min", -1.0), attr_double(n, "max", 1.0))};
}
TensorList run_relu_inplace(const OpNode&, const TensorList& x) {
  Tensor t = x[0];
  relu_(t);
  return {t};
}
TensorList run_add_inplace(const OpNode&, const TensorList& x) {
  Tensor t = x[0];
  add_(t, x[1]);
  return {t};
}

const std::unordered_map<std::string, OpKind>& registry() {
  static const std::unordered_map<std::string, OpKind> kinds = [] {
    std::unordered_map<std::string, OpKind> k;
    auto add_kind = [&](const char* type, int lo, int hi, OpKernel run) {
      k.emplace(type, OpKind{type, lo, hi, run});
    };
    add_kind("linear", 2, 3, run_linear);
    add_kind("matmul", 2, 2, BINARY(matmul));
    add_kind("add", 2, 2, BINARY(add));
    add_kind("sub", 2, 2, BINARY(sub));
    add_kind("mul", 2, 2, BINARY(mul));
    add_kind("div", 2, 2, BINARY(div));
    add_kind("add_scalar", 1, 1, SCALAR(add));
    add_kind("sub_scalar", 1, 1, SCALAR(sub));
    add_kind("mul_scalar", 1, 1, SCALAR(mul));
    add_kind("div_scalar", 1, 1, SCALAR(div));
    add_kind("neg", 1, 1, UNARY(neg));
    add_kind("pow", 1, 1, run_pow);
    add_kind("exp", 1, 1, UNARY(exp));
    add_kind("log", 1, 1, UNARY(log));
    add_kind("sqrt", 1, 1, UNARY(sqrt));
    add_kind("relu", 1, 1, UNARY(relu));
    add_kind("gelu", 1, 1, UNARY(gelu));
    add_kind("tanh", 1, 1, UNARY(tanh));
    add_kind("sigmoid", 1, 1, UNARY(sigmoid));
    add_kind("sin", 1, 1, UNARY(sin));
    add_kind("cos", 1, 1, UNARY(cos));
    add_kind("sum", 1, 1,
             [](const OpNode&, const TensorList& x) -> TensorList { return {sum(x[0])}; });
    add_kind("mean", 1, 1,
             [](const OpNode&, const TensorList& x) -> TensorList { return {mean(x[0])}; });
    add_kind("sum_dims", 1, 1, run_sum_dims);
    add_kind("mean_dims", 1, 1, run_mean_dims);
    add_kind("view", 1, 1, run_view);
    add_kind("reshape", 1, 1, run_reshape);
    add_kind("flatten", 1, 1, run_flatten);
    add_kind("transpose", 1, 1, run_transpose);
    add_kind("permute", 1, 1, run_permute);
    add_kind("slice", 1, 1, run_slice);
    add_kind("select", 1, 1, run_select);
    add_kind("unsqueeze", 1, 1, run_unsqueeze);
    add_kind("squeeze", 1, 1, run_squeeze);
    add_kind("expand", 1, 1, run_expand);
    add_kind("clone", 1, 1, UNARY(clone));
    add_kind("contiguous", 1, 1, UNARY(contiguous));
    add_kind("cat", 1, -1, run_cat);
    add_kind("identity", 1, 1, run_identity);
    add_kind("conv2d", 2, 3, run_conv2d);
    add_kind("batch_norm", 1, 6, run_batch_norm);
    add_kind("layer_norm", 1, 3, run_layer_norm);
    add_kind("max_pool2d", 1, 1, run_max_pool2d);
    add_kind("avg_pool2d", 1, 1, run_avg_pool2d);
    add_kind("adaptive_avg_pool2d", 1, 1, run_adaptive_avg_pool2d);
    add_kind("softmax", 1, 1, run_softmax);
    add_kind("log_softmax", 1, 1, run_log_softmax);
    add_kind("cross_entropy", 2, 2, run_cross_entropy);
    add_kind("nll_loss", 2, 2, run_nll_loss);
    add_kind("mse_loss", 2, 2, run_mse_loss);
    add_kind("dropout", 1, 1, run_dropout);
    add_kind("embedding", 2, 2, run_embedding);
    add_kind("clamp", 1, 1, run_clamp);
    add_kind("hardtanh", 1, 1, run_hardtanh);
    add_kind("erf", 1, 1, UNARY(erf));
    add_kind("relu_", 1, 1, run_relu_inplace);
    add_kind("add_", 2, 2, run_add_inplace);
    return k;
  }();
  return kinds;
}

#undef UNARY
#undef BINARY
#undef SCALAR

}  // namespace

const OpKind* find_op_kind(const std::string& type) {
  const auto& r = registry();
  auto it = r.find(type);
  return it == r.end() ? nullptr : &it->second;
}

std::vector<std::string> op_kinds() {
  std::vector<std::string> out;
  for (const auto& [name, kind] : registry()) out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

std::string describe_tensors(const TensorList& ts) {
  std::string s;
  for (std::size_t i = 0; i < ts.size(); ++i) {
    if (i) s += ", ";
    s += ts[i].defined() ? ts[i].str() : "(none)";
  }
  return s;
}

TensorList run_op_node(const OpKind& kind, const OpNode& node, const TensorList& inputs) {
  const auto n = static_cast<int>(inputs.size());
  if (n < kind.min_inputs || (kind.max_inputs >= 0 && n > kind.max_inputs))
    throw std::invalid_argument(
        "node '" + node.name + "' (" + node.op_type + "): takes " +
        std::to_string(kind.min_inputs) +
        (kind.max_inputs == kind.min_inputs
             ? ""
             : " to " + (kind.max_inputs < 0 ? std::string("any number of")
                                             : std::to_string(kind.max_inputs))) +
        " inputs, got " + std::to_string(n));
  try {
    return kind.run(node, inputs);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("node '" + node.name + "' (" + node.op_type + " on " +
                                describe_tensors(inputs) + "): " + e.what());
  } catch (const std::out_of_range& e) {
    throw std::out_of_range("node '" + node.name + "' (" + node.op_type + " on " +
                            describe_tensors(inputs) + "): " + e.what());
  }
}

bool has_attr(const OpNode& n, const std::string& key) {
  return find_attr(n, key) != nullptr;
}

std::int64_t attr_int(const OpNode& n, const std::string& key) {
  const AttrValue* v = find_attr(n, key);
  if (!v) attr_error(n, key, "is missing");
  if (auto p = std::get_if<std::int64_t>(v)) return *p;
  attr_error(n, key, "must be an integer");
}

std::int64_t attr_int(const OpNode& n, const std::string& key, std::int64_t fallback) {
  return find_attr(n, key) ? attr_int(n, key) : fallback;
}

double attr_double(const OpNode& n, const std::string& key) {
  const AttrValue* v = find_attr(n, key);
  if (!v) attr_error(n, key, "is missing");
  if (auto p = std::get_if<double>(v)) return *p;
  if (auto p = std::get_if<std::int64_t>(v)) return static_cast<double>(*p);
  attr_error(n, key, "must be a number");
}

double attr_double(const OpNode& n, const std::string& key, double fallback) {
  return find_attr(n, key) ? attr_double(n, key) : fallback;
}

std::vector<std::int64_t> attr_ints(const OpNode& n, const std::string& key) {
  const AttrValue* v = find_attr(n, key);
  if (!v) attr_error(n, key, "is missing");
  if (auto p = std::get_if<std::vector<std::int64_t>>(v)) return *p;
  if (auto p = std::get_if<std::int64_t>(v)) return {*p};
  attr_error(n, key, "must be a list of integers");
}

std::vector<std::int64_t> attr_ints(const OpNode& n, const std::string& key,
                                    const std::vector<std::int64_t>& fallback) {
  return find_attr(n, key) ? attr_ints(n, key) : fallback;
}

std::string attr_string(const OpNode& n, const std::string& key, const std::string& fallback) {
  const AttrValue* v = find_attr(n, key);
  if (!v) return fallback;
  if (auto p = std::get_if<std::string>(v)) return *p;
  attr_error(n, key, "must be a string");
}

}  // namespace ckpt
