// Rows of the resizing ops (resize.cpp), one per mode for 1, 2 and 3 spatial dims, and ONNX's
// Resize as PyTorch 1.13 exports F.interpolate and nn.Upsample.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/ops/resize.hpp"
#include "engine/ops/schema/onnx_support.hpp"
#include "engine/ops/schema/row_helpers.hpp"

namespace ckpt {

namespace {

using onnx_rules::Ints;

const char* linear_mode(std::size_t dims) {
  return dims == 1 ? "linear" : dims == 2 ? "bilinear" : "trilinear";
}

std::string spelled(const Shape& size) {
  std::string s = "(";
  for (std::size_t i = 0; i < size.size(); ++i) s += (i ? ", " : "") + std::to_string(size[i]);
  return s + (size.size() == 1 ? ",)" : ")");
}

// The scales a linear resize was given: "scales", or a model made before 1-D and 3-D resizing
// ("scale_h", "scale_w"); empty when none.
std::vector<double> given_scales(const OpCall& n) {
  if (const auto it = n.attrs.find("scales"); it != n.attrs.end())
    if (const auto* d = std::get_if<std::vector<double>>(&it->second)) return *d;
  if (has_attr(n, "scale_h")) return {attr_double(n, "scale_h"), attr_double(n, "scale_w")};
  return {};
}

TensorList run_upsample_nearest(const OpCall& n, const TensorList& x) {
  return {upsample_nearest(x[0], attr_ints(n, "size"))};
}

std::string python_upsample_nearest(const OpCall& n, const std::vector<std::string>& a,
                                    const Shape&) {
  return "F.interpolate(" + a[0] + ", size=" + spelled(attr_ints(n, "size")) +
         ", mode=\"nearest\")";
}

TensorList run_upsample_linear(const OpCall& n, const TensorList& x) {
  return {upsample_linear(x[0], attr_ints(n, "size"), attr_int(n, "align_corners", 0) != 0,
                          given_scales(n))};
}

std::string python_upsample_linear(const OpCall& n, const std::vector<std::string>& a,
                                   const Shape&) {
  const std::string align = attr_int(n, "align_corners", 0) != 0 ? "True" : "False";
  const Shape size = attr_ints(n, "size");
  const std::string mode = linear_mode(size.size());
  const std::vector<double> scales = given_scales(n);
  if (!scales.empty()) {
    std::string sc = "(";
    for (std::size_t i = 0; i < scales.size(); ++i) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g", scales[i]);
      sc += (i ? ", " : "") + std::string(buf);
    }
    sc += scales.size() == 1 ? ",)" : ")";
    return "F.interpolate(" + a[0] + ", scale_factor=" + sc + ", mode=\"" + mode +
           "\", align_corners=" + align + ")";
  }
  return "F.interpolate(" + a[0] + ", size=" + spelled(size) + ", mode=\"" + mode +
         "\", align_corners=" + align + ")";
}

// Resize(X, roi, scales, sizes) from opset 11 (scales from opset 10's second input), as
// PyTorch 1.13 exports F.interpolate and nn.Upsample over 1, 2 or 3 spatial dims:
// - nearest: mode "nearest", coordinate_transformation_mode "asymmetric", nearest_mode "floor",
//   which is floor(o * in / out) when the output size is a whole multiple;
// - linear, bilinear, trilinear: mode "linear", "half_pixel" (align_corners=False;
//   "pytorch_half_pixel" is the same but for a 1-pixel output) or "align_corners". Given scales
//   (F.interpolate's scale_factor) set the source coordinates as PyTorch's do: 1 / scale, not
//   in / out.
// Opset 18's axes (the scales or sizes of those axes only) are read; its antialias and a
// keep_aspect_ratio_policy other than "stretch" are refused, as is opset 19's
// half_pixel_symmetric (none is what F.interpolate computes).
void onnx_resize(OnnxNode& n) {
  const std::string mode = n.attr_s("mode", "nearest");
  const std::string coordinates = n.attr_s("coordinate_transformation_mode", "half_pixel");
  if (mode != "nearest" && mode != "linear")
    n.fail("mode '" + mode +
           "' is not supported (nearest and linear: F.interpolate's 'nearest', 'linear', "
           "'bilinear' and 'trilinear')");
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
  if (n.attr_i("antialias", 0) != 0) n.fail("antialias is not supported");
  if (n.attr_s("keep_aspect_ratio_policy", "stretch") != "stretch")
    n.fail("keep_aspect_ratio_policy '" + n.attr_s("keep_aspect_ratio_policy", "") +
           "' is not supported (stretch)");
  const Tensor& x = n.input(0, "X").probe;
  const auto rank = static_cast<std::size_t>(x.dim());
  if (rank < 3 || rank > 5)
    n.fail("Resize is supported on [N, C, *] with 1, 2 or 3 spatial dims, got " + x.str());
  Ints axes = n.attr_ints("axes");
  if (axes.empty())
    for (std::size_t d = 0; d < rank; ++d) axes.push_back(static_cast<std::int64_t>(d));
  for (auto& ax : axes) ax = wrap_dim(ax, x.dim(), "Resize");
  const std::size_t scales_at = n.opset() >= 11 ? 2 : 1, sizes_at = 3;
  Shape out = x.shape();
  std::vector<double> scales(rank, 0.0);
  bool by_scales = false;
  if (n.has_input(sizes_at) && n.constant_input(sizes_at, "sizes").numel() > 0) {
    const Shape sizes = n.constant_ints(sizes_at, "sizes");
    if (sizes.size() != axes.size())
      n.fail(std::to_string(sizes.size()) + " sizes for " + std::to_string(axes.size()) + " axes");
    for (std::size_t j = 0; j < axes.size(); ++j) out[static_cast<std::size_t>(axes[j])] = sizes[j];
  } else {
    const auto given = n.constant_input(scales_at, "scales").to_vector();
    if (given.size() != axes.size())
      n.fail("needs " + std::to_string(axes.size()) + " scales, got " +
             std::to_string(given.size()));
    by_scales = true;
    for (std::size_t j = 0; j < axes.size(); ++j) {
      const auto d = static_cast<std::size_t>(axes[j]);
      scales[d] = given[j];
      out[d] = static_cast<std::int64_t>(std::floor(static_cast<double>(x.shape()[d]) * given[j]));
    }
  }
  if (out[0] != x.shape()[0] || out[1] != x.shape()[1])
    n.fail("only the spatial dims can be resized, got " + shape_str(out) + " from " + x.str());
  const Ints size(out.begin() + 2, out.end());
  if (mode == "nearest")
    return n.define(
        n.y(), n.emit_op("upsample_nearest", {n.input(0, "X").graph}, {{"size", size}}, n.y()));
  if (coordinates == "pytorch_half_pixel" &&
      std::any_of(size.begin(), size.end(), [](std::int64_t v) { return v == 1; }))
    n.fail(
        "pytorch_half_pixel to a 1-pixel side is not supported (PyTorch itself exports "
        "half_pixel)");
  Attributes attrs{{"size", size},
                   {"align_corners", std::int64_t{coordinates == "align_corners" ? 1 : 0}}};
  if (by_scales && coordinates != "align_corners")
    attrs.insert({"scales", std::vector<double>(scales.begin() + 2, scales.end())});
  n.define(n.y(), n.emit_op("upsample_linear", {n.input(0, "X").graph}, std::move(attrs), n.y()));
}

}  // namespace

void register_resize_ops(OpTable& t) {
  t.add({.type = "upsample_nearest",
         .kernel = run_upsample_nearest,
         .cost = rows::elementwise_cost,
         .python = python_upsample_nearest,
         .onnx = {{.op_type = "Resize", .since = 10, .translate = onnx_resize}},
         .autocast = {.cuda = AutocastPolicy::fp32}});
  // Its ONNX form is Resize's mode "linear", translated by the rule above.
  t.add({.type = "upsample_linear",
         .kernel = run_upsample_linear,
         .cost = rows::elementwise_cost,
         .python = python_upsample_linear,
         .autocast = {.cuda = AutocastPolicy::fp32}});
}

}  // namespace ckpt
