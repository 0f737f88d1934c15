#include "engine/ops/pad.hpp"

#include <stdexcept>
#include <string>
#include <vector>

#include "engine/autograd/node.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/ops/schema/onnx_support.hpp"
#include "engine/ops/schema/row_helpers.hpp"
#include "engine/tensor/reduced_float.hpp"

// Reflect, replicate and circular padding over 1 to 3 trailing dims: one gather through
// per-dimension index maps (output position -> input position), its adjoint a scatter-add.

namespace ckpt {

namespace {

// The input index each output index of one padded dim reads.
std::vector<std::int64_t> index_map(std::int64_t size, std::int64_t left, std::int64_t right,
                                    PadMode mode) {
  std::vector<std::int64_t> map(static_cast<std::size_t>(size + left + right));
  for (std::int64_t o = 0; o < size + left + right; ++o) {
    std::int64_t i = o - left;
    switch (mode) {
      case PadMode::reflect:
        if (i < 0) i = -i;
        if (i >= size) i = 2 * (size - 1) - i;
        break;
      case PadMode::replicate:
        i = std::min(std::max<std::int64_t>(i, 0), size - 1);
        break;
      case PadMode::circular:
        i = ((i % size) + size) % size;
        break;
    }
    map[static_cast<std::size_t>(o)] = i;
  }
  return map;
}

// The padded dims (the last k) as three, leading ones of size 1 (map {0}).
struct PadPlan {
  std::int64_t outer = 1;  // product of the dims not padded
  std::int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  std::vector<std::int64_t> map[3] = {{0}, {0}, {0}};
  std::int64_t in_size() const { return in[0] * in[1] * in[2]; }
  std::int64_t out_size() const { return out[0] * out[1] * out[2]; }
};

// Calls f(outer index, output offset within the block, input offset within the block).
template <typename F>
void for_each_tap(const PadPlan& p, F&& f) {
#pragma omp parallel for schedule(static) if (p.outer * p.out_size() > kParallelGrain)
  for (std::int64_t b = 0; b < p.outer; ++b)
    for (std::int64_t a = 0; a < p.out[0]; ++a)
      for (std::int64_t h = 0; h < p.out[1]; ++h)
        for (std::int64_t w = 0; w < p.out[2]; ++w)
          f(b, (a * p.out[1] + h) * p.out[2] + w,
            (p.map[0][static_cast<std::size_t>(a)] * p.in[1] +
             p.map[1][static_cast<std::size_t>(h)]) *
                    p.in[2] +
                p.map[2][static_cast<std::size_t>(w)]);
}

const char* node_name(PadMode mode, std::size_t dims) {
  static const char* reflect[] = {"ReflectionPad1DBackward0", "ReflectionPad2DBackward0",
                                  "ReflectionPad3DBackward0"};
  static const char* replicate[] = {"ReplicationPad1DBackward0", "ReplicationPad2DBackward0",
                                    "ReplicationPad3DBackward0"};
  if (mode == PadMode::circular) return "CopySlices";
  return (mode == PadMode::reflect ? reflect : replicate)[dims - 1];
}

}  // namespace

PadMode pad_mode(const std::string& name) {
  if (name == "reflect") return PadMode::reflect;
  if (name == "replicate") return PadMode::replicate;
  if (name == "circular") return PadMode::circular;
  throw std::invalid_argument("pad: mode '" + name +
                              "' is not one of reflect, replicate, circular (constant padding "
                              "is constant_pad)");
}

const char* pad_mode_name(PadMode mode) {
  switch (mode) {
    case PadMode::reflect:
      return "reflect";
    case PadMode::replicate:
      return "replicate";
    case PadMode::circular:
      return "circular";
  }
  return "";
}

Tensor pad(const Tensor& x, const Shape& pads, PadMode mode) {
  OpScope op("pad");
  const std::string fn = std::string("pad (") + pad_mode_name(mode) + ")";
  const std::size_t dims = pads.size() / 2;
  if (pads.size() % 2 != 0 || dims < 1 || dims > 3)
    throw std::invalid_argument(fn + ": expected 2, 4 or 6 pad values (1 to 3 padded dims), got " +
                                shape_str(pads));
  if (x.dim() != static_cast<std::int64_t>(dims) + 1 &&
      x.dim() != static_cast<std::int64_t>(dims) + 2)
    throw std::invalid_argument(fn + ": " + std::to_string(pads.size()) + " pad values need a " +
                                std::to_string(dims + 1) + "-D or " + std::to_string(dims + 2) +
                                "-D input, got " + x.str());
  if (!is_floating(x.dtype()))
    throw std::invalid_argument(fn + ": expected a floating-point input, got " + x.str());
  PadPlan p;
  Shape out_shape = x.shape();
  const std::size_t rank = static_cast<std::size_t>(x.dim());
  for (std::size_t i = 0; i + dims < rank; ++i) p.outer *= x.shape()[i];
  for (std::size_t k = 0; k < dims; ++k) {
    // F.pad's pair k pads the k-th dim from the end.
    const std::size_t d = rank - 1 - k, slot = 2 - k;
    const std::int64_t size = x.shape()[d], left = pads[2 * k], right = pads[2 * k + 1];
    if (left < 0 || right < 0)
      throw std::invalid_argument(fn + ": negative padding is not supported, got " +
                                  shape_str(pads));
    const bool fits = mode == PadMode::reflect    ? left < size && right < size
                      : mode == PadMode::circular ? left <= size && right <= size
                                                  : size > 0;
    if (!fits)
      throw std::invalid_argument(fn + ": padding (" + std::to_string(left) + ", " +
                                  std::to_string(right) + ") of dimension " + std::to_string(d) +
                                  " is too large for its size " + std::to_string(size) +
                                  " in input " + x.str());
    p.in[slot] = size;
    p.out[slot] = size + left + right;
    p.map[slot] = index_map(size, left, right, mode);
    out_shape[d] = p.out[slot];
  }
  const Tensor xc = as_contiguous(x);
  Tensor out = Tensor::empty(out_shape, x.dtype());
  if (!out.is_meta())
    dispatch_floating_all(x.dtype(), fn.c_str(), [&]<typename T>() {
      const T* xp = xc.data<T>();
      T* yp = out.data<T>();
      for_each_tap(p, [&](std::int64_t b, std::int64_t o, std::int64_t i) {
        yp[b * p.out_size() + o] = xp[b * p.in_size() + i];
      });
    });
  const TensorList saved = mode == PadMode::circular ? TensorList{} : TensorList{x};
  record(node_name(mode, dims), {x}, {out}, saved,
         [p, shape = x.shape()](BackwardContext& c) -> TensorList {
           const Tensor gy = as_contiguous(c.grads[0]);
           Tensor dx = Tensor::zeros(shape, gy.dtype());
           if (dx.is_meta()) return {dx};
           dispatch_floating_all(gy.dtype(), "pad backward", [&]<typename T>() {
             const T* gp = gy.data<T>();
             T* dp = dx.data<T>();
      // Parallel over blocks only: taps of one block may share an input element.
#pragma omp parallel for schedule(static) if (p.outer * p.out_size() > kParallelGrain)
             for (std::int64_t b = 0; b < p.outer; ++b) {
               for (std::int64_t a = 0; a < p.out[0]; ++a)
                 for (std::int64_t h = 0; h < p.out[1]; ++h)
                   for (std::int64_t w = 0; w < p.out[2]; ++w)
                     dp[b * p.in_size() +
                        (p.map[0][static_cast<std::size_t>(a)] * p.in[1] +
                         p.map[1][static_cast<std::size_t>(h)]) *
                            p.in[2] +
                        p.map[2][static_cast<std::size_t>(w)]] +=
                         gp[b * p.out_size() + (a * p.out[1] + h) * p.out[2] + w];
             }
           });
           return {dx};
         });
  return out;
}

namespace {

TensorList run_pad(const OpCall& n, const TensorList& x) {
  return {pad(x[0], attr_ints(n, "pads"), pad_mode(attr_string(n, "mode", "")))};
}

std::string python_pad(const OpCall& n, const std::vector<std::string>& a, const Shape&) {
  return "F.pad(" + rows::arg(a, 0) + ", " + rows::ints(attr_ints(n, "pads")) + ", mode=\"" +
         attr_string(n, "mode", "") + "\")";
}

// {"type": "pad", "pads": [left, right, ...] (F.pad's order), "mode": "reflect" | "replicate" |
// "circular"}.
ValueNames layer_pad(NativeLayerCall& c) {
  const std::string mode = c.get_string("mode", "");
  pad_mode(mode);  // a bad mode named at load
  return c.emit_op("pad", c.one(), {{"pads", c.get_int_list("pads")}, {"mode", mode}});
}

}  // namespace

void register_pad_ops(OpTable& t) {
  t.add({.type = "pad",
         .kernel = run_pad,
         .cost = rows::elementwise_cost,
         .python = python_pad,
         .onnx_patterns = circular_pad_patterns(),
         .native_layers = {{.name = "pad", .build = layer_pad}}});
}

}  // namespace ckpt
