#include "engine/ops/shape_ops_onnx.hpp"

#include <algorithm>

#include "engine/ops/schema/onnx_support.hpp"
#include "engine/ops/shape_ops.hpp"
#include "engine/ops/shape_ops_onnx_detail.hpp"

// The ONNX rules of the shape ops that keep every element: Identity, Cast, Flatten, Reshape,
// Transpose, Squeeze and Unsqueeze. Those that select, join or repeat elements are in
// shape_ops_onnx_indexing.cpp.

namespace ckpt::shape_onnx {

using namespace onnx_rules;

namespace {

// ONNX TensorProto element types (onnx.proto's DataType), without including the proto here.
enum OnnxElementType : std::int64_t { kFloat = 1, kInt32 = 6, kInt64 = 7, kBool = 9, kDouble = 11 };

}  // namespace

void translate_identity(OnnxNode& n) {
  n.alias(n.y(), n.input(0, "first"));
}

bool fold_identity(OnnxNode& n) {
  return foldable(n) && n.fold_to(first(n));
}

// A Cast of a computed value: the same dtype is the value itself; another one is the engine's
// cast op (a bool mask to float and back, float32 to float64).
void translate_cast(OnnxNode& n) {
  const auto to = n.attr_i("to", kFloat);
  DType target;
  switch (to) {
    case kFloat:
      target = DType::f32;
      break;
    case kDouble:
      target = DType::f64;
      break;
    case kInt64:
    case kInt32:  // held in int64, as the load-time fold holds it (a sequence_lens input)
      target = DType::i64;
      break;
    case kBool:
      target = DType::b8;
      break;
    default:
      n.fail("a Cast of a value computed at run time to element type " + std::to_string(to) +
             " is not supported (FLOAT, DOUBLE, INT32, INT64, BOOL)");
  }
  if (first(n).dtype() == target) return n.alias(n.y(), n.input(0, "first"));
  n.define(n.y(),
           n.emit_op("cast", {n.operand(0)}, {{"to", std::string(dtype_name(target))}}, n.y()));
}

bool fold_cast(OnnxNode& n) {
  if (!foldable(n)) return false;
  const auto to = n.attr_i("to", kFloat);
  DType d = DType::f32;
  switch (to) {
    case kFloat:
      break;
    case kDouble:
      d = DType::f64;
      break;
    case kInt64:
    case kInt32:
    case kBool:
      d = DType::i64;
      break;
    default:
      n.fail("casts to element type " + std::to_string(to) + ", which is not supported");
  }
  auto v = first(n).to_vector();
  if (to == kBool)
    for (auto& e : v) e = e != 0 ? 1 : 0;
  return n.fold_to(make(v, first(n).shape(), d));
}

// CastLike (opset 15): a Cast to the second input's element type. The torch.export-based
// exporter gives a Python number the dtype of the tensor it meets this way (folded here, as
// the number is a constant), and writes type_as as a CastLike of a computed value.
DType cast_like_target(OnnxNode& n) {
  const DType t = n.input(1, "target_type").probe.dtype();
  if (t != DType::f32 && t != DType::f64 && t != DType::i64 && t != DType::b8)
    n.fail(std::string("CastLike to ") + dtype_name(t) +
           " is not supported (float32, float64, int64, bool)");
  return t;
}

void translate_cast_like(OnnxNode& n) {
  const DType target = cast_like_target(n);
  if (first(n).dtype() == target) return n.alias(n.y(), n.input(0, "input"));
  n.define(n.y(),
           n.emit_op("cast", {n.operand(0)}, {{"to", std::string(dtype_name(target))}}, n.y()));
}

bool fold_cast_like(OnnxNode& n) {
  if (!n.input(0, "input").constant) return false;
  const DType target = cast_like_target(n);
  auto v = first(n).to_vector();
  if (target == DType::b8)
    for (auto& e : v) e = e != 0 ? 1 : 0;
  // Constants hold integers and booleans as int64, as fold_cast does.
  return n.fold_to(make(v, first(n).shape(), target == DType::b8 ? DType::i64 : target));
}

// axis is in [-rank, rank]; a negative one counts from the end.
void translate_flatten(OnnxNode& n) {
  const std::int64_t rank = n.rank();
  std::int64_t axis = n.attr_i("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank)
    n.fail("axis " + std::to_string(n.attr_i("axis", 1)) + " is out of range for rank " +
           std::to_string(rank));
  const OnnxValue& x = n.input(0, "first");
  if (axis == 1 && rank >= 2)
    return n.define(
        n.y(), n.emit_op("flatten", {x.graph},
                         {{"start_dim", std::int64_t{1}}, {"end_dim", std::int64_t{-1}}}, n.y()));
  std::int64_t outer = 1;
  for (std::int64_t d = 0; d < axis; ++d) outer *= x.probe.shape()[static_cast<std::size_t>(d)];
  n.define(n.y(), n.emit_op("reshape", {x.graph},
                            {{"shape", Ints{outer, outer ? x.probe.numel() / outer : 0}}}, n.y()));
}

void translate_reshape(OnnxNode& n) {
  const Ints shape = n.constant_ints(1, "shape");
  if (n.attr_i("allowzero", 0) && std::count(shape.begin(), shape.end(), 0))
    n.fail("allowzero=1 with a 0 in the shape is not supported");
  n.define(n.y(), n.emit_op("reshape", {n.input(0, "first").graph}, {{"shape", shape}}, n.y()));
}

namespace {
bool fold_to_shape(OnnxNode& n, const Tensor& x, const Shape& s) {
  if (shape_numel(s) != x.numel()) n.fail("cannot reshape " + x.str() + " to " + shape_str(s));
  return n.fold_to(make(x.to_vector(), s, x.dtype()));
}
}  // namespace

bool fold_reshape(OnnxNode& n) {
  if (!foldable(n)) return false;
  const Tensor& x = first(n);
  Shape s = n.constant_ints(1, "shape");
  std::int64_t known = 1, infer = -1;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == 0 && i < x.shape().size()) s[i] = x.shape()[i];
    if (s[i] == -1)
      infer = static_cast<std::int64_t>(i);
    else
      known *= s[i];
  }
  if (infer >= 0) s[static_cast<std::size_t>(infer)] = x.numel() / std::max<std::int64_t>(known, 1);
  return fold_to_shape(n, x, s);
}

bool fold_flatten(OnnxNode& n) {
  if (!foldable(n)) return false;
  const Tensor& x = first(n);
  const auto rank = static_cast<std::int64_t>(x.dim());
  const std::int64_t axis =
      n.attr_i("axis", 1) < 0 ? n.attr_i("axis", 1) + rank : n.attr_i("axis", 1);
  std::int64_t outer = 1;
  for (std::int64_t d = 0; d < axis; ++d) outer *= x.shape()[static_cast<std::size_t>(d)];
  return fold_to_shape(n, x, {outer, x.numel() / std::max<std::int64_t>(outer, 1)});
}

namespace {
Ints permutation(const OnnxNode& n) {
  Ints perm = n.attr_ints("perm");
  if (perm.empty())
    for (std::int64_t d = n.rank() - 1; d >= 0; --d) perm.push_back(d);
  return perm;
}
}  // namespace

void translate_transpose(OnnxNode& n) {
  n.define(n.y(),
           n.emit_op("permute", {n.input(0, "first").graph}, {{"dims", permutation(n)}}, n.y()));
}

bool fold_transpose(OnnxNode& n) {
  if (!foldable(n)) return false;
  const Tensor& x = first(n);
  const auto rank = static_cast<std::int64_t>(x.dim());
  const Ints perm = permutation(n);
  if (static_cast<std::int64_t>(perm.size()) != rank)
    n.fail("perm " + shape_str(perm) + " does not match rank " + std::to_string(rank));
  Shape s;
  for (auto p : perm)
    s.push_back(x.shape()[static_cast<std::size_t>(wrap_axis(p, rank, "Transpose"))]);
  const auto v = x.to_vector();
  std::vector<double> o(v.size());
  const Strides st = contiguous_strides(x.shape());
  for (std::int64_t k = 0; k < static_cast<std::int64_t>(o.size()); ++k) {
    std::int64_t rem = k, src = 0;
    for (std::int64_t d = rank - 1; d >= 0; --d) {
      const std::int64_t c = rem % s[static_cast<std::size_t>(d)];
      rem /= s[static_cast<std::size_t>(d)];
      src += c * st[static_cast<std::size_t>(perm[static_cast<std::size_t>(d)])];
    }
    o[static_cast<std::size_t>(k)] = v[static_cast<std::size_t>(src)];
  }
  return n.fold_to(make(o, s, x.dtype()));
}

namespace {
void translate_squeezing(OnnxNode& n, bool unsqueeze) {
  Ints axes = axes_input_or_attr(n, 1, 13);
  const std::int64_t rank = n.rank();
  if (unsqueeze) {
    const std::int64_t out_rank = rank + static_cast<std::int64_t>(axes.size());
    for (auto& a : axes) a = wrap_dim(a, out_rank, "Unsqueeze");
    std::sort(axes.begin(), axes.end());
  } else {
    if (axes.empty())
      for (std::int64_t d = 0; d < rank; ++d)
        if (first(n).shape()[static_cast<std::size_t>(d)] == 1) axes.push_back(d);
    for (auto& a : axes) a = wrap_dim(a, rank, "Squeeze");
    std::sort(axes.rbegin(), axes.rend());
  }
  std::vector<Attributes> steps;
  for (auto a : axes) steps.push_back({{"dim", a}});
  emit_chain(n, unsqueeze ? "unsqueeze" : "squeeze", steps);
}

bool fold_squeezing(OnnxNode& n, bool unsqueeze) {
  if (!foldable(n)) return false;
  const Tensor& x = first(n);
  Ints axes = axes_input_or_attr(n, 1, 13);
  Shape s = x.shape();
  if (unsqueeze) {
    const auto out_rank = static_cast<std::int64_t>(s.size() + axes.size());
    for (auto& a : axes) a = wrap_axis(a, out_rank, "Unsqueeze");
    std::sort(axes.begin(), axes.end());
    for (auto a : axes) s.insert(s.begin() + a, 1);
  } else if (axes.empty()) {
    s.erase(std::remove(s.begin(), s.end(), 1), s.end());
  } else {
    for (auto& a : axes) a = wrap_axis(a, x.dim(), "Squeeze");
    std::sort(axes.rbegin(), axes.rend());
    for (auto a : axes) s.erase(s.begin() + a);
  }
  return n.fold_to(make(x.to_vector(), s, x.dtype()));
}

}  // namespace

void translate_squeeze(OnnxNode& n) {
  translate_squeezing(n, false);
}
bool fold_squeeze(OnnxNode& n) {
  return fold_squeezing(n, false);
}
void translate_unsqueeze(OnnxNode& n) {
  translate_squeezing(n, true);
}
bool fold_unsqueeze(OnnxNode& n) {
  return fold_squeezing(n, true);
}

}  // namespace ckpt::shape_onnx
