// Rows of the view, copy and layout ops (shape_ops.cpp). Their ONNX rules, most of which also
// fold shape arithmetic at load time, are in shape_ops_onnx.cpp.
#include <algorithm>
#include <climits>
#include <stdexcept>
#include <string>

#include "engine/ops/pad.hpp"
#include "engine/ops/pixel_shuffle.hpp"
#include "engine/ops/schema/row_helpers.hpp"
#include "engine/ops/shape_ops.hpp"
#include "engine/ops/shape_ops_onnx.hpp"

namespace ckpt {

namespace {

using rows::arg;
using rows::unary;

// A 0 in a target shape keeps the input's size there (ONNX Reshape's rule), so that a graph
// can reshape [B, S, D] to [B, S, heads, D / heads] whatever the batch.
Shape target_shape(const OpCall& n, const Tensor& x) {
  Shape s = attr_ints(n, "shape");
  for (std::size_t i = 0; i < s.size(); ++i)
    if (s[i] == 0 && i < x.shape().size()) s[i] = x.shape()[i];
  return s;
}
TensorList run_view(const OpCall& n, const TensorList& x) {
  return {view(x[0], target_shape(n, x[0]))};
}
TensorList run_reshape(const OpCall& n, const TensorList& x) {
  return {reshape(x[0], target_shape(n, x[0]))};
}
TensorList run_flatten(const OpCall& n, const TensorList& x) {
  return {flatten(x[0], attr_int(n, "start_dim", 1), attr_int(n, "end_dim", -1))};
}
TensorList run_transpose(const OpCall& n, const TensorList& x) {
  return {transpose(x[0], attr_int(n, "dim0"), attr_int(n, "dim1"))};
}
TensorList run_permute(const OpCall& n, const TensorList& x) {
  return {permute(x[0], attr_ints(n, "dims"))};
}
TensorList run_slice(const OpCall& n, const TensorList& x) {
  return {slice(x[0], attr_int(n, "dim"), attr_int(n, "start", 0), attr_int(n, "end", INT64_MAX),
                attr_int(n, "step", 1))};
}
TensorList run_select(const OpCall& n, const TensorList& x) {
  if (x[0].dim() == 0) throw std::invalid_argument("select() cannot be applied to a 0-dim tensor.");
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
TensorList run_unsqueeze(const OpCall& n, const TensorList& x) {
  return {unsqueeze(x[0], attr_int(n, "dim"))};
}
TensorList run_squeeze(const OpCall& n, const TensorList& x) {
  return {squeeze(x[0], attr_int(n, "dim"))};
}
TensorList run_repeat(const OpCall& n, const TensorList& x) {
  return {repeat(x[0], attr_ints(n, "repeats"))};
}
std::string python_repeat(const OpCall& n, const std::vector<std::string>& a, const Shape&) {
  std::string s = a[0] + ".repeat(";
  const auto r = attr_ints(n, "repeats");
  for (std::size_t i = 0; i < r.size(); ++i) s += (i ? ", " : "") + std::to_string(r[i]);
  return s + ")";
}
TensorList run_expand(const OpCall& n, const TensorList& x) {
  return {expand(x[0], attr_ints(n, "shape"))};
}
TensorList run_cat(const OpCall& n, const TensorList& x) {
  return {cat(x, attr_int(n, "dim", 0))};
}
TensorList run_constant_pad(const OpCall& n, const TensorList& x) {
  return {constant_pad(x[0], attr_ints(n, "before"), attr_ints(n, "after"),
                       attr_double(n, "value", 0.0))};
}
std::string python_constant_pad(const OpCall& n, const std::vector<std::string>& a, const Shape&) {
  // F.pad lists (before, after) pairs from the last dimension back.
  const Shape b = attr_ints(n, "before"), e = attr_ints(n, "after");
  std::string pads;
  for (std::size_t d = b.size(); d-- > 0;)
    pads += std::to_string(b[d]) + ", " + std::to_string(e[d]) + (d ? ", " : "");
  const double value = attr_double(n, "value", 0.0);
  return "F.pad(" + a[0] + ", (" + pads + ")" +
         (value == 0 ? std::string() : ", value=" + std::to_string(value)) + ")";
}
// Constant padding (Swin's windows, F.pad, and what PyTorch exports before an AvgPool2d with
// padding, which then pools the padded value: the same numbers, and the padded copy is what
// the exported graph keeps).
void translate_pad(OnnxNode& n) {
  const std::string mode = n.attr_s("mode", "constant");
  const OnnxValue& x = n.input(0, "first");
  const auto r = static_cast<std::size_t>(n.rank());
  const auto given = n.constant_input(1, "pads").to_vector();
  // From opset 18 an axes input names the padded dims; pads then has two values per axis.
  std::vector<double> pads(2 * r, 0.0);
  if (n.has_input(3)) {
    const Shape axes = n.constant_ints(3, "axes");
    if (given.size() != 2 * axes.size())
      n.fail(std::to_string(given.size()) + " pads for " + std::to_string(axes.size()) + " axes");
    for (std::size_t j = 0; j < axes.size(); ++j) {
      const auto d = static_cast<std::size_t>(wrap_dim(axes[j], n.rank(), "Pad"));
      pads[d] = given[j];
      pads[r + d] = given[axes.size() + j];
    }
  } else {
    if (given.size() != 2 * r)
      n.fail(std::to_string(given.size()) + " pads for a value of rank " + std::to_string(r));
    pads = given;
  }
  if (std::all_of(pads.begin(), pads.end(), [](double p) { return p == 0; }))
    return n.alias(n.y(), x);
  if (mode == "constant") {
    const double value = n.has_input(2) ? n.constant_input(2, "value").item() : 0;
    const Shape before(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(r)),
        after(pads.begin() + static_cast<std::ptrdiff_t>(r), pads.end());
    n.define(n.y(), n.emit_op("constant_pad", {x.graph},
                              {{"before", before}, {"after", after}, {"value", value}}, n.y()));
    return;
  }
  // reflect, edge (F.pad's replicate) and, from opset 19, wrap (circular): F.pad's pairs from
  // the last dim back, over the trailing dims from the first one padded.
  const char* torch_mode = mode == "reflect"                   ? "reflect"
                           : mode == "edge"                    ? "replicate"
                           : mode == "wrap" && n.opset() >= 19 ? "circular"
                                                               : nullptr;
  if (!torch_mode)
    n.fail("mode '" + mode + "' is not supported at opset " + std::to_string(n.opset()));
  std::size_t first = 0;
  while (pads[first] == 0 && pads[r + first] == 0) ++first;
  Shape torch_pads;
  for (std::size_t d = r; d-- > first;) {
    torch_pads.push_back(static_cast<std::int64_t>(pads[d]));
    torch_pads.push_back(static_cast<std::int64_t>(pads[r + d]));
  }
  n.define(n.y(), n.emit_op("pad", {x.graph},
                            {{"pads", torch_pads}, {"mode", std::string(torch_mode)}}, n.y()));
}

// Split (torch.split, torch.chunk): one slice of the axis per output, sizes from the split input
// (opset 13 on) or attribute, else equal parts.
void translate_split(OnnxNode& n) {
  if (n.rank() == 0) n.fail("cannot split a 0-d value");
  const std::int64_t axis = wrap_dim(n.attr_i("axis", 0), n.rank(), "Split");
  const std::int64_t size = n.input(0, "first").probe.shape()[static_cast<std::size_t>(axis)];
  Shape sizes = n.opset() >= 13 ? (n.has_input(1) ? n.constant_ints(1, "split") : Shape{})
                                : n.attr_ints("split");
  const auto parts = static_cast<std::int64_t>(n.output_count());
  // Opset 18: num_outputs in place of the sizes, chunks of ceil(size / num_outputs) with a
  // smaller last one, as torch.chunk (the torch.export-based exporter writes it).
  if (const std::int64_t num = n.opset() >= 18 ? n.attr_i("num_outputs", 0) : 0; num > 0) {
    if (!sizes.empty()) n.fail("has both a 'split' input and num_outputs");
    if (num != parts)
      n.fail("num_outputs is " + std::to_string(num) + " but the node has " +
             std::to_string(parts) + " outputs");
    const std::int64_t chunk = (size + num - 1) / num;
    for (std::int64_t k = 0, left = size; k < num; ++k, left -= chunk)
      sizes.push_back(std::max<std::int64_t>(0, std::min(chunk, left)));
  }
  if (sizes.empty()) {
    if (parts == 0 || size % parts != 0)
      n.fail("cannot split a dimension of " + std::to_string(size) + " into " +
             std::to_string(parts) + " equal parts");
    sizes.assign(static_cast<std::size_t>(parts), size / parts);
  }
  std::int64_t total = 0;
  for (auto v : sizes) {
    if (v < 0 || v > size) n.fail("split size " + std::to_string(v) + " out of range");
    total += v;
  }
  if (static_cast<std::int64_t>(sizes.size()) != parts || total != size)
    n.fail("split sizes " + shape_str(sizes) + " do not cover a dimension of " +
           std::to_string(size) + " with " + std::to_string(parts) + " outputs");
  std::int64_t at = 0;
  for (int k = 0; k < n.output_count(); ++k) {
    const auto len = sizes[static_cast<std::size_t>(k)];
    n.define(n.output(k),
             n.emit_op("slice", {n.input(0, "first").graph},
                       {{"dim", axis}, {"start", at}, {"end", at + len}, {"step", std::int64_t{1}}},
                       n.output(k)));
    at += len;
  }
}

TensorList run_identity(const OpCall&, const TensorList& x) {
  return {x[0]};
}

// The PyTorch spellings. x.view(...) and x.reshape(...) (Method): a 0 keeps the input's
// dimension (the ONNX convention our graphs use).
template <const char* Method>
std::string python_reshape(const OpCall& op, const std::vector<std::string>& a, const Shape&) {
  std::vector<std::string> dims;
  const auto target = attr_ints(op, "shape");
  for (std::size_t i = 0; i < target.size(); ++i)
    dims.push_back(target[i] == 0 ? arg(a, 0) + ".shape[" + std::to_string(i) + "]"
                                  : std::to_string(target[i]));
  return arg(a, 0) + "." + Method + "(" + rows::join(dims) + ")";
}
std::string python_flatten(const OpCall& op, const std::vector<std::string>& a, const Shape&) {
  return "torch.flatten(" + arg(a, 0) + ", " + std::to_string(attr_int(op, "start_dim", 1)) +
         (attr_int(op, "end_dim", -1) == -1 ? "" : ", " + std::to_string(attr_int(op, "end_dim"))) +
         ")";
}
std::string module_flatten(const OpCall& op, const std::vector<Shape>&) {
  return "nn.Flatten(" + std::to_string(attr_int(op, "start_dim", 1)) + ", " +
         std::to_string(attr_int(op, "end_dim", -1)) + ")";
}
std::string python_transpose(const OpCall& op, const std::vector<std::string>& a, const Shape&) {
  return arg(a, 0) + ".transpose(" + std::to_string(attr_int(op, "dim0")) + ", " +
         std::to_string(attr_int(op, "dim1")) + ")";
}
std::string python_permute(const OpCall& op, const std::vector<std::string>& a, const Shape&) {
  return arg(a, 0) + ".permute" + rows::ints(attr_ints(op, "dims"));
}
std::string python_select(const OpCall& op, const std::vector<std::string>& a, const Shape& shape) {
  return rows::index_expr(arg(a, 0), rows::wrap(attr_int(op, "dim"), shape),
                          std::to_string(attr_int(op, "index")));
}
std::string python_slice(const OpCall& op, const std::vector<std::string>& a, const Shape& shape) {
  const std::int64_t start = attr_int(op, "start", 0), end = attr_int(op, "end", INT64_MAX),
                     step = attr_int(op, "step", 1);
  // start:end:step, each part left out at its default (appended: GCC 12's -Wrestrict misreads
  // ":" + std::string).
  std::string item = start ? std::to_string(start) : "";
  item += ':';
  if (end != INT64_MAX) item += std::to_string(end);
  if (step != 1) item += ':' + std::to_string(step);
  return rows::index_expr(arg(a, 0), rows::wrap(attr_int(op, "dim"), shape), item);
}
// x.unsqueeze(dim), x.squeeze(dim).
template <const char* Method>
std::string python_dim(const OpCall& op, const std::vector<std::string>& a, const Shape&) {
  return arg(a, 0) + "." + Method + "(" + std::to_string(attr_int(op, "dim")) + ")";
}
std::string python_expand(const OpCall& op, const std::vector<std::string>& a, const Shape&) {
  return arg(a, 0) + ".expand" + rows::ints(attr_ints(op, "shape"));
}
std::string python_identity(const OpCall&, const std::vector<std::string>& a, const Shape&) {
  return arg(a, 0);
}
std::string python_cat(const OpCall& op, const std::vector<std::string>& a, const Shape&) {
  return "torch.cat([" + rows::join(a) + "], dim=" + std::to_string(attr_int(op, "dim", 0)) + ")";
}
constexpr char kView[] = "view", kReshape[] = "reshape", kUnsqueeze[] = "unsqueeze",
               kSqueeze[] = "squeeze", kClone[] = "clone", kContiguous[] = "contiguous",
               kIdentityModule[] = "Identity";

// The native layers of the shape ops (samples/README.md): keys named like the attributes.
ValueNames layer_flatten(NativeLayerCall& c) {
  return c.emit_op(
      "flatten", c.one(),
      {{"start_dim", c.get_int("start_dim", 1)}, {"end_dim", c.get_int("end_dim", -1)}});
}
ValueNames layer_expand(NativeLayerCall& c) {
  return c.emit_op("expand", c.one(), {{"shape", c.get_int_list("shape")}});
}
ValueNames layer_transpose(NativeLayerCall& c) {
  return c.emit_op("transpose", c.one(),
                   {{"dim0", c.get_int("dim0")}, {"dim1", c.get_int("dim1")}});
}
ValueNames layer_permute(NativeLayerCall& c) {
  return c.emit_op("permute", c.one(), {{"dims", c.get_int_list("dims")}});
}
ValueNames layer_select(NativeLayerCall& c) {
  return c.emit_op("select", c.one(), {{"dim", c.get_int("dim")}, {"index", c.get_int("index")}});
}
ValueNames layer_slice(NativeLayerCall& c) {
  return c.emit_op("slice", c.one(),
                   {{"dim", c.get_int("dim")},
                    {"start", c.get_int("start", 0)},
                    {"end", c.get_int("end", INT64_MAX)},
                    {"step", c.get_int("step", 1)}});
}
ValueNames layer_cat(NativeLayerCall& c) {
  if (c.inputs().empty()) c.fail("cat needs at least one input");
  return c.emit_op("cat", c.inputs(), {{"dim", c.get_int("dim", 1)}});
}

OpSchema with_layer(OpSchema row, NativeLayer layer) {
  row.native_layers = {layer};
  return row;
}

}  // namespace

void register_shape_ops_ops(OpTable& t) {
  using namespace shape_onnx;
  t.add(with_layer(rows::one_pass_row(kView, run_view, python_reshape<kView>),
                   {.name = kView, .build = rows::layer_with_shape}));
  t.add(with_layer(
      rows::one_pass_row(
          kReshape, run_reshape, python_reshape<kReshape>,
          {{.op_type = "Reshape", .translate = translate_reshape, .fold = fold_reshape}}),
      {.name = kReshape, .build = rows::layer_with_shape}));
  t.add(
      with_layer(rows::one_pass_row(
                     "flatten", run_flatten, python_flatten,
                     {{.op_type = "Flatten", .translate = translate_flatten, .fold = fold_flatten}},
                     module_flatten),
                 {.name = "flatten", .module_class = "Flatten", .build = layer_flatten}));
  t.add(with_layer(rows::one_pass_row("transpose", run_transpose, python_transpose),
                   {.name = "transpose", .build = layer_transpose}));
  t.add(with_layer(
      rows::one_pass_row(
          "permute", run_permute, python_permute,
          {{.op_type = "Transpose", .translate = translate_transpose, .fold = fold_transpose}}),
      {.name = "permute", .build = layer_permute}));
  t.add(with_layer(
      rows::one_pass_row("slice", run_slice, python_slice,
                         {{.op_type = "Slice", .translate = translate_slice, .fold = fold_slice},
                          {.op_type = "Split", .translate = translate_split}}),
      {.name = "slice", .build = layer_slice}));
  t.add(with_layer(rows::one_pass_row("select", run_select, python_select,
                                      {{.op_type = "Gather",
                                        .translate = translate_gather,
                                        .fold = fold_gather,
                                        .parameter_init = {InitKind::normal}}}),
                   {.name = "select", .build = layer_select}));
  t.add(with_layer(
      rows::one_pass_row(
          kUnsqueeze, run_unsqueeze, python_dim<kUnsqueeze>,
          {{.op_type = "Unsqueeze", .translate = translate_unsqueeze, .fold = fold_unsqueeze}}),
      {.name = kUnsqueeze, .build = rows::layer_with_dim}));
  t.add(with_layer(
      rows::one_pass_row(
          kSqueeze, run_squeeze, python_dim<kSqueeze>,
          {{.op_type = "Squeeze", .translate = translate_squeeze, .fold = fold_squeeze}}),
      {.name = kSqueeze, .build = rows::layer_with_dim}));
  t.add(with_layer(
      rows::one_pass_row(
          "expand", run_expand, python_expand,
          {{.op_type = "Expand", .since = 8, .translate = translate_expand, .fold = fold_expand}}),
      {.name = "expand", .build = layer_expand}));
  t.add(
      {.type = "repeat",
       .kernel = run_repeat,
       .cost = rows::elementwise_cost,
       .python = python_repeat,
       .onnx = {{.op_type = "Tile", .since = 6, .translate = translate_tile, .fold = fold_tile}}});
  t.add(with_layer(rows::one_pass_row(kClone, unary<clone>, rows::python_method<kClone>),
                   {.name = kClone}));
  t.add(rows::one_pass_row(kContiguous, unary<contiguous>, rows::python_method<kContiguous>));
  t.add({.type = "cat",
         .max_inputs = -1,
         .kernel = run_cat,
         .cost = rows::elementwise_cost,
         .python = python_cat,
         .onnx = {{.op_type = "Concat", .translate = translate_concat, .fold = fold_concat}},
         .native_layers = {{.name = "cat", .build = layer_cat}},
         .autocast = {.cpu = AutocastPolicy::promote, .cuda = AutocastPolicy::promote}});
  t.add({.type = "constant_pad",
         .kernel = run_constant_pad,
         .cost = rows::elementwise_cost,
         .python = python_constant_pad,
         .onnx = {{.op_type = "Pad", .translate = translate_pad}}});
  register_pad_ops(t);
  register_pixel_shuffle_ops(t);
  t.add(with_layer(
      rows::one_pass_row(
          "identity", run_identity, python_identity,
          {{.op_type = "Identity", .translate = translate_identity, .fold = fold_identity},
           {.op_type = "Cast", .translate = translate_cast, .fold = fold_cast},
           {.op_type = "CastLike",
            .since = 15,
            .translate = translate_cast_like,
            .fold = fold_cast_like}},
          rows::python_nn<kIdentityModule>),
      {.name = "identity", .module_class = kIdentityModule}));
}

}  // namespace ckpt
