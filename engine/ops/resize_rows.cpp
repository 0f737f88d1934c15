// Rows of the resizing ops (resize.cpp), and ONNX's Resize as PyTorch 1.13 exports
// F.interpolate(mode="nearest") and nn.Upsample.
#include <cmath>
#include <cstdio>

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

TensorList run_upsample_bilinear2d(const OpCall& n, const TensorList& x) {
  const auto s = attr_ints(n, "size");
  return {upsample_bilinear2d(x[0], {s.at(0), s.at(1)}, attr_int(n, "align_corners", 0) != 0,
                              {attr_double(n, "scale_h", 0), attr_double(n, "scale_w", 0)})};
}

std::string python_upsample_bilinear2d(const OpCall& n, const std::vector<std::string>& a,
                                       const Shape&) {
  const std::string align = attr_int(n, "align_corners", 0) != 0 ? "True" : "False";
  if (has_attr(n, "scale_h")) {
    char sc[64];
    std::snprintf(sc, sizeof sc, "(%.17g, %.17g)", attr_double(n, "scale_h"),
                  attr_double(n, "scale_w"));
    return "F.interpolate(" + a[0] + ", scale_factor=" + sc +
           ", mode=\"bilinear\", align_corners=" + align + ")";
  }
  const auto s = attr_ints(n, "size");
  return "F.interpolate(" + a[0] + ", size=(" + std::to_string(s.at(0)) + ", " +
         std::to_string(s.at(1)) + "), mode=\"bilinear\", align_corners=" + align + ")";
}

// Resize(X, roi, scales, sizes) from opset 11 (scales from opset 10's second input), as
// PyTorch 1.13 exports F.interpolate and nn.Upsample:
// - nearest: mode "nearest", coordinate_transformation_mode "asymmetric", nearest_mode "floor",
//   which is floor(o * in / out) when the output size is a whole multiple;
// - bilinear: mode "linear", "half_pixel" (align_corners=False; "pytorch_half_pixel" is the
//   same but for a 1-pixel output) or "align_corners". Given scales (F.interpolate's
//   scale_factor) set the source coordinates as PyTorch's do: 1 / scale, not in / out.
void onnx_resize(OnnxNode& n) {
  const std::string mode = n.attr_s("mode", "nearest");
  const std::string coordinates = n.attr_s("coordinate_transformation_mode", "half_pixel");
  if (mode != "nearest" && mode != "linear")
    n.fail("mode '" + mode +
           "' is not supported (nearest and linear: F.interpolate's 'nearest' and 'bilinear')");
  if (mode == "nearest" &&
      (coordinates != "asymmetric" || n.attr_s("nearest_mode", "round_prefer_floor") != "floor"))
    n.fail("only PyTorch's nearest (asymmetric coordinates, floor) is supported");
  if (mode == "linear" && n.opset() < 11)
    n.fail("linear Resize before opset 11 is not supported (it has no coordinate mode)");
  if (mode == "linear" && coordinates != "half_pixel" && coordinates != "pytorch_half_pixel" &&
      coordinates != "align_corners")
    n.fail("linear with coordinate_transformation_mode '" + coordinates +
           "' is not supported (half_pixel, pytorch_half_pixel and align_corners: "
           "F.interpolate's align_corners=False and True)");
  const Tensor& x = n.input(0, "X").probe;
  if (x.dim() != 4) n.fail("Resize is supported on [N, C, H, W] only, got " + x.str());
  const std::size_t scales_at = n.opset() >= 11 ? 2 : 1, sizes_at = 3;
  Shape out;
  std::vector<double> scales;
  if (n.has_input(sizes_at) && n.constant_input(sizes_at, "sizes").numel() > 0) {
    out = n.constant_ints(sizes_at, "sizes");
  } else {
    scales = n.constant_input(scales_at, "scales").to_vector();
    if (scales.size() != 4) n.fail("needs 4 scales, got " + std::to_string(scales.size()));
    for (std::size_t d = 0; d < 4; ++d)
      out.push_back(
          static_cast<std::int64_t>(std::floor(static_cast<double>(x.shape()[d]) * scales[d])));
  }
  if (out.size() != 4 || out[0] != x.shape()[0] || out[1] != x.shape()[1])
    n.fail("only H and W can be resized, got " + shape_str(out) + " from " + x.str());
  if (mode == "nearest")
    return n.define(n.y(), n.emit_op("upsample_nearest2d", {n.input(0, "X").graph},
                                     {{"size", Ints{out[2], out[3]}}}, n.y()));
  if (coordinates == "pytorch_half_pixel" && (out[2] == 1 || out[3] == 1))
    n.fail(
        "pytorch_half_pixel to a 1-pixel side is not supported (PyTorch itself exports "
        "half_pixel)");
  Attributes attrs{{"size", Ints{out[2], out[3]}},
                   {"align_corners", std::int64_t{coordinates == "align_corners" ? 1 : 0}}};
  if (!scales.empty() && coordinates != "align_corners")
    attrs.insert({{"scale_h", scales[2]}, {"scale_w", scales[3]}});
  n.define(n.y(),
           n.emit_op("upsample_bilinear2d", {n.input(0, "X").graph}, std::move(attrs), n.y()));
}

}  // namespace

void register_resize_ops(OpTable& t) {
  t.add({.type = "upsample_nearest2d",
         .kernel = run_upsample_nearest2d,
         .cost = rows::elementwise_cost,
         .python = python_upsample_nearest2d,
         .onnx = {{.op_type = "Resize", .since = 10, .translate = onnx_resize}},
         .autocast = {.cuda = AutocastPolicy::fp32}});
  // Its ONNX form is Resize's mode "linear", translated by the rule above.
  t.add({.type = "upsample_bilinear2d",
         .kernel = run_upsample_bilinear2d,
         .cost = rows::elementwise_cost,
         .python = python_upsample_bilinear2d,
         .autocast = {.cuda = AutocastPolicy::fp32}});
}

}  // namespace ckpt
