// Rows of the resizing ops (resize.cpp), and ONNX's Resize as PyTorch 1.13 exports
// F.interpolate(mode="nearest") and nn.Upsample.
#include <cmath>

#include "engine/ops/resize.hpp"
#include "engine/ops/schema/onnx_support.hpp"
#include "engine/ops/schema/row_helpers.hpp"

namespace ckpt {

namespace {

using onnx_rules::Ints;

TensorList run_upsample_nearest2d(const OpCall& n, const TensorList& x) {
  const auto s = attr_ints(n, "size");
  return {upsample_nearest2d(x[0], {s.at(0), s.at(1)})};
}

std::string python_upsample_nearest2d(const OpCall& n, const std::vector<std::string>& a,
                                      const Shape&) {
  const auto s = attr_ints(n, "size");
  return "F.interpolate(" + a[0] + ", size=(" + std::to_string(s.at(0)) + ", " +
         std::to_string(s.at(1)) + "), mode=\"nearest\")";
}

// Resize(X, roi, scales, sizes) from opset 11 (scales from opset 10's second input): PyTorch
// writes nearest as mode "nearest", coordinate_transformation_mode "asymmetric", nearest_mode
// "floor", which is floor(o * in / out) when the output size is a whole multiple.
void onnx_resize(OnnxNode& n) {
  const std::string mode = n.attr_s("mode", "nearest");
  if (mode != "nearest")
    n.fail("mode '" + mode + "' is not supported (only nearest: F.interpolate's default)");
  if (n.attr_s("coordinate_transformation_mode", "half_pixel") != "asymmetric" ||
      n.attr_s("nearest_mode", "round_prefer_floor") != "floor")
    n.fail("only PyTorch's nearest (asymmetric coordinates, floor) is supported");
  const Tensor& x = n.input(0, "X").probe;
  if (x.dim() != 4) n.fail("Resize is supported on [N, C, H, W] only, got " + x.str());
  const std::size_t scales_at = n.opset() >= 11 ? 2 : 1, sizes_at = 3;
  Shape out;
  if (n.has_input(sizes_at) && n.constant_input(sizes_at, "sizes").numel() > 0) {
    out = n.constant_ints(sizes_at, "sizes");
  } else {
    const auto scales = n.constant_input(scales_at, "scales").to_vector();
    if (scales.size() != 4) n.fail("needs 4 scales, got " + std::to_string(scales.size()));
    for (std::size_t d = 0; d < 4; ++d)
      out.push_back(
          static_cast<std::int64_t>(std::floor(static_cast<double>(x.shape()[d]) * scales[d])));
  }
  if (out.size() != 4 || out[0] != x.shape()[0] || out[1] != x.shape()[1])
    n.fail("only H and W can be resized, got " + shape_str(out) + " from " + x.str());
  n.define(n.y(), n.emit_op("upsample_nearest2d", {n.input(0, "X").graph},
                            {{"size", Ints{out[2], out[3]}}}, n.y()));
}

}  // namespace

void register_resize_ops(OpTable& t) {
  t.add({.type = "upsample_nearest2d",
         .kernel = run_upsample_nearest2d,
         .cost = rows::elementwise_cost,
         .python = python_upsample_nearest2d,
         .onnx = {{.op_type = "Resize", .since = 10, .translate = onnx_resize}}});
}

}  // namespace ckpt
