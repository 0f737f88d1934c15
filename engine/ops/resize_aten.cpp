// ATen rules of the 2-d upsamplings (docs/capture_format.md): F.interpolate dispatches the .vec
// overloads with an output size or scale factors; the recorded output's size is the size.
#include "engine/ops/schema/op_schema.hpp"

namespace ckpt {

namespace {

std::vector<std::int64_t> output_size(AtenNode& n) {
  const Shape& out = n.output_shape(0);
  if (out.size() != 4) n.fail("only 2-d upsampling (4-d values) is supported");
  return {out[2], out[3]};
}

// The source of the .vec overload ("input") or of the sized one ("self"). Scale factors change
// where PyTorch samples the source (it divides by them rather than by the sizes' ratio): not
// supported; interpolate to a size instead.
std::string source(AtenNode& n) {
  for (const char* scale : {"scale_factors", "scales_h", "scales_w"})
    if (n.has(scale)) n.fail("upsampling by scale factors is not supported (give a size)");
  return n.has("input") ? n.tensor("input") : n.tensor("self");
}

void aten_nearest(AtenNode& n) {
  n.emit1("upsample_nearest", {source(n)}, {{"size", output_size(n)}});
}

void aten_bilinear(AtenNode& n) {
  const std::string x = source(n);
  n.emit1("upsample_linear", {x},
          {{"size", output_size(n)},
           {"align_corners", std::int64_t{n.flag("align_corners", false) ? 1 : 0}}});
}

}  // namespace

void register_resize_aten(OpTable& t) {
  t.add_aten("upsample_nearest", {{"aten::upsample_nearest2d", aten_nearest}});
  t.add_aten("upsample_linear", {{"aten::upsample_bilinear2d", aten_bilinear}});
}

}  // namespace ckpt
