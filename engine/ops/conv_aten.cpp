// ATen rules of the convolutions over 1, 2 and 3 spatial dims (docs/capture_format.md): the
// engine's rank-generic rows.
#include "engine/ops/schema/op_schema.hpp"

namespace ckpt {

namespace {

void aten_convolution(AtenNode& n) {
  const std::string x = n.tensor("input");
  const auto rank = n.probe(x).dim();
  if (rank < 3 || rank > 5)
    n.fail(
        "convolutions over 1, 2 or 3 spatial dims (3-d to 5-d inputs) are supported; this "
        "input is " +
        shape_str(n.probe(x).shape()));
  Attributes a{{"stride", n.ints("stride")},
               {"padding", n.ints("padding")},
               {"dilation", n.ints("dilation")},
               {"groups", n.integer_or("groups", 1)}};
  const std::vector<std::string> in{x, n.tensor("weight"), n.has("bias") ? n.tensor("bias") : ""};
  if (n.flag("transposed", false)) {
    a["output_padding"] = n.ints("output_padding");
    n.emit1("conv_transpose", in, std::move(a));
    return;
  }
  n.emit1("conv", in, std::move(a));
}

}  // namespace

void register_conv_aten(OpTable& t) {
  t.add_aten("conv", {{"aten::convolution", aten_convolution}});
}

}  // namespace ckpt
