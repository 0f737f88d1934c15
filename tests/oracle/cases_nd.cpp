// C++ halves of the oracle cases over 1 and 3 spatial dimensions (cases_nd.py).
#include "engine/ops/ops.hpp"
#include "support/oracle_harness.hpp"

using namespace ckpt;

CKPTLAB_ORACLE_CASE(conv) {
  return {conv(c.input("x"), c.param("w"), c.attr_bool("bias") ? c.param("b") : Tensor(),
               c.attr_ints("stride"), c.attr_ints("padding"), c.attr_ints("dilation"),
               c.attr_int("groups"))};
}

CKPTLAB_ORACLE_CASE(conv_transpose) {
  return {conv_transpose(c.input("x"), c.param("w"), c.attr_bool("bias") ? c.param("b") : Tensor(),
                         c.attr_ints("stride"), c.attr_ints("padding"),
                         c.attr_ints("output_padding"), c.attr_ints("dilation"),
                         c.attr_int("groups"))};
}

CKPTLAB_ORACLE_CASE(cat) {
  return {mul(cat({c.input("cache"), c.input("chunk"), c.input("more")}, 1), 1.5)};
}

CKPTLAB_ORACLE_CASE(max_pool) {
  return {max_pool(c.input("x"), static_cast<int>(c.attr_int("dims")), c.attr_ints("kernel"),
                   c.attr_ints("stride"), c.attr_ints("padding"), c.attr_ints("dilation"),
                   c.attr_bool("ceil_mode"))};
}

CKPTLAB_ORACLE_CASE(avg_pool) {
  return {avg_pool(c.input("x"), static_cast<int>(c.attr_int("dims")), c.attr_ints("kernel"),
                   c.attr_ints("stride"), c.attr_ints("padding"), c.attr_bool("ceil_mode"),
                   c.attr_bool("count_include_pad"))};
}

CKPTLAB_ORACLE_CASE(adaptive_avg_pool) {
  return {
      adaptive_avg_pool(c.input("x"), static_cast<int>(c.attr_int("dims")), c.attr_ints("size"))};
}

CKPTLAB_ORACLE_CASE(adaptive_max_pool) {
  return {
      adaptive_max_pool(c.input("x"), static_cast<int>(c.attr_int("dims")), c.attr_ints("size"))};
}

CKPTLAB_ORACLE_CASE(pad) {
  return {pad(mul(c.input("x"), 1.5), c.attr_ints("pads"), pad_mode(c.attr_string("mode")))};
}

CKPTLAB_ORACLE_CASE(group_norm) {
  const bool affine = c.attr_bool("affine");
  return {group_norm(mul(c.input("x"), 1.5), c.attr_int("groups"), affine ? c.param("w") : Tensor(),
                     affine ? c.param("b") : Tensor())};
}

CKPTLAB_ORACLE_CASE(instance_norm) {
  const bool affine = c.attr_bool("affine");
  return {instance_norm(mul(c.input("x"), 1.5), affine ? c.param("w") : Tensor(),
                        affine ? c.param("b") : Tensor())};
}

CKPTLAB_ORACLE_CASE(pixel_shuffle) {
  return {pixel_shuffle(mul(c.input("x"), 1.5), c.attr_int("factor"))};
}

CKPTLAB_ORACLE_CASE(pixel_unshuffle) {
  return {pixel_unshuffle(mul(c.input("x"), 1.5), c.attr_int("factor"))};
}

CKPTLAB_ORACLE_CASE(upsample_nearest) {
  return {upsample_nearest(mul(c.input("x"), 1.5), c.attr_ints("out"))};
}

CKPTLAB_ORACLE_CASE(upsample_linear) {
  std::vector<double> scales;
  for (std::int64_t i = 0; i < c.attr_int("scale_count"); ++i)
    scales.push_back(c.attr_double("scale" + std::to_string(i)));
  return {upsample_linear(mul(c.input("x"), 1.5), c.attr_ints("out"), c.attr_bool("align_corners"),
                          scales)};
}
