#include "engine/ops/group_norm.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include "engine/autograd/node.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/ops/norm.hpp"
#include "engine/ops/schema/onnx_pattern.hpp"
#include "engine/ops/schema/row_helpers.hpp"
#include "engine/ops/shape_ops.hpp"
#include "engine/tensor/init.hpp"
#include "engine/tensor/reduced_float.hpp"

namespace ckpt {

namespace {

// [N, C, *] as N images of G groups of C/G channels of `inner` elements.
struct Groups {
  std::int64_t n, c, g, inner;
  std::int64_t channels() const { return c / g; }
  std::int64_t size() const { return channels() * inner; }  // elements of one (image, group)
};

template <typename T>
void forward_t(const Tensor& x, const Tensor& w, const Tensor& b, const Groups& s, double eps,
               Tensor& y, Tensor& mean, Tensor& rstd) {
  const T* xp = x.data<T>();
  const T* wp = w.defined() ? w.data<T>() : nullptr;
  const T* bp = b.defined() ? b.data<T>() : nullptr;
  T* yp = y.data<T>();
  T* mp = mean.data<T>();
  T* rp = rstd.data<T>();
#pragma omp parallel for schedule(static) if (s.n * s.c * s.inner > kParallelGrain)
  for (std::int64_t ng = 0; ng < s.n * s.g; ++ng) {
    const T* in = xp + ng * s.size();
    double sum = 0, sq = 0;
    for (std::int64_t i = 0; i < s.size(); ++i) sum += static_cast<double>(in[i]);
    const double mu = sum / static_cast<double>(s.size());
    for (std::int64_t i = 0; i < s.size(); ++i) {
      const double d = static_cast<double>(in[i]) - mu;
      sq += d * d;
    }
    const double r = 1.0 / std::sqrt(sq / static_cast<double>(s.size()) + eps);
    mp[ng] = static_cast<T>(mu);
    rp[ng] = static_cast<T>(r);
    const std::int64_t c0 = (ng % s.g) * s.channels();
    T* out = yp + ng * s.size();
    for (std::int64_t k = 0; k < s.channels(); ++k) {
      const double scale = wp ? static_cast<double>(wp[c0 + k]) : 1.0;
      const double shift = bp ? static_cast<double>(bp[c0 + k]) : 0.0;
      for (std::int64_t i = k * s.inner; i < (k + 1) * s.inner; ++i)
        out[i] = static_cast<T>((static_cast<double>(in[i]) - mu) * r * scale + shift);
    }
  }
}

// dx = rstd * (dy*w - mean(dy*w) - xhat * mean(dy*w * xhat)) per (image, group); dw and db
// summed over images and the trailing dims.
template <typename T>
TensorList backward_t(const Tensor& gy, const Tensor& x, const Tensor& w, const Tensor& mean,
                      const Tensor& rstd, const Groups& s, const std::vector<bool>& need,
                      bool has_bias) {
  const T* gp = gy.data<T>();
  const T* xp = x.data<T>();
  const T* wp = w.defined() ? w.data<T>() : nullptr;
  const T* mp = mean.data<T>();
  const T* rp = rstd.data<T>();
  TensorList r(3);
  if (need[0]) {
    r[0] = Tensor::empty(x.shape(), x.dtype());
    T* dx = r[0].data<T>();
#pragma omp parallel for schedule(static) if (s.n * s.c * s.inner > kParallelGrain)
    for (std::int64_t ng = 0; ng < s.n * s.g; ++ng) {
      const std::int64_t c0 = (ng % s.g) * s.channels(), base = ng * s.size();
      const double mu = static_cast<double>(mp[ng]), rs = static_cast<double>(rp[ng]);
      double a = 0, bsum = 0;  // sum(dy*w), sum(dy*w*xhat)
      for (std::int64_t k = 0; k < s.channels(); ++k) {
        const double wk = wp ? static_cast<double>(wp[c0 + k]) : 1.0;
        for (std::int64_t i = base + k * s.inner; i < base + (k + 1) * s.inner; ++i) {
          const double g = static_cast<double>(gp[i]) * wk;
          a += g;
          bsum += g * (static_cast<double>(xp[i]) - mu) * rs;
        }
      }
      const double count = static_cast<double>(s.size());
      a /= count;
      bsum /= count;
      for (std::int64_t k = 0; k < s.channels(); ++k) {
        const double wk = wp ? static_cast<double>(wp[c0 + k]) : 1.0;
        for (std::int64_t i = base + k * s.inner; i < base + (k + 1) * s.inner; ++i) {
          const double xhat = (static_cast<double>(xp[i]) - mu) * rs;
          dx[i] = static_cast<T>(rs * (static_cast<double>(gp[i]) * wk - a - xhat * bsum));
        }
      }
    }
  }
  const bool dw = w.defined() && need.size() > 1 && need[1];
  const bool db = has_bias && need.size() > 2 && need[2];
  if (dw || db) {
    Tensor gw = dw ? Tensor::empty({s.c}, x.dtype()) : Tensor();
    Tensor gb = db ? Tensor::empty({s.c}, x.dtype()) : Tensor();
#pragma omp parallel for schedule(static) if (s.n * s.c * s.inner > kParallelGrain)
    for (std::int64_t c = 0; c < s.c; ++c) {
      double sw = 0, sb = 0;
      for (std::int64_t n = 0; n < s.n; ++n) {
        const std::int64_t ng = n * s.g + c / s.channels();
        const double mu = static_cast<double>(mp[ng]), rs = static_cast<double>(rp[ng]);
        const std::int64_t base = (n * s.c + c) * s.inner;
        for (std::int64_t i = base; i < base + s.inner; ++i) {
          const double g = static_cast<double>(gp[i]);
          sb += g;
          sw += g * (static_cast<double>(xp[i]) - mu) * rs;
        }
      }
      if (dw) gw.data<T>()[c] = static_cast<T>(sw);
      if (db) gb.data<T>()[c] = static_cast<T>(sb);
    }
    r[1] = gw;
    r[2] = gb;
  }
  return r;
}

}  // namespace

Tensor group_norm(const Tensor& x_in, std::int64_t num_groups, const Tensor& weight,
                  const Tensor& bias, double eps) {
  OpScope op("group_norm");
  if (x_in.dim() < 2)
    throw std::invalid_argument(
        "group_norm: Expected at least 2 dimensions for input tensor "
        "but received " +
        std::to_string(x_in.dim()));
  if (!is_floating(x_in.dtype()) || is_reduced_floating(x_in.dtype()))
    throw std::invalid_argument("group_norm: expected a float32 or float64 input, got " +
                                x_in.str());
  Groups s{x_in.shape()[0], x_in.shape()[1], num_groups, 1};
  for (std::int64_t d = 2; d < x_in.dim(); ++d)
    s.inner *= x_in.shape()[static_cast<std::size_t>(d)];
  if (num_groups <= 0 || s.c % num_groups != 0)
    throw std::invalid_argument(
        "group_norm: Expected number of channels in input to be "
        "divisible by num_groups, but got input of shape " +
        shape_str(x_in.shape()) + " and num_groups=" + std::to_string(num_groups));
  for (const Tensor* p : {&weight, &bias})
    if (p->defined() && (p->dim() != 1 || p->shape()[0] != s.c || p->dtype() != x_in.dtype()))
      throw std::invalid_argument("group_norm: Expected weight and bias of " + std::to_string(s.c) +
                                  " elements of " + x_in.str() + "'s dtype, got " + p->str());
  const Tensor x = as_contiguous(x_in);
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  Tensor mean = Tensor::empty({s.n, s.g}, x.dtype());
  Tensor rstd = Tensor::empty({s.n, s.g}, x.dtype());
  if (!y.is_meta())
    dispatch_floating(x.dtype(), "group_norm",
                      [&]<typename T>() { forward_t<T>(x, weight, bias, s, eps, y, mean, rstd); });
  TensorList inputs{x_in, weight, bias};
  record("NativeGroupNormBackward0", inputs, {y}, {x_in, weight, mean, rstd},
         [s, has_bias = bias.defined()](BackwardContext& c) -> TensorList {
           const Tensor gy = as_contiguous(c.grads[0]);
           const Tensor x = as_contiguous(c.saved[0]);
           if (gy.is_meta()) {
             TensorList r(3);
             if (c.needs_input_grad[0]) r[0] = Tensor::empty(x.shape(), x.dtype());
             if (c.saved[1].defined() && c.needs_input_grad[1])
               r[1] = Tensor::empty({s.c}, x.dtype());
             if (has_bias && c.needs_input_grad[2]) r[2] = Tensor::empty({s.c}, x.dtype());
             return r;
           }
           return dispatch_floating(x.dtype(), "group_norm backward", [&]<typename T>() {
             return backward_t<T>(gy, x, c.saved[1], c.saved[2], c.saved[3], s, c.needs_input_grad,
                                  has_bias);
           });
         });
  return y;
}

Tensor instance_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  OpScope op("instance_norm");
  if (x.dim() < 3)
    throw std::invalid_argument(
        "instance_norm: expected [N, C, *] with at least one spatial "
        "dimension, got " +
        x.str());
  const std::int64_t images = x.shape()[0];
  Shape flat = x.shape();
  flat[1] *= images;
  flat[0] = 1;
  const auto repeated = [&](const Tensor& p) { return p.defined() ? repeat(p, {images}) : p; };
  const Tensor y = batch_norm(view(contiguous(x), flat), repeated(weight), repeated(bias), Tensor(),
                              Tensor(), true, 0.1, eps);
  return view(y, x.shape());
}

namespace {

TensorList run_group_norm(const OpCall& n, const TensorList& x) {
  return {group_norm(x[0], attr_int(n, "num_groups"), optional_input(x, 1), optional_input(x, 2),
                     attr_double(n, "eps", 1e-5))};
}

std::string python_group_norm(const OpCall& n, const std::vector<std::string>& a, const Shape&) {
  return "F.group_norm(" + rows::arg(a, 0) + ", " + std::to_string(attr_int(n, "num_groups")) +
         ", " + rows::arg_or_none(a, 1) + ", " + rows::arg_or_none(a, 2) +
         ", eps=" + rows::number(attr_double(n, "eps", 1e-5)) + ")";
}
std::string module_group_norm(const OpCall& n, const std::vector<Shape>& params) {
  if (params.size() < 3 || params[1].size() != 1) return "";
  return "nn.GroupNorm(" + std::to_string(attr_int(n, "num_groups")) + ", " +
         std::to_string(params[1][0]) + ", eps=" + rows::number(attr_double(n, "eps", 1e-5)) + ")";
}

// {"type": "groupnorm", "groups", "channels", "eps"}: nn.GroupNorm(groups, channels).
ValueNames layer_groupnorm(NativeLayerCall& c) {
  const std::int64_t groups = c.get_int("groups"), channels = c.get_int("channels");
  if (groups <= 0 || channels <= 0 || channels % groups)
    c.fail("\"channels\" must be a positive multiple of \"groups\"");
  ValueNames args{c.one()[0],
                  c.param("weight", {channels}, [&] { return Tensor::ones({channels}); }),
                  c.param("bias", {channels}, [&] { return Tensor::zeros({channels}); })};
  return c.emit_op("group_norm", args,
                   {{"num_groups", groups}, {"eps", c.get_double("eps", 1e-5)}});
}

// nn.GroupNorm as PyTorch exports it below opset 18: x reshaped to [N, G, -1], an
// InstanceNormalization with scale 1 and bias 0, reshaped back to x's shape, times the weight
// and plus the bias (each unsqueezed to [C, 1, ...]).
bool emit_group_norm(OnnxFusion& f) {
  const OnnxValue* x = f.value("x");
  const OnnxValue* shape = f.value("grouping");
  const OnnxValue* ones = f.value("ones");
  const OnnxValue* zeros = f.value("zeros");
  const OnnxValue* w = f.value("weight");
  const OnnxValue* b = f.value("bias");
  if (!x || x->constant || !shape || !ones || !zeros || !w || !b || x->probe.dim() < 2)
    return false;
  const auto grouping = shape->probe.to_vector();
  if (grouping.size() != 3 || grouping[0] != 0 || grouping[2] != -1) return false;
  const auto groups = static_cast<std::int64_t>(grouping[1]);
  const std::int64_t channels = x->probe.shape()[1];
  for (double v : ones->probe.to_vector())
    if (v != 1) return false;
  for (double v : zeros->probe.to_vector())
    if (v != 0) return false;
  if (ones->probe.numel() != groups || zeros->probe.numel() != groups) return false;
  if (w->probe.shape() != Shape{channels} || b->probe.shape() != Shape{channels}) return false;
  const AttrValue* eps = f.attr("normalized", "epsilon");
  const double* e = eps ? std::get_if<double>(eps) : nullptr;
  f.emit_op("group_norm", {f.operand("x"), f.operand("weight"), f.operand("bias")},
            {{"num_groups", groups}, {"eps", e ? *e : 1e-5}});
  return true;
}

// GroupNormalization (opset 18 on): scale and bias one per group at opsets 18 to 20 (the
// engine's, and 21's, are one per channel: equal when every channel is its own group, as in
// wav2vec 2.0; otherwise only the identity affine, ones and zeros, maps), per channel from 21.
void onnx_group_normalization(OnnxNode& n) {
  const std::int64_t groups = n.attr_i("num_groups", 0);
  if (n.rank() < 2)
    n.fail("GroupNormalization needs [N, C, ...], got rank " + std::to_string(n.rank()));
  const std::int64_t channels = n.input(0, "X").probe.shape()[1];
  if (groups <= 0 || channels % groups != 0)
    n.fail("num_groups " + std::to_string(groups) + " does not divide " + std::to_string(channels) +
           " channels");
  std::vector<std::string> inputs{n.input(0, "X").graph};
  const bool per_group = n.opset() < 21 && groups != channels;
  if (!per_group) {
    inputs.push_back(n.operand(1));
    inputs.push_back(n.operand(2));
  } else {
    for (std::size_t i : {std::size_t{1}, std::size_t{2}}) {
      const OnnxValue& v = n.input(i, i == 1 ? "scale" : "bias");
      bool identity = v.constant;
      if (identity)
        for (double e : v.probe.to_vector()) identity = identity && e == (i == 1 ? 1.0 : 0.0);
      if (!identity)
        n.fail(
            "a scale and bias per group (opsets 18 to 20) other than ones and zeros are not "
            "supported with " +
            std::to_string(groups) + " groups of " + std::to_string(channels / groups) +
            " channels (the engine's are per channel)");
    }
  }
  n.define(n.y(), n.emit_op("group_norm", inputs,
                            {{"num_groups", groups}, {"eps", n.attr_f("epsilon", 1e-5)}}, n.y()));
}

TensorList run_instance_norm(const OpCall& n, const TensorList& x) {
  return {
      instance_norm(x[0], optional_input(x, 1), optional_input(x, 2), attr_double(n, "eps", 1e-5))};
}

std::string python_instance_norm(const OpCall& n, const std::vector<std::string>& a, const Shape&) {
  return "F.instance_norm(" + rows::arg(a, 0) + ", weight=" + rows::arg_or_none(a, 1) +
         ", bias=" + rows::arg_or_none(a, 2) +
         ", eps=" + rows::number(attr_double(n, "eps", 1e-5)) + ")";
}

// InstanceNormalization: nn.InstanceNorm's export. Without affine PyTorch writes a scale of
// ones and a bias of zeros, which the module does not have (nor save): those are dropped.
void onnx_instance_normalization(OnnxNode& n) {
  std::vector<std::string> inputs{n.input(0, "input").graph};
  bool identity = true;
  for (std::size_t i : {std::size_t{1}, std::size_t{2}}) {
    const OnnxValue& v = n.input(i, i == 1 ? "scale" : "B");
    bool same = v.constant;
    if (same)
      for (double e : v.probe.to_vector()) same = same && e == (i == 1 ? 1.0 : 0.0);
    identity = identity && same;
  }
  if (!identity) {
    inputs.push_back(n.operand(1));
    inputs.push_back(n.operand(2));
  }
  n.define(n.y(), n.emit_op("instance_norm", inputs, {{"eps", n.attr_f("epsilon", 1e-5)}}, n.y()));
}

std::vector<OnnxPattern> group_norm_patterns() {
  using namespace pattern;
  const P x = any("x");
  const P normed =
      as("normalized", op("InstanceNormalization", {op("Reshape", {x, constant("grouping")}),
                                                    constant("ones"), constant("zeros")}));
  const P back = op("Reshape", {normed, op("Shape", {x})});
  // A second use of a name must be the same value: the two axes constants are two nodes.
  const auto unsqueezed = [](const char* name, const char* axes) {
    return one_of({op("Unsqueeze", {any(name), constant(axes)}), op("Unsqueeze", {any(name)})});
  };
  return {{.name = "GroupNorm (InstanceNormalization form)",
           .root = commutative("Add", commutative("Mul", back, unsqueezed("weight", "weight_axes")),
                               unsqueezed("bias", "bias_axes")),
           .until = 17,
           .module_class = "GroupNorm",
           .fuse = emit_group_norm}};
}

}  // namespace

void register_group_norm_ops(OpTable& t) {
  t.add({.type = "instance_norm",
         .min_inputs = 1,
         .max_inputs = 3,
         .kernel = run_instance_norm,
         .cost = rows::elementwise_cost,
         .python = python_instance_norm,
         .onnx = {{.op_type = "InstanceNormalization",
                   .translate = onnx_instance_normalization,
                   .module_class = "InstanceNormNd"}},
         .parameter_names = {"weight", "bias"},
         .autocast = {.cuda = AutocastPolicy::fp32}});
  t.add({.type = "group_norm",
         .min_inputs = 1,
         .max_inputs = 3,
         .kernel = run_group_norm,
         .cost = rows::elementwise_cost,
         .python = python_group_norm,
         .python_module = module_group_norm,
         .onnx = {{.op_type = "GroupNormalization",
                   .since = 18,
                   .translate = onnx_group_normalization,
                   .module_class = "GroupNorm"}},
         .onnx_patterns = group_norm_patterns(),
         .native_layers = {{.name = "groupnorm",
                            .module_class = "GroupNorm",
                            .parameters = true,
                            .build = layer_groupnorm}},
         .parameter_names = {"weight", "bias"},
         .autocast = {.cuda = AutocastPolicy::fp32}});
}

}  // namespace ckpt
