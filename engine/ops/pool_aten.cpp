// ATen rules of the poolings over 2 and 3 spatial dims (docs/capture_format.md), the engine's
// rank-generic rows. max_pool*_with_indices' indices are for autograd only: the engine's max_pool2d
// keeps them inside, as PyTorch's backward does.
#include "engine/ops/schema/op_schema.hpp"

namespace ckpt {

namespace {

std::vector<std::int64_t> stride_or_kernel(const AtenNode& n) {
  const auto s = n.has("stride") ? n.ints("stride") : std::vector<std::int64_t>{};
  return s.empty() ? n.ints("kernel_size") : s;
}

void aten_max_pool2d(AtenNode& n) {
  n.emit1("max_pool", {n.tensor("self")},
          {{"kernel", n.ints("kernel_size")},
           {"stride", stride_or_kernel(n)},
           {"padding", n.ints("padding")},
           {"dilation", n.ints("dilation")},
           {"ceil_mode", std::int64_t{n.flag("ceil_mode", false) ? 1 : 0}}});
}
void aten_avg_pool2d(AtenNode& n) {
  if (n.has("divisor_override")) n.fail("avg_pool2d's divisor_override is not supported");
  n.emit1("avg_pool", {n.tensor("self")},
          {{"kernel", n.ints("kernel_size")},
           {"stride", stride_or_kernel(n)},
           {"padding", n.ints("padding")},
           {"ceil_mode", std::int64_t{n.flag("ceil_mode", false) ? 1 : 0}},
           {"count_include_pad", std::int64_t{n.flag("count_include_pad", true) ? 1 : 0}}});
}
void aten_adaptive_avg_pool2d(AtenNode& n) {
  n.emit1("adaptive_avg_pool", {n.tensor("self")}, {{"output_size", n.ints("output_size")}});
}
// adaptive_max_pool2d/3d's indices, like max_pool's, stay inside the engine's op.
void aten_adaptive_max_pool(AtenNode& n) {
  n.emit1("adaptive_max_pool", {n.tensor("self")}, {{"output_size", n.ints("output_size")}});
}

}  // namespace

void register_pool_aten(OpTable& t) {
  t.add_aten("max_pool", {{"aten::max_pool2d_with_indices", aten_max_pool2d},
                          {"aten::max_pool3d_with_indices", aten_max_pool2d}});
  t.add_aten("avg_pool",
             {{"aten::avg_pool2d", aten_avg_pool2d}, {"aten::avg_pool3d", aten_avg_pool2d}});
  t.add_aten("adaptive_avg_pool", {{"aten::_adaptive_avg_pool2d", aten_adaptive_avg_pool2d},
                                   {"aten::_adaptive_avg_pool3d", aten_adaptive_avg_pool2d}});
  t.add_aten("adaptive_max_pool", {{"aten::adaptive_max_pool2d", aten_adaptive_max_pool},
                                   {"aten::adaptive_max_pool3d", aten_adaptive_max_pool}});
}

}  // namespace ckpt
