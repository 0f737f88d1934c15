// ONNX ops: constant folding of shape arithmetic, and the translation of everything else into
// engine ops.
#include <algorithm>
#include <climits>
#include <cmath>
#include <functional>
#include <set>

#include "engine/model/onnx_import.hpp"
#include "engine/model/op_registry.hpp"

namespace ckpt::onnx_import {

namespace {

Tensor make(const std::vector<double>& v, const Shape& shape, DType d) {
  switch (d) {
    case DType::f32:
      return Tensor::from_vector(std::vector<float>(v.begin(), v.end()), shape);
    case DType::f64:
      return Tensor::from_vector(v, shape);
    case DType::i64: {
      std::vector<std::int64_t> w(v.size());
      for (std::size_t i = 0; i < v.size(); ++i) w[i] = static_cast<std::int64_t>(v[i]);
      return Tensor::from_vector(w, shape);
    }
  }
  return {};
}

// Index into a tensor of shape `in` broadcast to `out`, for flat output index `k`.
std::int64_t broadcast_index(const Shape& out, const Shape& in, std::int64_t k) {
  std::int64_t idx = 0, stride = 1;
  for (std::int64_t d = static_cast<std::int64_t>(out.size()) - 1; d >= 0; --d) {
    const std::int64_t coord = k % out[static_cast<std::size_t>(d)];
    k /= out[static_cast<std::size_t>(d)];
    const std::int64_t id = d - static_cast<std::int64_t>(out.size() - in.size());
    if (id < 0) continue;
    const std::int64_t size = in[static_cast<std::size_t>(id)];
    if (size != 1) idx += coord * stride;
    stride *= size;
  }
  return idx;
}

Tensor binary(const Tensor& a, const Tensor& b, const std::function<double(double, double)>& f,
              const char* op) {
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), op);
  const auto va = a.to_vector(), vb = b.to_vector();
  std::vector<double> out(static_cast<std::size_t>(shape_numel(shape)));
  for (std::size_t k = 0; k < out.size(); ++k)
    out[k] = f(va[static_cast<std::size_t>(
                   broadcast_index(shape, a.shape(), static_cast<std::int64_t>(k)))],
               vb[static_cast<std::size_t>(
                   broadcast_index(shape, b.shape(), static_cast<std::int64_t>(k)))]);
  return make(out, shape, a.dtype());
}

std::int64_t wrap_axis(std::int64_t axis, std::int64_t rank, const char* what) {
  return wrap_dim(axis, std::max<std::int64_t>(rank, 1), what);
}

// ONNX Slice's clamping of start/end for a dimension of size n.
std::pair<std::int64_t, std::int64_t> slice_bounds(std::int64_t start, std::int64_t end,
                                                   std::int64_t step, std::int64_t n) {
  auto clampi = [](std::int64_t v, std::int64_t lo, std::int64_t hi) {
    return std::max(lo, std::min(v, hi));
  };
  if (start < 0) start += n;
  if (end < 0) end += n;
  if (step > 0) return {clampi(start, 0, n), clampi(end, 0, n)};
  return {clampi(start, 0, n - 1), clampi(end, -1, n - 1)};
}

}  // namespace

std::vector<std::string> Importer::supported() {
  std::vector<std::string> s{"Add",
                             "AveragePool",
                             "BatchNormalization",
                             "Cast",
                             "Clip",
                             "Concat",
                             "Constant",
                             "ConstantOfShape",
                             "Conv",
                             "Cos",
                             "Div",
                             "Dropout",
                             "Erf",
                             "Exp",
                             "Flatten",
                             "Gather",
                             "Gemm",
                             "GlobalAveragePool",
                             "Identity",
                             "LayerNormalization",
                             "Log",
                             "LogSoftmax",
                             "MatMul",
                             "MaxPool",
                             "Mul",
                             "Neg",
                             "Pad",
                             "Pow",
                             "Range",
                             "ReduceMean",
                             "ReduceSum",
                             "Relu",
                             "Reshape",
                             "Shape",
                             "Sigmoid",
                             "Sin",
                             "Slice",
                             "Softmax",
                             "Sqrt",
                             "Squeeze",
                             "Sub",
                             "Tanh",
                             "Transpose",
                             "Unsqueeze"};
  std::sort(s.begin(), s.end());
  return s;
}

const Value& Importer::input(const onnx::NodeProto& n, const Inputs& in, std::size_t i,
                             const char* what) const {
  if (i >= in.size() || !in[i]) fail(n, std::string("needs its ") + what + " input");
  return *in[i];
}

Tensor Importer::constant_input(const onnx::NodeProto& n, const Inputs& in, std::size_t i,
                                const char* what) const {
  const Value& v = input(n, in, i, what);
  if (!v.constant)
    fail(n, std::string("its ") + what + " must be known when the model is loaded (a constant " +
                "or shape arithmetic on known shapes), but it is computed at run time");
  return v.probe;
}

std::string Importer::operand(const onnx::NodeProto& n, std::size_t i, const Inputs& in) {
  if (i >= in.size() || !in[i]) return "";
  const Value& v = *in[i];
  if (!v.constant) return v.graph;
  const std::string& name = n.input(static_cast<int>(i));
  if (!m_.constants.count(name)) {
    m_.constants[name] = v.probe;
    probes_[name] = v.probe;
  }
  return name;
}

const Value& Importer::emit_op(const onnx::NodeProto& n, const std::string& type,
                               const std::vector<std::string>& inputs, Attributes attrs,
                               const std::string& output) {
  OpNode op;
  op.name = op_name(n);
  op.op_type = type;
  op.inputs = inputs;
  op.attrs = std::move(attrs);
  op.module = module_of(n);
  op.outputs = {output.empty() ? op.name : output};
  TensorList xs;
  for (const auto& v : inputs) xs.push_back(v.empty() ? Tensor() : probes_.at(v));
  const TensorList ys = run_op_node(*find_op_kind(type), op, xs);
  if (counted_ != &n) {
    counted_ = &n;
    ++module_node_count_[op.module];
    module_op_type_[op.module] = n.op_type();
  }
  probes_[op.outputs[0]] = ys[0];
  const std::string out = op.outputs[0];
  m_.ops.push_back(std::move(op));
  Value& v = values_[out.empty() ? std::string("?") : out];
  v = Value{false, out, ys[0]};
  return v;
}

bool Importer::fold(const onnx::NodeProto& n, const Inputs& in) {
  const std::string& t = n.op_type();
  auto out = [&](Tensor value, int k = 0) {
    define(n.output(k), Value{true, "", std::move(value)});
    return true;
  };
  if (t == "Constant") {
    if (const auto* a = attr(n, "value")) return out(tensor_from_proto(a->t(), source_));
    if (const auto* a = attr(n, "value_float")) return out(Tensor::scalar(a->f()));
    if (const auto* a = attr(n, "value_int"))
      return out(Tensor::from_vector(std::vector<std::int64_t>{a->i()}, {}));
    if (const auto* a = attr(n, "value_floats"))
      return out(Tensor::from_vector(std::vector<float>(a->floats().begin(), a->floats().end()),
                                     {a->floats_size()}));
    if (const auto* a = attr(n, "value_ints"))
      return out(Tensor::from_vector(std::vector<std::int64_t>(a->ints().begin(), a->ints().end()),
                                     {a->ints_size()}));
    fail(n, "has no value this importer reads (value, value_float(s), value_int(s))");
  }
  if (t == "Shape") {
    const Shape s = input(n, in, 0, "data").probe.shape();
    const auto rank = static_cast<std::int64_t>(s.size());
    std::int64_t start = attr_i(n, "start", 0), end = attr_i(n, "end", rank);
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::clamp<std::int64_t>(start, 0, rank);
    end = std::clamp<std::int64_t>(end, start, rank);
    const std::vector<std::int64_t> dims(s.begin() + start, s.begin() + end);
    return out(Tensor::from_vector(dims, {end - start}));
  }
  // Everything else folds only when every input is known.
  static const std::set<std::string> foldable{"Identity", "Gather",  "Unsqueeze", "Squeeze",
                                              "Concat",   "Cast",    "Add",       "Sub",
                                              "Mul",      "Div",     "Pow",       "Neg",
                                              "Sqrt",     "Reshape", "Slice",     "ConstantOfShape",
                                              "Range",    "Flatten", "Transpose"};
  if (!foldable.count(t)) return false;
  for (const Value* v : in)
    if (v && !v->constant) return false;
  if (t == "ConstantOfShape") {
    const auto shape = constant_input(n, in, 0, "shape").to_vector();
    const Shape s(shape.begin(), shape.end());
    Tensor value = Tensor::scalar(0.0);
    if (const auto* a = attr(n, "value")) value = tensor_from_proto(a->t(), source_);
    return out(make(std::vector<double>(static_cast<std::size_t>(shape_numel(s)), value.item()), s,
                    value.dtype()));
  }
  if (in.empty() || !in[0]) return false;
  const Tensor& x = in[0]->probe;
  const auto rank = static_cast<std::int64_t>(x.dim());
  if (t == "Identity") return out(x);
  if (t == "Neg")
    return out(make(
        [&] {
          auto v = x.to_vector();
          for (auto& e : v) e = -e;
          return v;
        }(),
        x.shape(), x.dtype()));
  if (t == "Sqrt")
    return out(make(
        [&] {
          auto v = x.to_vector();
          for (auto& e : v) e = std::sqrt(e);
          return v;
        }(),
        x.shape(), x.dtype()));
  if (t == "Cast") {
    const auto to = attr_i(n, "to", 1);
    DType d;
    switch (to) {
      case onnx::TensorProto_DataType_FLOAT:
        d = DType::f32;
        break;
      case onnx::TensorProto_DataType_DOUBLE:
        d = DType::f64;
        break;
      case onnx::TensorProto_DataType_INT64:
      case onnx::TensorProto_DataType_INT32:
      case onnx::TensorProto_DataType_BOOL:
        d = DType::i64;
        break;
      default:
        fail(n, "casts to element type " + std::to_string(to) + ", which is not supported");
    }
    auto v = x.to_vector();
    if (to == onnx::TensorProto_DataType_BOOL)
      for (auto& e : v) e = e != 0 ? 1 : 0;
    return out(make(v, x.shape(), d));
  }
  if (t == "Add" || t == "Sub" || t == "Mul" || t == "Div" || t == "Pow") {
    const Tensor b = constant_input(n, in, 1, "second");
    const bool integer = x.dtype() == DType::i64;
    std::function<double(double, double)> f;
    if (t == "Add") f = [](double p, double q) { return p + q; };
    if (t == "Sub") f = [](double p, double q) { return p - q; };
    if (t == "Mul") f = [](double p, double q) { return p * q; };
    if (t == "Div")
      f = [integer](double p, double q) { return integer ? std::trunc(p / q) : p / q; };
    if (t == "Pow") f = [](double p, double q) { return std::pow(p, q); };
    return out(binary(x, b, f, t.c_str()));
  }
  if (t == "Unsqueeze" || t == "Squeeze") {
    std::vector<std::int64_t> axes =
        opset_ >= 13 ? (in.size() > 1 && in[1] ? [&] {
          const auto a = constant_input(n, in, 1, "axes").to_vector();
          return std::vector<std::int64_t>(a.begin(), a.end());
        }()
                                               : std::vector<std::int64_t>{})
                     : attr_ints(n, "axes");
    Shape s = x.shape();
    if (t == "Unsqueeze") {
      const auto out_rank = static_cast<std::int64_t>(s.size() + axes.size());
      for (auto& a : axes) a = wrap_axis(a, out_rank, "Unsqueeze");
      std::sort(axes.begin(), axes.end());
      for (auto a : axes) s.insert(s.begin() + a, 1);
    } else {
      if (axes.empty()) {
        s.erase(std::remove(s.begin(), s.end(), 1), s.end());
      } else {
        for (auto& a : axes) a = wrap_axis(a, rank, "Squeeze");
        std::sort(axes.rbegin(), axes.rend());
        for (auto a : axes) s.erase(s.begin() + a);
      }
    }
    return out(make(x.to_vector(), s, x.dtype()));
  }
  if (t == "Reshape" || t == "Flatten") {
    Shape s;
    if (t == "Flatten") {
      const std::int64_t axis =
          attr_i(n, "axis", 1) < 0 ? attr_i(n, "axis", 1) + rank : attr_i(n, "axis", 1);
      std::int64_t outer = 1;
      for (std::int64_t d = 0; d < axis; ++d) outer *= x.shape()[static_cast<std::size_t>(d)];
      s = {outer, x.numel() / std::max<std::int64_t>(outer, 1)};
    } else {
      const auto target = constant_input(n, in, 1, "shape").to_vector();
      s.assign(target.begin(), target.end());
      std::int64_t known = 1, infer = -1;
      for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == 0 && i < x.shape().size()) s[i] = x.shape()[i];
        if (s[i] == -1)
          infer = static_cast<std::int64_t>(i);
        else
          known *= s[i];
      }
      if (infer >= 0)
        s[static_cast<std::size_t>(infer)] = x.numel() / std::max<std::int64_t>(known, 1);
    }
    if (shape_numel(s) != x.numel()) fail(n, "cannot reshape " + x.str() + " to " + shape_str(s));
    return out(make(x.to_vector(), s, x.dtype()));
  }
  if (t == "Transpose") {
    auto perm = attr_ints(n, "perm");
    if (perm.empty())
      for (std::int64_t d = rank - 1; d >= 0; --d) perm.push_back(d);
    Shape s;
    for (auto p : perm) s.push_back(x.shape()[static_cast<std::size_t>(p)]);
    const auto v = x.to_vector();
    std::vector<double> o(v.size());
    const Strides st = contiguous_strides(x.shape());
    for (std::int64_t k = 0; k < static_cast<std::int64_t>(o.size()); ++k) {
      std::int64_t rem = k, src = 0;
      for (std::int64_t d = rank - 1; d >= 0; --d) {
        const std::int64_t c = rem % s[static_cast<std::size_t>(d)];
        rem /= s[static_cast<std::size_t>(d)];
        src += c * st[static_cast<std::size_t>(perm[static_cast<std::size_t>(d)])];
      }
      o[static_cast<std::size_t>(k)] = v[static_cast<std::size_t>(src)];
    }
    return out(make(o, s, x.dtype()));
  }
  if (t == "Concat") {
    const std::int64_t axis = wrap_axis(attr_i(n, "axis", 0), rank, "Concat");
    Shape s = x.shape();
    s[static_cast<std::size_t>(axis)] = 0;
    for (const Value* v : in)
      s[static_cast<std::size_t>(axis)] += v->probe.shape()[static_cast<std::size_t>(axis)];
    std::int64_t outer = 1, inner = 1;
    for (std::int64_t d = 0; d < axis; ++d) outer *= s[static_cast<std::size_t>(d)];
    for (std::int64_t d = axis + 1; d < rank; ++d) inner *= s[static_cast<std::size_t>(d)];
    std::vector<double> o;
    for (std::int64_t r = 0; r < outer; ++r)
      for (const Value* v : in) {
        const auto vals = v->probe.to_vector();
        const std::int64_t chunk = v->probe.shape()[static_cast<std::size_t>(axis)] * inner;
        o.insert(o.end(), vals.begin() + r * chunk, vals.begin() + (r + 1) * chunk);
      }
    return out(make(o, s, x.dtype()));
  }
  if (t == "Gather") {
    const Tensor idx = constant_input(n, in, 1, "indices");
    const std::int64_t axis = wrap_axis(attr_i(n, "axis", 0), rank, "Gather");
    Shape s(x.shape().begin(), x.shape().begin() + axis);
    s.insert(s.end(), idx.shape().begin(), idx.shape().end());
    s.insert(s.end(), x.shape().begin() + axis + 1, x.shape().end());
    const std::int64_t size = x.shape()[static_cast<std::size_t>(axis)];
    std::int64_t outer = 1, inner = 1;
    for (std::int64_t d = 0; d < axis; ++d) outer *= x.shape()[static_cast<std::size_t>(d)];
    for (std::int64_t d = axis + 1; d < rank; ++d) inner *= x.shape()[static_cast<std::size_t>(d)];
    const auto v = x.to_vector();
    std::vector<double> o;
    for (std::int64_t r = 0; r < outer; ++r)
      for (double fi : idx.to_vector()) {
        auto i = static_cast<std::int64_t>(fi);
        if (i < 0) i += size;
        if (i < 0 || i >= size)
          fail(n, "index " + std::to_string(static_cast<std::int64_t>(fi)) +
                      " is out of range for size " + std::to_string(size));
        o.insert(o.end(), v.begin() + (r * size + i) * inner,
                 v.begin() + (r * size + i + 1) * inner);
      }
    return out(make(o, s, x.dtype()));
  }
  if (t == "Slice") {
    const auto starts = constant_input(n, in, 1, "starts").to_vector();
    const auto ends = constant_input(n, in, 2, "ends").to_vector();
    std::vector<double> axes, steps;
    if (in.size() > 3 && in[3]) axes = constant_input(n, in, 3, "axes").to_vector();
    if (in.size() > 4 && in[4]) steps = constant_input(n, in, 4, "steps").to_vector();
    Tensor cur = x;
    for (std::size_t i = 0; i < starts.size(); ++i) {
      const std::int64_t axis = wrap_axis(
          axes.empty() ? static_cast<std::int64_t>(i) : static_cast<std::int64_t>(axes[i]), rank,
          "Slice");
      const std::int64_t step = steps.empty() ? 1 : static_cast<std::int64_t>(steps[i]);
      if (step <= 0) fail(n, "a non-positive slice step is not supported");
      const std::int64_t size = cur.shape()[static_cast<std::size_t>(axis)];
      const auto clampd = [](double v) {
        return v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN : static_cast<std::int64_t>(v);
      };
      const auto [b, e] = slice_bounds(clampd(starts[i]), clampd(ends[i]), step, size);
      Shape s = cur.shape();
      s[static_cast<std::size_t>(axis)] = e > b ? (e - b + step - 1) / step : 0;
      std::int64_t outer = 1, inner = 1;
      for (std::int64_t d = 0; d < axis; ++d) outer *= s[static_cast<std::size_t>(d)];
      for (std::int64_t d = axis + 1; d < rank; ++d) inner *= s[static_cast<std::size_t>(d)];
      const auto v = cur.to_vector();
      std::vector<double> o;
      for (std::int64_t r = 0; r < outer; ++r)
        for (std::int64_t j = b; j < e; j += step)
          o.insert(o.end(), v.begin() + (r * size + j) * inner,
                   v.begin() + (r * size + j + 1) * inner);
      cur = make(o, s, x.dtype());
    }
    return out(cur);
  }
  if (t == "Range") {
    const double start = x.item(), limit = constant_input(n, in, 1, "limit").item(),
                 delta = constant_input(n, in, 2, "delta").item();
    if (delta == 0) fail(n, "delta is 0");
    std::vector<double> o;
    for (double v = start; delta > 0 ? v < limit : v > limit; v += delta) o.push_back(v);
    return out(make(o, {static_cast<std::int64_t>(o.size())}, x.dtype()));
  }
  return false;
}

}  // namespace ckpt::onnx_import
