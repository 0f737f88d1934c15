#include "engine/ops/loss.hpp"

#include <stdexcept>

#include "engine/autograd/node.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/ops/shape_ops.hpp"
#include "engine/ops/softmax.hpp"
#include "engine/tensor/reduced_float.hpp"

namespace ckpt {

namespace {

enum class Reduction { none, mean, sum };

Reduction parse_reduction(const std::string& r, const char* op) {
  if (r == "mean") return Reduction::mean;
  if (r == "sum") return Reduction::sum;
  if (r == "none") return Reduction::none;
  throw std::invalid_argument(std::string(op) + ": " + r + " is not a valid value for reduction");
}

// The core of NllLossBackward0 / NllLoss2DBackward0 on [n, c, s] (s: spatial positions).
Tensor nll_core(const Tensor& input, const Tensor& target, Reduction red, std::int64_t ignore,
                const char* node, const Shape& none_shape) {
  const Tensor x = as_contiguous(input);
  const Tensor t = as_contiguous(target);
  const std::int64_t n = x.dim() == 1 ? 1 : x.shape()[0];
  const std::int64_t c = x.dim() == 1 ? x.shape()[0] : x.shape()[1];
  const std::int64_t s = n * c == 0 ? 0 : x.numel() / (n * c);
  // Targets are values: a dry run (meta) cannot check them, and computes nothing below.
  const bool live = !x.is_meta() && !t.is_meta();
  const std::int64_t* tp = data_or_null<std::int64_t>(t, live);
  for (std::int64_t i = 0; i < (live ? t.numel() : 0); ++i)
    if (tp[i] != ignore && (tp[i] < 0 || tp[i] >= c))
      throw std::out_of_range("nll_loss: Target " + std::to_string(tp[i]) + " is out of bounds.");
  Tensor out =
      red == Reduction::none ? Tensor::empty(none_shape, x.dtype()) : Tensor::empty({}, x.dtype());
  Tensor total_weight = Tensor::empty({}, x.dtype());
  // bf16 (FSDP2's bf16 parameters): summed in double as every dtype, rounded once on store.
  if (live)
    dispatch_floating_all(x.dtype(), "nll_loss", [&]<typename T>() {
      const T* xp = x.data<T>();
      T* op_ = out.data<T>();
      double sum = 0, count = 0;
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t p = 0; p < s; ++p) {
          const std::int64_t k = tp[i * s + p];
          const double v = k == ignore ? 0.0 : -static_cast<double>(xp[(i * c + k) * s + p]);
          if (k != ignore) count += 1;
          if (red == Reduction::none)
            op_[i * s + p] = static_cast<T>(v);
          else
            sum += v;
        }
      // PyTorch reports no total weight for an unreduced loss.
      total_weight.data<T>()[0] = static_cast<T>(red == Reduction::none ? 0.0 : count);
      if (red == Reduction::sum) op_[0] = static_cast<T>(sum);
      if (red == Reduction::mean) op_[0] = static_cast<T>(sum / count);
    });
  record(node, {input, target}, {out}, {input, target, total_weight},
         [red, ignore, n, c, s](BackwardContext& ctx) -> TensorList {
           const Tensor& x = ctx.saved[0];
           const Tensor t = as_contiguous(ctx.saved[1]);
           const Tensor g = as_contiguous(ctx.grads[0]);
           Tensor dx = Tensor::zeros(x.shape(), x.dtype());
           if (!dx.is_meta())
             dispatch_floating_all(x.dtype(), "nll_loss backward", [&]<typename T>() {
               const std::int64_t* tp2 = t.data<std::int64_t>();
               const T* gp = g.data<T>();
               T* dp = dx.data<T>();
               const T tw = ctx.saved[2].data<T>()[0];
               for (std::int64_t i = 0; i < n; ++i)
                 for (std::int64_t p = 0; p < s; ++p) {
                   const std::int64_t k = tp2[i * s + p];
                   if (k == ignore) continue;
                   T gv = red == Reduction::none ? gp[i * s + p] : gp[0];
                   if (red == Reduction::mean) gv /= tw;
                   dp[(i * c + k) * s + p] = -gv;
                 }
             });
           return {dx, Tensor()};
         });
  return out;
}

}  // namespace

Tensor nll_loss(const Tensor& input, const Tensor& target, const std::string& reduction,
                std::int64_t ignore_index) {
  OpScope op("nll_loss");
  const Reduction red = parse_reduction(reduction, "nll_loss");
  if (target.dtype() != DType::i64)
    throw std::invalid_argument("nll_loss: expected scalar type Long but found " +
                                std::string(dtype_name(target.dtype())) + " for target " +
                                target.str());
  if (!is_floating(input.dtype()))
    throw std::invalid_argument("nll_loss: expected floating-point log-probabilities, got " +
                                input.str());
  const auto nd = input.dim();
  if (nd < 1)
    throw std::invalid_argument("nll_loss: input tensor should be 1D or more, got " + input.str());
  // Target shape: input's without the class dim.
  Shape expected = input.shape();
  expected.erase(expected.begin() + (nd == 1 ? 0 : 1));
  if (nd >= 2 && (target.dim() < 1 || target.shape()[0] != input.shape()[0]))
    throw std::invalid_argument("nll_loss: Expected input batch_size (" +
                                std::to_string(input.shape()[0]) +
                                ") to match target batch_size (" +
                                std::to_string(target.dim() ? target.shape()[0] : 0) + ").");
  if (target.shape() != expected)
    throw std::invalid_argument("nll_loss: expected target of shape " + shape_str(expected) +
                                " for input " + shape_str(input.shape()) + ", got " +
                                shape_str(target.shape()));
  if (nd <= 2) {
    const Shape none_shape = nd == 1 ? Shape{} : Shape{input.shape()[0]};
    return nll_core(input, target, red, ignore_index, "NllLossBackward0", none_shape);
  }
  if (nd == 4) return nll_core(input, target, red, ignore_index, "NllLoss2DBackward0", expected);
  // 3-D and 5-D+: PyTorch folds the spatial dims into a 4-D problem through views.
  const std::int64_t n = input.shape()[0], c = input.shape()[1];
  Tensor in4 = view(contiguous(input), {n, c, 1, -1});
  Tensor t3 = view(contiguous(target), {n, 1, -1});
  Tensor out = nll_core(in4, t3, red, ignore_index, "NllLoss2DBackward0", t3.shape());
  return red == Reduction::none ? view(out, expected) : out;
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, const std::string& reduction,
                     std::int64_t ignore_index) {
  OpScope op("cross_entropy");
  parse_reduction(reduction, "cross_entropy");
  if (logits.dim() < 1)
    throw std::invalid_argument("cross_entropy: input tensor should be 1D or more, got " +
                                logits.str());
  return nll_loss(log_softmax(logits, logits.dim() == 1 ? 0 : 1), target, reduction, ignore_index);
}

Tensor mse_loss(const Tensor& x, const Tensor& target, const std::string& reduction) {
  OpScope op("mse_loss");
  const Reduction red = parse_reduction(reduction, "mse_loss");
  if (x.dtype() != target.dtype() || !is_floating(x.dtype()))
    throw std::invalid_argument("mse_loss: input " + x.str() + " and target " + target.str() +
                                " must have the same floating dtype");
  if (x.shape() != target.shape())
    warn("Using a target size (torch.Size(" + shape_str(target.shape()) +
         ")) that is different to the input size (torch.Size(" + shape_str(x.shape()) +
         ")). This will likely lead to incorrect results due to broadcasting. Please ensure they "
         "have the same size.");
  const Tensor sq = dispatch_floating(x.dtype(), "mse_loss", [&]<typename T>() {
    return binary_map<T>(
        x, target,
        [](T a, T b) {
          const T d = a - b;
          return d * d;
        },
        "mse_loss");
  });
  Tensor out;
  if (red == Reduction::none) {
    out = sq;
  } else {
    out = sum_dims_raw(sq, {}, false);
    if (red == Reduction::mean) out = mul_scalar_raw(out, 1.0 / static_cast<double>(sq.numel()));
  }
  record("MseLossBackward0", {x, target}, {out}, {x, target},
         [red, numel = sq.numel()](BackwardContext& c) -> TensorList {
           const Tensor& a = c.saved[0];
           const Tensor& b = c.saved[1];
           const double scale = red == Reduction::mean ? 2.0 / static_cast<double>(numel) : 2.0;
           // d/dx = scale * (x - t) * g, broadcast back to each operand.
           Tensor d = mul_scalar_raw(mul_raw(sub_raw(a, b), c.grads[0]), scale);
           return {
               c.needs_input_grad[0] ? sum_to_raw(d, a.shape()) : Tensor(),
               c.needs_input_grad[1] ? sum_to_raw(mul_scalar_raw(d, -1.0), b.shape()) : Tensor()};
         });
  return out;
}

}  // namespace ckpt
