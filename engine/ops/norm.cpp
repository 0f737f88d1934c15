#include "engine/ops/norm.hpp"

#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/autograd/node.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/tensor/reduced_float.hpp"

namespace ckpt {

namespace {

// The dtype of batch norm's parameters and statistics: the input's, or float32 for a bfloat16 or
// float16 input (PyTorch's mixed-type CPU batch norm, which autocast leads to: the input comes
// from a lower-precision convolution, the module's parameters stay float32).
DType batch_norm_param_dtype(const Tensor& x, const Tensor& weight, const Tensor& running_mean) {
  const Tensor& p = weight.defined() ? weight : running_mean;
  if (p.defined() && is_reduced_floating(x.dtype()) && p.dtype() == DType::f32) return DType::f32;
  return x.dtype();
}

void check_channel_vector(const Tensor& t, const char* what, std::int64_t c, DType dtype) {
  if (!t.defined()) return;
  if (t.numel() != c)
    throw std::invalid_argument(std::string("batch_norm: ") + what + " should contain " +
                                std::to_string(c) + " elements not " + std::to_string(t.numel()));
  if (t.dtype() != dtype)
    throw std::invalid_argument(std::string("batch_norm: ") + what + " is " + t.str() +
                                ", expected " + dtype_name(dtype));
  if (!t.is_contiguous())
    throw std::invalid_argument(std::string("batch_norm: ") + what + " must be contiguous");
}

template <typename T>
const T* ptr_or_null(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

// Geometry of [N, C, S]: the channel is dim 1, S the product of the trailing dims.
struct BnShape {
  std::int64_t n, c, s;
  std::int64_t count() const { return n * s; }
};

// T: the input's and output's element type; P: the parameters' and statistics' (T, or float for
// a reduced T); M: what elements compute in (opmath).
template <typename T, typename P>
TensorList bn_backward(const Tensor& gy_in, const Tensor& x_in, const Tensor& w, const Tensor& rm,
                       const Tensor& rv, const Tensor& save_mean, const Tensor& save_invstd,
                       bool training, double eps, const BnShape& b, const std::vector<bool>& need,
                       DType param_dtype) {
  using M = opmath_t<T>;
  const Tensor gy = as_contiguous(gy_in);
  const Tensor x = as_contiguous(x_in);
  Tensor dx = need[0] ? Tensor::empty(x.shape(), x.dtype()) : Tensor();
  Tensor dw = need.size() > 1 && need[1] ? Tensor::empty({b.c}, param_dtype) : Tensor();
  Tensor db = need.size() > 2 && need[2] ? Tensor::empty({b.c}, param_dtype) : Tensor();
  if (x.is_meta()) return {dx, dw, db, Tensor(), Tensor()};  // a dry run: buffers only
  const T* gp = gy.data<T>();
  const T* xp = x.data<T>();
  const P* wp = ptr_or_null<P>(w);
  T* dxp = dx.defined() ? dx.data<T>() : nullptr;
  P* dwp = dw.defined() ? dw.data<P>() : nullptr;
  P* dbp = db.defined() ? db.data<P>() : nullptr;
  const double count = static_cast<double>(b.count());
#pragma omp parallel for schedule(static) if (b.n * b.c * b.s > kParallelGrain)
  for (std::int64_t c = 0; c < b.c; ++c) {
    double mean, invstd;
    if (training) {
      mean = static_cast<double>(save_mean.data<P>()[c]);
      invstd = static_cast<double>(save_invstd.data<P>()[c]);
    } else {
      mean = static_cast<double>(rm.data<P>()[c]);
      invstd = 1.0 / std::sqrt(static_cast<double>(rv.data<P>()[c]) + eps);
    }
    // Sums in double, as PyTorch's CPU kernel accumulates; `omp simd` lets them vectorise.
    double sum = 0, dot = 0;
    for (std::int64_t n = 0; n < b.n; ++n) {
      const T* g = gp + (n * b.c + c) * b.s;
      const T* xv = xp + (n * b.c + c) * b.s;
#pragma omp simd reduction(+ : sum, dot)
      for (std::int64_t i = 0; i < b.s; ++i) {
        sum += static_cast<double>(g[i]);
        dot += (static_cast<double>(xv[i]) - mean) * static_cast<double>(g[i]);
      }
    }
    const double wc = wp ? static_cast<double>(wp[c]) : 1.0;
    if (dxp) {
      // Training: dx = (dY - mean(dY) - (x - mean) * k) * invstd * w with k = mean(dY * xhat)
      // * invstd; eval: the statistics are constants (k = mean(dY) = 0). The mean is taken
      // from x before scaling, in that order, as PyTorch's kernel does: expanding it into
      // dY * a + x * b + d cancels catastrophically in float when |mean| >> std (DenseNet-121's
      // deep dense layers: 2 % off, against PyTorch's 2e-5).
      const M kk = static_cast<M>(training ? dot * invstd * invstd / count : 0.0);
      const M grad_mean = static_cast<M>(training ? sum / count : 0.0);
      const M mean_t = static_cast<M>(mean);
      const M scale = static_cast<M>(invstd * wc);
      for (std::int64_t n = 0; n < b.n; ++n) {
        const T* g = gp + (n * b.c + c) * b.s;
        const T* xv = xp + (n * b.c + c) * b.s;
        T* d = dxp + (n * b.c + c) * b.s;
#pragma omp simd
        for (std::int64_t i = 0; i < b.s; ++i)
          d[i] = static_cast<T>(
              (static_cast<M>(g[i]) - grad_mean - (static_cast<M>(xv[i]) - mean_t) * kk) * scale);
      }
    }
    if (dwp) dwp[c] = static_cast<P>(dot * invstd);
    if (dbp) dbp[c] = static_cast<P>(sum);
  }
  return {dx, dw, db, Tensor(), Tensor()};
}

// Channel c's batch statistics in two passes in double, as PyTorch's CPU kernel accumulates:
// the mean (rounded to its opmath type M, as it is saved) and the sum of squared deviations
// from it.
template <typename T, typename M = opmath_t<T>>
std::pair<M, double> channel_mean_and_var_sum(const T* xp, std::int64_t c, const BnShape& b) {
  const double count = static_cast<double>(b.count());
  double sum = 0;
  for (std::int64_t n = 0; n < b.n; ++n) {
    const T* xv = xp + (n * b.c + c) * b.s;
#pragma omp simd reduction(+ : sum)
    for (std::int64_t i = 0; i < b.s; ++i) sum += static_cast<M>(xv[i]);
  }
  const M mean = static_cast<M>(sum / count);
  double var_sum = 0;
  for (std::int64_t n = 0; n < b.n; ++n) {
    const T* xv = xp + (n * b.c + c) * b.s;
#pragma omp simd reduction(+ : var_sum)
    for (std::int64_t i = 0; i < b.s; ++i) {
      const M d = static_cast<M>(xv[i]) - mean;
      var_sum += d * d;
    }
  }
  return {mean, var_sum};
}

template <typename T, typename P>
void bn_forward(const Tensor& x, const Tensor& out, const Tensor& weight, const Tensor& bias,
                const Tensor& running_mean, const Tensor& running_var, const Tensor& save_mean,
                const Tensor& save_invstd, bool training, double momentum, double eps,
                const BnShape& b) {
  using M = opmath_t<T>;
  const T* xp = x.data<T>();
  T* op_ = out.data<T>();
  const P* wp = ptr_or_null<P>(weight);
  const P* bp = ptr_or_null<P>(bias);
  P* rm = running_mean.defined() ? running_mean.data<P>() : nullptr;
  P* rv = running_var.defined() ? running_var.data<P>() : nullptr;
  const double count = static_cast<double>(b.count());
#pragma omp parallel for schedule(static) if (b.n * b.c * b.s > kParallelGrain)
  for (std::int64_t c = 0; c < b.c; ++c) {
    double mean_d, invstd_d;
    if (training) {
      const auto [mean, var_sum] = channel_mean_and_var_sum(xp, c, b);
      mean_d = static_cast<double>(mean);
      invstd_d = 1.0 / std::sqrt(var_sum / count + eps);
      save_mean.data<P>()[c] = static_cast<P>(mean);
      save_invstd.data<P>()[c] = static_cast<P>(invstd_d);
      if (rm) rm[c] = static_cast<P>(momentum * mean_d + (1 - momentum) * rm[c]);
      if (rv) rv[c] = static_cast<P>(momentum * (var_sum / (count - 1)) + (1 - momentum) * rv[c]);
    } else {
      mean_d = static_cast<double>(rm[c]);
      invstd_d = 1.0 / std::sqrt(static_cast<double>(rv[c]) + eps);
    }
    // y = x * alpha + beta, alpha = invstd * w, beta = b - mean * alpha.
    const double alpha_d = invstd_d * (wp ? static_cast<double>(wp[c]) : 1.0);
    const M alpha = static_cast<M>(alpha_d);
    const M beta = static_cast<M>((bp ? static_cast<double>(bp[c]) : 0.0) - mean_d * alpha_d);
    for (std::int64_t n = 0; n < b.n; ++n) {
      const T* xv = xp + (n * b.c + c) * b.s;
      T* o = op_ + (n * b.c + c) * b.s;
#pragma omp simd
      for (std::int64_t i = 0; i < b.s; ++i)
        o[i] = static_cast<T>(static_cast<M>(xv[i]) * alpha + beta);
    }
  }
}

void check_batch_norm_state(const Tensor& x, const BnShape& b, const Tensor& weight,
                            const Tensor& bias, const Tensor& running_mean,
                            const Tensor& running_var, bool training) {
  const DType p = batch_norm_param_dtype(x, weight, running_mean);
  check_channel_vector(weight, "weight", b.c, p);
  check_channel_vector(bias, "bias", b.c, p);
  check_channel_vector(running_mean, "running_mean", b.c, p);
  check_channel_vector(running_var, "running_var", b.c, p);
  if (!training && (!running_mean.defined() || !running_var.defined()))
    throw std::invalid_argument(std::string("batch_norm: running_") +
                                (running_mean.defined() ? "var" : "mean") +
                                " must be defined in evaluation mode");
  if (training && b.count() <= 1)
    throw std::invalid_argument(
        "batch_norm: Expected more than 1 value per channel when training, got input size " +
        shape_str(x.shape()));
}

// f.template operator()<P>() with P the parameters' type: T's own, or float for a reduced T.
template <typename T, typename F>
decltype(auto) with_param_type(DType param_dtype, F&& f) {
  if constexpr (is_reduced_v<T>) {
    if (param_dtype == DType::f32) return f.template operator()<float>();
  }
  return f.template operator()<T>();
}

// In-place updates of model state move its version on, as PyTorch's do.
void bump_tracked_state(const Tensor& running_mean, const Tensor& running_var,
                        const Tensor& num_batches_tracked) {
  if (running_mean.defined()) running_mean.bump_version();
  if (running_var.defined()) running_var.bump_version();
  if (num_batches_tracked.defined()) {
    if (num_batches_tracked.dtype() != DType::i64 || num_batches_tracked.numel() != 1)
      throw std::invalid_argument(
          "batch_norm: num_batches_tracked must be a one-element int64 "
          "tensor, got " +
          num_batches_tracked.str());
    if (!num_batches_tracked.is_meta()) num_batches_tracked.data<std::int64_t>()[0] += 1;
    num_batches_tracked.bump_version();
  }
}

}  // namespace

Tensor batch_norm(const Tensor& x_in, const Tensor& weight, const Tensor& bias,
                  const Tensor& running_mean, const Tensor& running_var, bool training,
                  double momentum, double eps, const Tensor& num_batches_tracked) {
  OpScope op("batch_norm");
  if (x_in.dim() < 2)
    throw std::invalid_argument(
        "batch_norm: expected an input of at least 2 dims [N, C, ...], got " + x_in.str());
  if (!is_floating(x_in.dtype()))
    throw std::invalid_argument("batch_norm: expected a floating-point input, got " + x_in.str());
  const Tensor x = as_contiguous(x_in);
  BnShape b{x.shape()[0], x.shape()[1], 1};
  for (std::size_t d = 2; d < x.shape().size(); ++d) b.s *= x.shape()[d];
  check_batch_norm_state(x, b, weight, bias, running_mean, running_var, training);

  const DType param_dtype = batch_norm_param_dtype(x, weight, running_mean);
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  Tensor save_mean, save_invstd;
  if (training) {
    save_mean = Tensor::empty({b.c}, param_dtype);
    save_invstd = Tensor::empty({b.c}, param_dtype);
  }
  if (!out.is_meta())
    dispatch_floating_all(x.dtype(), "batch_norm", [&]<typename T>() {
      with_param_type<T>(param_dtype, [&]<typename P>() {
        bn_forward<T, P>(x, out, weight, bias, running_mean, running_var, save_mean, save_invstd,
                         training, momentum, eps, b);
      });
    });
  if (training) bump_tracked_state(running_mean, running_var, num_batches_tracked);
  record(
      "NativeBatchNormBackward0", {x_in, weight, bias}, {out},
      {x_in, weight, running_mean, running_var, save_mean, save_invstd},
      [training, eps, b, param_dtype](BackwardContext& c) -> TensorList {
        const auto& s = c.saved;
        return dispatch_floating_all(c.grads[0].dtype(), "batch_norm backward", [&]<typename T>() {
          return with_param_type<T>(param_dtype, [&]<typename P>() {
            TensorList r = bn_backward<T, P>(c.grads[0], s[0], s[1], s[2], s[3], s[4], s[5],
                                             training, eps, b, c.needs_input_grad, param_dtype);
            r.resize(3);
            return r;
          });
        });
      });
  return out;
}

namespace {

void check_layer_norm_args(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                           const Tensor& bias) {
  const auto nd = x.dim();
  const auto nn = static_cast<std::int64_t>(normalized_shape.size());
  bool matches = nn >= 1 && nd >= nn;
  for (std::int64_t i = 0; matches && i < nn; ++i)
    matches = x.shape()[static_cast<std::size_t>(nd - nn + i)] ==
              normalized_shape[static_cast<std::size_t>(i)];
  if (!matches) {
    std::string expected = "[*";
    for (auto d : normalized_shape) expected += ", " + std::to_string(d);
    throw std::invalid_argument("layer_norm: Given normalized_shape=" +
                                shape_str(normalized_shape) + ", expected input with shape " +
                                expected + "], but got input of size" + shape_str(x.shape()));
  }
  for (const Tensor* t : {&weight, &bias})
    if (t->defined() && t->shape() != normalized_shape)
      throw std::invalid_argument(
          std::string("layer_norm: Expected ") + (t == &weight ? "weight" : "bias") +
          " to be of same shape as normalized_shape, but got " +
          (t == &weight ? "weight" : "bias") + " of shape " + shape_str(t->shape()) +
          " and normalized_shape = " + shape_str(normalized_shape));
  if (!is_floating(x.dtype()))
    throw std::invalid_argument("layer_norm: expected a floating-point input, got " + x.str());
  // PyTorch 1.13's CPU layer_norm has no mixed-type kernel (its batch_norm has): a bfloat16 input
  // with float32 parameters (a lower-precision op's output fed to nn.LayerNorm under CPU
  // autocast) fails there as here. CUDA's autocast runs layer_norm in float32 instead.
  for (const Tensor* t : {&weight, &bias})
    if (t->defined() && t->dtype() != x.dtype())
      throw std::invalid_argument(std::string("layer_norm: expected scalar type ") +
                                  dtype_name(x.dtype()) + " but found " + dtype_name(t->dtype()) +
                                  " (the " + (t == &weight ? "weight" : "bias") + " is " +
                                  t->str() + ", the input " + x.str() +
                                  "; PyTorch 1.13's CPU layer_norm fails the same way)");
}

template <typename T>
void layer_norm_forward(const Tensor& x, const Tensor& w, const Tensor& bb, const Tensor& out,
                        const Tensor& mean, const Tensor& rstd, std::int64_t rows, std::int64_t m,
                        double eps) {
  const T* xp = x.data<T>();
  const T* wp = ptr_or_null<T>(w);
  const T* bp = ptr_or_null<T>(bb);
  T* op_ = out.data<T>();
  T* mp = mean.data<T>();
  T* rp = rstd.data<T>();
#pragma omp parallel for schedule(static) if (rows * m > kParallelGrain)
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* xv = xp + r * m;
    double sum = 0;
    for (std::int64_t i = 0; i < m; ++i) sum += xv[i];
    const double mu = sum / static_cast<double>(m);
    double var = 0;
    for (std::int64_t i = 0; i < m; ++i) {
      const double d = xv[i] - mu;
      var += d * d;
    }
    const double rs = 1.0 / std::sqrt(var / static_cast<double>(m) + eps);
    mp[r] = static_cast<T>(mu);
    rp[r] = static_cast<T>(rs);
    T* o = op_ + r * m;
    for (std::int64_t i = 0; i < m; ++i) {
      double y = (xv[i] - mu) * rs;
      if (wp) y *= wp[i];
      if (bp) y += bp[i];
      o[i] = static_cast<T>(y);
    }
  }
}

// What layer_norm's backward reads, `rows` rows of `m` elements. In a dry run (meta, `live`
// false) the pointers are null: the same tensors are made and the loops skipped.
template <typename T>
struct LayerNormGradInputs {
  const T* grad;
  const T* x;
  const T* weight;  // null without a weight
  const T* mean;
  const T* rstd;
  std::int64_t rows, m;
  bool live;
};

template <typename T>
Tensor layer_norm_input_grad(const LayerNormGradInputs<T>& in, const Tensor& x) {
  const std::int64_t rows = in.rows, m = in.m;
  Tensor dx = Tensor::empty(x.shape(), x.dtype());
  T* dp = data_or_null<T>(dx, in.live);
  const T* wp = in.weight;
#pragma omp parallel for schedule(static) if (rows * m > kParallelGrain)
  for (std::int64_t row = 0; row < (in.live ? rows : 0); ++row) {
    const T* g = in.grad + row * m;
    const T* xv = in.x + row * m;
    const double mu = in.mean[row], rs = in.rstd[row];
    // dx = rs * (g*w - mean(g*w) - xhat * mean(g*w*xhat))
    double sg = 0, sgx = 0;
    for (std::int64_t i = 0; i < m; ++i) {
      const double gw = wp ? static_cast<double>(g[i]) * wp[i] : g[i];
      sg += gw;
      sgx += gw * (xv[i] - mu) * rs;
    }
    const double inv_m = 1.0 / static_cast<double>(m);
    T* d = dp + row * m;
    for (std::int64_t i = 0; i < m; ++i) {
      const double gw = wp ? static_cast<double>(g[i]) * wp[i] : g[i];
      const double xhat = (xv[i] - mu) * rs;
      d[i] = static_cast<T>(rs * (gw - sg * inv_m - xhat * sgx * inv_m));
    }
  }
  return dx;
}

template <typename T>
void layer_norm_param_grads(const LayerNormGradInputs<T>& in, const Shape& param_shape, DType dtype,
                            bool need_w, bool need_b, TensorList& r) {
  std::vector<double> dw(static_cast<std::size_t>(in.m), 0.0), db(dw.size(), 0.0);
  for (std::int64_t row = 0; row < (in.live ? in.rows : 0); ++row) {
    const T* g = in.grad + row * in.m;
    const T* xv = in.x + row * in.m;
    const double mu = in.mean[row], rs = in.rstd[row];
    for (std::int64_t i = 0; i < in.m; ++i) {
      dw[static_cast<std::size_t>(i)] += g[i] * (xv[i] - mu) * rs;
      db[static_cast<std::size_t>(i)] += g[i];
    }
  }
  if (need_w) r[1] = Tensor::from_vector(dw, param_shape);
  if (need_b) r[2] = Tensor::from_vector(db, param_shape);
  if (dtype != DType::f64) {
    if (need_w) r[1] = cast_raw(r[1], dtype);
    if (need_b) r[2] = cast_raw(r[2], dtype);
  }
}

// Saved: x, weight, bias, mean, rstd.
TensorList layer_norm_backward(BackwardContext& c, std::int64_t rows, std::int64_t m) {
  const Tensor gy = as_contiguous(c.grads[0]);
  const Tensor x = as_contiguous(c.saved[0]);
  const Tensor& w = c.saved[1];
  const auto& need = c.needs_input_grad;
  TensorList r(3);
  dispatch_floating_all(gy.dtype(), "layer_norm backward", [&]<typename T>() {
    const bool live = !gy.is_meta();
    const Tensor wc = w.defined() ? as_contiguous(w) : Tensor();
    auto data = [live](const Tensor& t) { return data_or_null<T>(t, live); };
    const LayerNormGradInputs<T> in{data(gy),         data(x), data(wc), data(c.saved[3]),
                                    data(c.saved[4]), rows,    m,        live};
    if (need[0]) r[0] = layer_norm_input_grad(in, x);
    const bool need_w = need.size() > 1 && need[1];
    const bool need_b = need.size() > 2 && need[2];
    if (need_w || need_b)
      layer_norm_param_grads(in, c.saved[1].defined() ? c.saved[1].shape() : c.saved[2].shape(),
                             gy.dtype(), need_w, need_b, r);
  });
  return r;
}

}  // namespace

Tensor layer_norm(const Tensor& x_in, const Shape& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  OpScope op("layer_norm");
  check_layer_norm_args(x_in, normalized_shape, weight, bias);
  const auto nn = static_cast<std::int64_t>(normalized_shape.size());
  const Tensor x = as_contiguous(x_in);
  const Tensor w = weight.defined() ? as_contiguous(weight) : Tensor();
  const Tensor bb = bias.defined() ? as_contiguous(bias) : Tensor();
  const std::int64_t m = shape_numel(normalized_shape);
  const std::int64_t rows = m == 0 ? 0 : x.numel() / m;
  Shape stat_shape(x.shape().begin(), x.shape().end() - nn);
  for (std::int64_t i = 0; i < nn; ++i) stat_shape.push_back(1);
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  Tensor mean = Tensor::empty(stat_shape, x.dtype());
  Tensor rstd = Tensor::empty(stat_shape, x.dtype());
  if (!out.is_meta())
    dispatch_floating_all(x.dtype(), "layer_norm", [&]<typename T>() {
      layer_norm_forward<T>(x, w, bb, out, mean, rstd, rows, m, eps);
    });
  record("NativeLayerNormBackward0", {x_in, weight, bias}, {out}, {x_in, weight, bias, mean, rstd},
         [rows, m](BackwardContext& c) { return layer_norm_backward(c, rows, m); });
  return out;
}

}  // namespace ckpt
