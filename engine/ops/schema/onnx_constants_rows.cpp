// ONNX ops evaluated only at load time, on known values and the shapes of computed ones: they
// have no engine kernel, only a fold. Shape arithmetic in PyTorch's exports goes through them.
#include <algorithm>
#include <cmath>

#include "engine/ops/schema/onnx_support.hpp"
#include "engine/ops/schema/op_schema.hpp"

namespace ckpt {

namespace {

using namespace onnx_rules;

// Load-time values are shape arithmetic: anything this large is a malformed file.
constexpr double kMaxFoldedElements = 1e8;

bool fold_constant(OnnxNode& n) {
  if (Tensor t = n.attr_tensor("value"); t.defined()) return n.fold_to(t);
  const AttrValue* a = nullptr;
  if ((a = n.attr("value_float"))) return n.fold_to(Tensor::scalar(std::get<double>(*a)));
  if ((a = n.attr("value_int")))
    return n.fold_to(
        Tensor::from_vector(std::vector<std::int64_t>{std::get<std::int64_t>(*a)}, {}));
  if ((a = n.attr("value_floats"))) {
    const auto& v = std::get<std::vector<double>>(*a);
    return n.fold_to(Tensor::from_vector(std::vector<float>(v.begin(), v.end()),
                                         {static_cast<std::int64_t>(v.size())}));
  }
  if ((a = n.attr("value_ints"))) {
    const auto& v = std::get<Ints>(*a);
    return n.fold_to(Tensor::from_vector(v, {static_cast<std::int64_t>(v.size())}));
  }
  n.fail("has no value this importer reads (value, value_float(s), value_int(s))");
}

// The shape of any value, computed or known: known at load time.
bool fold_shape(OnnxNode& n) {
  const Shape s = n.input(0, "data").probe.shape();
  const auto rank = static_cast<std::int64_t>(s.size());
  std::int64_t start = n.attr_i("start", 0), end = n.attr_i("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<std::int64_t>(start, 0, rank);
  end = std::clamp<std::int64_t>(end, start, rank);
  const Ints dims(s.begin() + start, s.begin() + end);
  return n.fold_to(Tensor::from_vector(dims, {end - start}));
}

bool fold_constant_of_shape(OnnxNode& n) {
  if (!all_inputs_constant(n)) return false;
  const Shape s = n.constant_ints(0, "shape");
  double elements = 1;
  for (auto d : s) {
    if (d < 0) n.fail("a negative dimension in shape " + shape_str(s));
    elements *= static_cast<double>(d);
  }
  if (elements > kMaxFoldedElements)
    n.fail("shape " + shape_str(s) + " is too large to build when the model is loaded");
  Tensor value = Tensor::scalar(0.0);
  if (Tensor t = n.attr_tensor("value"); t.defined()) value = t;
  return n.fold_to(make(std::vector<double>(static_cast<std::size_t>(shape_numel(s)), value.item()),
                        s, value.dtype()));
}

bool fold_range(OnnxNode& n) {
  if (!all_inputs_constant(n)) return false;
  const Tensor& start = n.input(0, "start").probe;
  const double limit = n.constant_input(1, "limit").item(),
               delta = n.constant_input(2, "delta").item();
  if (delta == 0) n.fail("delta is 0");
  if (!std::isfinite(start.item()) || !std::isfinite(limit) || !std::isfinite(delta) ||
      (limit - start.item()) / delta > kMaxFoldedElements)
    n.fail("the range from " + std::to_string(start.item()) + " to " + std::to_string(limit) +
           " by " + std::to_string(delta) + " is too long to build when the model is loaded");
  std::vector<double> o;
  for (double v = start.item(); delta > 0 ? v < limit : v > limit; v += delta) o.push_back(v);
  return n.fold_to(make(o, {static_cast<std::int64_t>(o.size())}, start.dtype()));
}

// fmod=0 (integers): the result takes the divisor's sign, as Python's %; fmod=1: C's fmod.
bool fold_mod(OnnxNode& n) {
  if (!all_inputs_constant(n)) return false;
  const bool c_style = n.attr_i("fmod", 0) != 0;
  const Tensor a = n.constant_input(0, "A"), b = n.constant_input(1, "B");
  return n.fold_to(fold_binary(
      a, b,
      [&](double p, double q) {
        if (q == 0) n.fail("division by zero");
        const double r = std::fmod(p, q);
        return !c_style && r != 0 && ((r < 0) != (q < 0)) ? r + q : r;
      },
      "Mod"));
}

// And, Or, Xor on known values: nn.MultiheadAttention merges a boolean attn_mask with the
// key_padding_mask by logical_or; booleans as int64, broadcast as ONNX's binary ops.
template <class F>
bool fold_logical(OnnxNode& n, const char* op, F f) {
  if (!all_inputs_constant(n)) return false;
  const Tensor a = n.constant_input(0, "A"), b = n.constant_input(1, "B");
  return n.fold_to(fold_binary(
      make(a.to_vector(), a.shape(), DType::i64), b,
      [&](double p, double q) { return f(p != 0, q != 0) ? 1.0 : 0.0; }, op));
}

bool fold_and(OnnxNode& n) {
  return fold_logical(n, "And", [](bool p, bool q) { return p && q; });
}
bool fold_or(OnnxNode& n) {
  return fold_logical(n, "Or", [](bool p, bool q) { return p || q; });
}
bool fold_xor(OnnxNode& n) {
  return fold_logical(n, "Xor", [](bool p, bool q) { return p != q; });
}

// data with the slices named by indices' last dimension replaced by updates (reduction none):
// Swin's shifted-window mask, `mask[h0:h1, w0:w1] = region`, built on known values.
bool fold_scatter_nd(OnnxNode& n) {
  if (!all_inputs_constant(n)) return false;
  if (n.attr_s("reduction", "none") != "none") n.fail("only reduction 'none' is supported");
  const Tensor data = n.constant_input(0, "data"), idx = n.constant_input(1, "indices"),
               upd = n.constant_input(2, "updates");
  const Shape& ds = data.shape();
  const std::int64_t k = idx.dim() ? idx.shape().back() : 0;
  if (idx.dim() == 0 || k > data.dim())
    n.fail("indices " + idx.str() + " do not fit " + data.str());
  std::int64_t inner = 1;
  for (std::int64_t d = k; d < data.dim(); ++d) inner *= ds[static_cast<std::size_t>(d)];
  const std::int64_t rows = idx.numel() / std::max<std::int64_t>(k, 1);
  if (upd.numel() != rows * inner)
    n.fail("updates " + upd.str() + " do not match indices " + idx.str() + " into " + data.str());
  auto out = data.to_vector();
  const auto iv = idx.to_vector(), uv = upd.to_vector();
  for (std::int64_t r = 0; r < rows; ++r) {
    std::int64_t at = 0;
    for (std::int64_t d = 0; d < k; ++d) {
      const auto size = ds[static_cast<std::size_t>(d)];
      auto i = static_cast<std::int64_t>(iv[static_cast<std::size_t>(r * k + d)]);
      if (i < 0) i += size;
      if (i < 0 || i >= size)
        n.fail("index " + std::to_string(i) + " out of range for " + data.str());
      at = at * size + i;
    }
    std::copy_n(uv.begin() + r * inner, inner, out.begin() + at * inner);
  }
  return n.fold_to(make(out, ds, data.dtype()));
}

// Trilu on known values: nn.Transformer.generate_square_subsequent_mask's torch.triu of a -inf
// matrix (opset 14 on). Keeps j - i >= k (upper) or j - i <= k (lower) in the last two dims.
bool fold_trilu(OnnxNode& n) {
  if (!all_inputs_constant(n)) return false;
  const Tensor x = n.constant_input(0, "input");
  if (x.dim() < 2) n.fail("Trilu needs at least 2 dimensions, got " + x.str());
  const std::int64_t k =
      n.has_input(1) ? static_cast<std::int64_t>(n.constant_input(1, "k").item()) : 0;
  const bool upper = n.attr_i("upper", 1) != 0;
  const std::int64_t rows = x.shape()[static_cast<std::size_t>(x.dim() - 2)],
                     cols = x.shape().back();
  auto v = x.to_vector();
  for (std::size_t e = 0; e < v.size(); ++e) {
    const auto at = static_cast<std::int64_t>(e) % (rows * cols);
    const std::int64_t d = at % cols - at / cols;
    if (upper ? d < k : d > k) v[e] = 0;
  }
  return n.fold_to(make(v, x.shape(), x.dtype()));
}

}  // namespace

void register_onnx_constants_ops(OpTable& t) {
  t.add({.type = "onnx::Constant", .onnx = {{.op_type = "Constant", .fold = fold_constant}}});
  t.add({.type = "onnx::Shape", .onnx = {{.op_type = "Shape", .fold = fold_shape}}});
  t.add({.type = "onnx::ConstantOfShape",
         .onnx = {{.op_type = "ConstantOfShape", .fold = fold_constant_of_shape}}});
  t.add({.type = "onnx::Range", .onnx = {{.op_type = "Range", .fold = fold_range}}});
  t.add({.type = "onnx::Trilu", .onnx = {{.op_type = "Trilu", .since = 14, .fold = fold_trilu}}});
  t.add({.type = "onnx::And", .onnx = {{.op_type = "And", .since = 7, .fold = fold_and}}});
  t.add({.type = "onnx::Or", .onnx = {{.op_type = "Or", .since = 7, .fold = fold_or}}});
  t.add({.type = "onnx::Xor", .onnx = {{.op_type = "Xor", .since = 7, .fold = fold_xor}}});
  t.add({.type = "onnx::ScatterND",
         .onnx = {{.op_type = "ScatterND", .since = 11, .fold = fold_scatter_nd}}});
  t.add({.type = "onnx::Mod", .onnx = {{.op_type = "Mod", .since = 10, .fold = fold_mod}}});
}

}  // namespace ckpt
