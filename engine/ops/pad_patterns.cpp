// F.pad(mode="circular") as PyTorch 1.13's exporter writes it (torch.onnx's _pad_circular):
// per padded dim, from the first spatial one, Concat(Slice(x, -(r + 1), -1), x, Slice(x, 0, l))
// along that dim, where F.pad's (left l, right r) of the dim are taken in swapped order and
// the left slice ends one element early. For F.pad(x, (1, 2), mode="circular") over
// x = [0, 1, 2, 3, 4, 5] the module computes [5, 0, 1, 2, 3, 4, 5, 0, 1] and the file
// [3, 4, 0, 1, 2, 3, 4, 5, 0]. The engine measures the module: it reads the chain as the
// circular pad of that dim, F.pad's (l, r), and says so in the load warnings.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "engine/ops/pad.hpp"
#include "engine/ops/schema/onnx_pattern.hpp"

namespace ckpt {

namespace {

using namespace pattern;

// The slice's axis, start and end when it is a unit-step slice along one axis.
struct OneAxisSlice {
  std::int64_t axis = 0, start = 0, end = 0;
};

std::optional<OneAxisSlice> read_slice(const OnnxFusion& f, const char* starts, const char* ends,
                                       const char* axes, const char* steps) {
  const auto start = f.scalar(starts), end = f.scalar(ends), axis = f.scalar(axes);
  if (!start || !end || !axis) return std::nullopt;
  if (f.value(steps) && f.scalar(steps) != std::optional<double>(1.0)) return std::nullopt;
  return OneAxisSlice{static_cast<std::int64_t>(*axis), static_cast<std::int64_t>(*start),
                      static_cast<std::int64_t>(*end)};
}

bool emit_circular_pad(OnnxFusion& f) {
  const OnnxValue* x = f.value("x");
  if (!x || x->constant) return false;
  const Shape& shape = x->probe.shape();
  const auto rank = static_cast<std::int64_t>(shape.size());
  if (rank < 3 || rank > 5) return false;
  std::int64_t axis = f.attr_i("cat", "axis", -1000);
  if (axis < 0) axis += rank;
  if (axis < 2 || axis >= rank) return false;
  const auto same_axis = [&](const OneAxisSlice& s) {
    return s.axis == axis || s.axis + rank == axis;
  };
  const std::int64_t size = shape[static_cast<std::size_t>(axis)];
  // The exporter's left slice, when the module pads on the right: x[-(r + 1):-1], r >= 1.
  std::int64_t right_pad = 0;
  if (f.value("left_starts")) {
    const auto left = read_slice(f, "left_starts", "left_ends", "left_axes", "left_steps");
    if (!left || !same_axis(*left) || left->end != -1 || left->start > -2) return false;
    right_pad = -left->start - 1;
  } else if (f.producer().rfind("pytorch 1.", 0) != 0) {
    // Concat(x, x[0:l]) alone is also a right circular pad written right: read so but from
    // PyTorch 1.x, whose exporter means the module's left pad by it.
    return false;
  }
  // Its right slice, when the module pads on the left: x[0:l].
  std::int64_t left_pad = 0;
  if (f.value("right_starts")) {
    const auto right = read_slice(f, "right_starts", "right_ends", "right_axes", "right_steps");
    if (!right || !same_axis(*right) || right->start != 0 || right->end < 1) return false;
    left_pad = right->end;
  }
  if (left_pad > size || right_pad > size) return false;
  // F.pad's order: (left, right) of the last dim first; every spatial dim listed.
  const std::int64_t spatial = rank - 2;
  Shape pads(static_cast<std::size_t>(2 * spatial), 0);
  const auto pair = static_cast<std::size_t>(rank - 1 - axis);
  pads[2 * pair] = left_pad;
  pads[2 * pair + 1] = right_pad;
  f.emit_op("pad", {f.operand("x")}, {{"pads", pads}, {"mode", std::string("circular")}});
  f.note_change(
      "Concat of Slices as PyTorch 1.13 exports F.pad(mode='circular') runs as the module's "
      "circular pad (the file's slices are off by one and its two pads swapped)");
  return true;
}

}  // namespace

std::vector<OnnxPattern> circular_pad_patterns() {
  const P x = any("x");
  const auto slice = [&](const char* starts, const char* ends, const char* axes,
                         const char* steps) {
    return op("Slice",
              {x, constant(starts), constant(ends), constant(axes), optional_constant(steps)});
  };
  const P left = slice("left_starts", "left_ends", "left_axes", "left_steps");
  const P right = slice("right_starts", "right_ends", "right_axes", "right_steps");
  // From opset 10 Slice takes its starts, ends and axes as inputs.
  return {{.name = "circular pad (PyTorch 1.13's Slice and Concat)",
           .root = as("cat", one_of({op("Concat", {left, x, right}), op("Concat", {left, x}),
                                     op("Concat", {x, right})})),
           .since = 10,
           .fuse = emit_circular_pad}};
}

}  // namespace ckpt
