#include "engine/ops/pixel_shuffle.hpp"

#include <stdexcept>
#include <string>

#include "engine/autograd/execution_context.hpp"
#include "engine/ops/schema/row_helpers.hpp"
#include "engine/ops/shape_ops.hpp"

// Sub-pixel convolution's rearrangements (ESPCN, super-resolution heads, Real-ESRGAN), as the
// reshape, permute and copy PyTorch's kernels amount to.

namespace ckpt {

namespace {

// x's leading dims (all but the last three).
Shape batch_dims(const Tensor& x) {
  return Shape(x.shape().begin(), x.shape().end() - 3);
}

void check(const char* op, const Tensor& x, std::int64_t factor) {
  if (x.dim() < 3)
    throw std::invalid_argument(std::string(op) +
                                " expects input to have at least 3 dimensions, but got input "
                                "with " +
                                std::to_string(x.dim()) + " dimension(s)");
  if (factor <= 0)
    throw std::invalid_argument(std::string(op) + ": the factor must be positive, got " +
                                std::to_string(factor));
}

// The permutation of `order` (indices into the six trailing dims) after the leading ones.
std::vector<std::int64_t> permutation(std::size_t lead, std::initializer_list<std::int64_t> order) {
  std::vector<std::int64_t> p;
  for (std::size_t i = 0; i < lead; ++i) p.push_back(static_cast<std::int64_t>(i));
  for (std::int64_t o : order) p.push_back(static_cast<std::int64_t>(lead) + o);
  return p;
}

Shape with(Shape lead, std::initializer_list<std::int64_t> tail) {
  lead.insert(lead.end(), tail.begin(), tail.end());
  return lead;
}

}  // namespace

Tensor pixel_shuffle(const Tensor& x, std::int64_t r, bool channels_last_blocks) {
  OpScope op("pixel_shuffle");
  check("pixel_shuffle", x, r);
  const Shape lead = batch_dims(x);
  const std::int64_t c = x.shape()[lead.size()], h = x.shape()[lead.size() + 1],
                     w = x.shape()[lead.size() + 2];
  if (c % (r * r) != 0)
    throw std::invalid_argument(
        "pixel_shuffle expects its input's 'channel' dimension to be "
        "divisible by the square of upscale_factor, but input.size(-3)=" +
        std::to_string(c) + " is not divisible by " + std::to_string(r * r));
  const std::int64_t oc = c / (r * r);
  // CRD: [*, oc, r, r, h, w] -> [*, oc, h, r, w, r]; DCR: [*, r, r, oc, h, w] -> the same.
  const Tensor blocks = channels_last_blocks
                            ? permute(view(contiguous(x), with(lead, {r, r, oc, h, w})),
                                      permutation(lead.size(), {2, 3, 0, 4, 1}))
                            : permute(view(contiguous(x), with(lead, {oc, r, r, h, w})),
                                      permutation(lead.size(), {0, 3, 1, 4, 2}));
  return reshape(blocks, with(lead, {oc, h * r, w * r}));
}

Tensor pixel_unshuffle(const Tensor& x, std::int64_t r, bool channels_last_blocks) {
  OpScope op("pixel_unshuffle");
  check("pixel_unshuffle", x, r);
  const Shape lead = batch_dims(x);
  const std::int64_t c = x.shape()[lead.size()], h = x.shape()[lead.size() + 1],
                     w = x.shape()[lead.size() + 2];
  if (h % r != 0 || w % r != 0)
    throw std::invalid_argument(
        "pixel_unshuffle expects height and width to be divisible by "
        "downscale_factor, but got input of size " +
        shape_str(x.shape()) + " and downscale_factor=" + std::to_string(r));
  // [*, c, h/r, r, w/r, r] -> CRD [*, c, r, r, h/r, w/r], DCR [*, r, r, c, h/r, w/r].
  const Tensor split = view(contiguous(x), with(lead, {c, h / r, r, w / r, r}));
  const Tensor blocks = channels_last_blocks
                            ? permute(split, permutation(lead.size(), {2, 4, 0, 1, 3}))
                            : permute(split, permutation(lead.size(), {0, 2, 4, 1, 3}));
  return reshape(blocks, with(lead, {c * r * r, h / r, w / r}));
}

namespace {

bool dcr(const OpCall& n) {
  return attr_string(n, "mode", "CRD") == "DCR";
}

TensorList run_pixel_shuffle(const OpCall& n, const TensorList& x) {
  return {pixel_shuffle(x[0], attr_int(n, "factor"), dcr(n))};
}
TensorList run_pixel_unshuffle(const OpCall& n, const TensorList& x) {
  return {pixel_unshuffle(x[0], attr_int(n, "factor"), dcr(n))};
}

// x.reshape(...).permute(...).reshape(...) over the known shape: DCR has no PyTorch function.
std::string spelled_out(const std::string& x, const Shape& shape, const Shape& split,
                        std::initializer_list<std::int64_t> order, const Shape& result) {
  const std::size_t lead = shape.size() - 3;
  Shape first(shape.begin(), shape.begin() + static_cast<std::ptrdiff_t>(lead)), last = first;
  first.insert(first.end(), split.begin(), split.end());
  last.insert(last.end(), result.begin(), result.end());
  return x + ".reshape" + rows::ints(first) + ".permute" + rows::ints(permutation(lead, order)) +
         ".reshape" + rows::ints(last);
}

std::string python_pixel_shuffle(const OpCall& n, const std::vector<std::string>& a,
                                 const Shape& shape) {
  const std::int64_t r = attr_int(n, "factor");
  if (!dcr(n) || shape.size() < 3)
    return "F.pixel_shuffle(" + rows::arg(a, 0) + ", " + std::to_string(r) + ")";
  const std::int64_t c = shape[shape.size() - 3] / (r * r), h = shape[shape.size() - 2],
                     w = shape[shape.size() - 1];
  return spelled_out(rows::arg(a, 0), shape, {r, r, c, h, w}, {2, 3, 0, 4, 1}, {c, h * r, w * r});
}
std::string python_pixel_unshuffle(const OpCall& n, const std::vector<std::string>& a,
                                   const Shape& shape) {
  const std::int64_t r = attr_int(n, "factor");
  if (!dcr(n) || shape.size() < 3)
    return "F.pixel_unshuffle(" + rows::arg(a, 0) + ", " + std::to_string(r) + ")";
  const std::int64_t c = shape[shape.size() - 3], h = shape[shape.size() - 2],
                     w = shape[shape.size() - 1];
  return spelled_out(rows::arg(a, 0), shape, {c, h / r, r, w / r, r}, {2, 4, 0, 1, 3},
                     {c * r * r, h / r, w / r});
}

// DepthToSpace (CRD: nn.PixelShuffle's export; DCR, the default, TensorFlow's) and SpaceToDepth
// (DCR only; PyTorch exports nn.PixelUnshuffle as Reshape, Transpose, Reshape instead).
void onnx_depth_to_space(OnnxNode& n) {
  const std::string mode = n.attr_s("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") n.fail("mode '" + mode + "' is not DCR or CRD");
  n.define(n.y(), n.emit_op("pixel_shuffle", {n.input(0, "input").graph},
                            {{"factor", n.attr_i("blocksize", 0)}, {"mode", mode}}, n.y()));
}
void onnx_space_to_depth(OnnxNode& n) {
  n.define(n.y(),
           n.emit_op("pixel_unshuffle", {n.input(0, "input").graph},
                     {{"factor", n.attr_i("blocksize", 0)}, {"mode", std::string("DCR")}}, n.y()));
}

// {"type": "pixel_shuffle" | "pixel_unshuffle", "factor"}.
ValueNames layer_pixel_shuffle(NativeLayerCall& c) {
  return c.emit_op("pixel_shuffle", c.one(), {{"factor", c.get_int("factor")}});
}
ValueNames layer_pixel_unshuffle(NativeLayerCall& c) {
  return c.emit_op("pixel_unshuffle", c.one(), {{"factor", c.get_int("factor")}});
}

}  // namespace

void register_pixel_shuffle_ops(OpTable& t) {
  t.add({.type = "pixel_shuffle",
         .kernel = run_pixel_shuffle,
         .cost = rows::elementwise_cost,
         .python = python_pixel_shuffle,
         .onnx = {{.op_type = "DepthToSpace", .translate = onnx_depth_to_space}},
         .native_layers = {{.name = "pixel_shuffle",
                            .module_class = "PixelShuffle",
                            .build = layer_pixel_shuffle}}});
  t.add({.type = "pixel_unshuffle",
         .kernel = run_pixel_unshuffle,
         .cost = rows::elementwise_cost,
         .python = python_pixel_unshuffle,
         .onnx = {{.op_type = "SpaceToDepth", .translate = onnx_space_to_depth}},
         .native_layers = {{.name = "pixel_unshuffle",
                            .module_class = "PixelUnshuffle",
                            .build = layer_pixel_unshuffle}}});
}

}  // namespace ckpt
