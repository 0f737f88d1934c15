#include <algorithm>
#include <set>
#include <string>

#include "engine/ops/shape_ops.hpp"
#include "engine/ops/shape_ops_onnx.hpp"
#include "engine/ops/shape_ops_onnx_detail.hpp"

// The ONNX rules of the shape ops that select, join or repeat elements: Concat, Gather, Expand,
// Tile and Slice.

namespace ckpt::shape_onnx {

using namespace onnx_rules;

void translate_concat(OnnxNode& n) {
  std::vector<std::string> args;
  for (std::size_t i = 0; i < n.input_count(); ++i) args.push_back(n.operand(i));
  n.define(n.y(), n.emit_op("cat", args, {{"dim", n.attr_i("axis", 0)}}, n.y()));
}

bool fold_concat(OnnxNode& n) {
  if (!foldable(n)) return false;
  // torch.cat's legacy rule, as the cat op has it: 1-D empty inputs take no part.
  std::vector<const Tensor*> parts;
  for (std::size_t i = 0; i < n.input_count(); ++i) {
    const Tensor& p = n.input(i, "concatenated").probe;
    if (!skipped_by_cat(p)) parts.push_back(&p);
  }
  if (parts.empty()) return n.fold_to(first(n));
  const Tensor& x = *parts.front();
  const auto rank = static_cast<std::int64_t>(x.dim());
  const std::int64_t axis = wrap_axis(n.attr_i("axis", 0), rank, "Concat");
  Shape s = x.shape();
  s[static_cast<std::size_t>(axis)] = 0;
  for (const Tensor* p : parts) {
    if (p->dim() != rank)
      n.fail("inputs of different ranks cannot be concatenated (only 1-D empty ones may differ)");
    s[static_cast<std::size_t>(axis)] += p->shape()[static_cast<std::size_t>(axis)];
  }
  std::int64_t outer = 1, inner = 1;
  for (std::int64_t d = 0; d < axis; ++d) outer *= s[static_cast<std::size_t>(d)];
  for (std::int64_t d = axis + 1; d < rank; ++d) inner *= s[static_cast<std::size_t>(d)];
  std::vector<double> o;
  for (std::int64_t r = 0; r < outer; ++r)
    for (const Tensor* p : parts) {
      const auto vals = p->to_vector();
      const std::int64_t chunk = p->shape()[static_cast<std::size_t>(axis)] * inner;
      o.insert(o.end(), vals.begin() + r * chunk, vals.begin() + (r + 1) * chunk);
    }
  return n.fold_to(make(o, s, x.dtype()));
}

namespace {
// The model input whose values reach `graph` unchanged (through reshapes and selections), or "".
std::string input_behind(const OnnxNode& n, std::string graph) {
  static const std::set<std::string> keeps_values{
      "reshape", "view",  "flatten",   "squeeze", "unsqueeze", "identity", "contiguous",
      "clone",   "slice", "transpose", "permute", "select",    "expand"};
  for (int hops = 0; hops < 64; ++hops) {
    if (n.is_model_input(graph)) return graph;
    const OnnxNode::Producer* p = n.producer(graph);
    if (!p || !keeps_values.count(p->type) || p->inputs.empty()) return "";
    graph = p->inputs[0];
  }
  return "";
}
}  // namespace

void translate_gather(OnnxNode& n) {
  const OnnxValue& data = n.input(0, "first");
  const OnnxValue& idx = n.input(1, "indices");
  const std::int64_t axis = wrap_dim(n.attr_i("axis", 0), n.rank(), "Gather");
  if (idx.constant && idx.probe.dim() == 0)
    return n.define(
        n.y(),
        n.emit_op("select", {data.graph},
                  {{"dim", axis}, {"index", static_cast<std::int64_t>(idx.probe.item())}}, n.y()));
  if (axis == 0 && data.probe.dim() == 2 && idx.probe.dtype() == DType::i64) {
    // Token ids from a model input: a run without explicit inputs draws them in the table.
    if (!idx.constant)
      if (const std::string in = input_behind(n, idx.graph); !in.empty())
        n.note_index_range(in, data.probe.shape()[0]);
    return n.define(n.y(), n.emit_op("embedding", {data.graph, n.operand(1)}, {}, n.y()));
  }
  n.fail(
      "Gather is supported on a computed value with one known index, or as an embedding "
      "(axis 0 of a 2-D table)");
}

bool fold_gather(OnnxNode& n) {
  if (!foldable(n)) return false;
  const Tensor& x = first(n);
  const auto rank = static_cast<std::int64_t>(x.dim());
  const Tensor idx = n.constant_input(1, "indices");
  const std::int64_t axis = wrap_axis(n.attr_i("axis", 0), rank, "Gather");
  Shape s(x.shape().begin(), x.shape().begin() + axis);
  s.insert(s.end(), idx.shape().begin(), idx.shape().end());
  s.insert(s.end(), x.shape().begin() + axis + 1, x.shape().end());
  const std::int64_t size = x.shape()[static_cast<std::size_t>(axis)];
  std::int64_t outer = 1, inner = 1;
  for (std::int64_t d = 0; d < axis; ++d) outer *= x.shape()[static_cast<std::size_t>(d)];
  for (std::int64_t d = axis + 1; d < rank; ++d) inner *= x.shape()[static_cast<std::size_t>(d)];
  const auto v = x.to_vector();
  std::vector<double> o;
  for (std::int64_t r = 0; r < outer; ++r)
    for (double fi : idx.to_vector()) {
      auto i = static_cast<std::int64_t>(fi);
      if (i < 0) i += size;
      if (i < 0 || i >= size)
        n.fail("index " + std::to_string(static_cast<std::int64_t>(fi)) +
               " is out of range for size " + std::to_string(size));
      o.insert(o.end(), v.begin() + (r * size + i) * inner, v.begin() + (r * size + i + 1) * inner);
    }
  return n.fold_to(make(o, s, x.dtype()));
}

namespace {
// ONNX Expand broadcasts both ways: the output shape is the broadcast of the input's shape and
// the given one (a 1 in either keeps the other's size).
Shape expanded_shape(const OnnxNode& n) {
  return broadcast_shapes(first(n).shape(), n.constant_ints(1, "shape"), "Expand");
}
}  // namespace

void translate_expand(OnnxNode& n) {
  const Shape shape = expanded_shape(n);
  const OnnxValue& x = n.input(0, "first");
  if (shape == x.probe.shape()) return n.alias(n.y(), x);
  n.define(n.y(), n.emit_op("expand", {x.graph}, {{"shape", shape}}, n.y()));
}

bool fold_expand(OnnxNode& n) {
  if (!foldable(n)) return false;
  const Shape shape = expanded_shape(n);
  if (shape_numel(shape) > 100'000'000)
    n.fail("expands to " + shape_str(shape) + ", too large to build when the model is loaded");
  // x broadcast over a tensor of the output's shape.
  const Tensor frame = make(std::vector<double>(static_cast<std::size_t>(shape_numel(shape)), 0.0),
                            shape, first(n).dtype());
  return n.fold_to(fold_binary(
      frame, first(n), [](double, double v) { return v; }, "Expand"));
}

namespace {
// Tile's repeats (input 1, known at load time): one per dimension of the input.
Shape tile_repeats(const OnnxNode& n) {
  const Shape r = n.constant_ints(1, "repeats");
  if (static_cast<std::int64_t>(r.size()) != first(n).dim())
    n.fail("repeats " + shape_str(r) + " must have one entry per dimension of the input " +
           first(n).str());
  for (const std::int64_t v : r)
    if (v < 0) n.fail("repeats " + shape_str(r) + " must not be negative");
  return r;
}
}  // namespace

void translate_tile(OnnxNode& n) {
  const Shape r = tile_repeats(n);
  const OnnxValue& x = n.input(0, "first");
  if (std::all_of(r.begin(), r.end(), [](std::int64_t v) { return v == 1; }))
    return n.alias(n.y(), x);
  n.define(n.y(), n.emit_op("repeat", {x.graph}, {{"repeats", r}}, n.y()));
}

bool fold_tile(OnnxNode& n) {
  if (!foldable(n)) return false;
  const Shape r = tile_repeats(n);
  Shape out = first(n).shape();
  for (std::size_t d = 0; d < out.size(); ++d) out[d] *= r[d];
  if (shape_numel(out) > 100'000'000)
    n.fail("tiles to " + shape_str(out) + ", too large to build when the model is loaded");
  return n.fold_to(repeat(first(n), r));
}

namespace {
// Slice's (axis, step, start, end) per sliced axis, the bounds clamped to the size at `shape`.
struct SliceAxis {
  std::int64_t axis, step, start, end;
};
std::vector<SliceAxis> slice_axes(const OnnxNode& n, const Shape& shape, bool onnx_clamp) {
  const auto starts = n.constant_input(1, "starts").to_vector();
  const auto ends = n.constant_input(2, "ends").to_vector();
  std::vector<double> axes, steps;
  if (n.has_input(3)) axes = n.constant_input(3, "axes").to_vector();
  if (n.has_input(4)) steps = n.constant_input(4, "steps").to_vector();
  if (ends.size() != starts.size() || (!axes.empty() && axes.size() != starts.size()) ||
      (!steps.empty() && steps.size() != starts.size()))
    n.fail("starts, ends, axes and steps must have the same length");
  const auto rank = static_cast<std::int64_t>(shape.size());
  std::vector<SliceAxis> out;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    const std::int64_t axis =
        wrap_axis(axes.empty() ? static_cast<std::int64_t>(i) : static_cast<std::int64_t>(axes[i]),
                  rank, "Slice");
    const std::int64_t step = steps.empty() ? 1 : static_cast<std::int64_t>(steps[i]);
    // A negative step reverses (F.pad's pads list, reversed at load time); a computed value
    // has no reversing op.
    if (step == 0 || (step < 0 && !onnx_clamp))
      n.fail(step == 0 ? "a slice step of 0"
                       : "a negative slice step on a value computed at run time is not supported");
    const std::int64_t size = shape[static_cast<std::size_t>(axis)];
    if (onnx_clamp) {
      const auto [b, e] = slice_bounds(to_index(starts[i]), to_index(ends[i]), step, size);
      out.push_back({axis, step, b, e});
    } else {
      auto bound = [&](double v) {
        std::int64_t b = v >= 9.2e18 ? size : v <= -9.2e18 ? 0 : static_cast<std::int64_t>(v);
        if (b < 0) b += size;
        return std::clamp<std::int64_t>(b, 0, size);
      };
      out.push_back({axis, step, bound(starts[i]), bound(ends[i])});
    }
  }
  return out;
}
}  // namespace

void translate_slice(OnnxNode& n) {
  std::vector<Attributes> steps;
  for (const auto& a : slice_axes(n, first(n).shape(), false))
    steps.push_back({{"dim", a.axis}, {"start", a.start}, {"end", a.end}, {"step", a.step}});
  emit_chain(n, "slice", steps);
}

bool fold_slice(OnnxNode& n) {
  if (!foldable(n)) return false;
  const Tensor& x = first(n);
  const auto rank = static_cast<std::int64_t>(x.dim());
  Tensor cur = x;
  for (const auto& a : slice_axes(n, x.shape(), true)) {
    const std::int64_t size = cur.shape()[static_cast<std::size_t>(a.axis)];
    Shape s = cur.shape();
    const std::int64_t span = a.step > 0 ? a.end - a.start : a.start - a.end,
                       stride = a.step > 0 ? a.step : -a.step,
                       count = span > 0 ? (span + stride - 1) / stride : 0;
    s[static_cast<std::size_t>(a.axis)] = count;
    std::int64_t outer = 1, inner = 1;
    for (std::int64_t d = 0; d < a.axis; ++d) outer *= s[static_cast<std::size_t>(d)];
    for (std::int64_t d = a.axis + 1; d < rank; ++d) inner *= s[static_cast<std::size_t>(d)];
    const auto v = cur.to_vector();
    std::vector<double> o;
    for (std::int64_t r = 0; r < outer; ++r)
      for (std::int64_t t = 0, j = a.start; t < count; ++t, j += a.step)
        o.insert(o.end(), v.begin() + (r * size + j) * inner,
                 v.begin() + (r * size + j + 1) * inner);
    cur = make(o, s, x.dtype());
  }
  return n.fold_to(cur);
}

}  // namespace ckpt::shape_onnx
