#include "engine/ops/shape_ops.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>
#include <stdexcept>

#include "engine/autograd/node.hpp"
#include "engine/kernels/kernels.hpp"

namespace ckpt {

namespace {

Shape infer_shape(const Shape& shape, std::int64_t numel, const Shape& from, const char* op) {
  Shape out = shape;
  std::int64_t known = 1;
  int infer = -1;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      if (infer >= 0)
        throw std::invalid_argument(std::string(op) + ": only one dimension can be inferred");
      infer = static_cast<int>(i);
    } else if (out[i] < 0) {
      throw std::invalid_argument(std::string(op) + ": invalid shape dimension " +
                                  std::to_string(out[i]) + " in " + shape_str(shape));
    } else if (out[i] != 0 && known > std::numeric_limits<std::int64_t>::max() / out[i]) {
      // No tensor has that many elements; multiplying on would overflow (found by
      // fuzz_onnx_model: a Reshape to [2080641, 8796093022207]).
      throw std::invalid_argument(std::string(op) + ": shape " + shape_str(shape) +
                                  " is invalid for input of shape " + shape_str(from) + " (" +
                                  std::to_string(numel) + " elements)");
    } else {
      known *= out[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || numel % known != 0)
      throw std::invalid_argument(std::string(op) + ": shape " + shape_str(shape) +
                                  " is invalid for input of size " + std::to_string(numel));
    out[static_cast<std::size_t>(infer)] = numel / known;
  }
  if (shape_numel(out) != numel)
    throw std::invalid_argument(std::string(op) + ": shape " + shape_str(shape) +
                                " is invalid for input of shape " + shape_str(from) + " (" +
                                std::to_string(numel) + " elements)");
  return out;
}

// Strides for viewing x as `shape` without copying, if its layout allows (PyTorch's
// computeStride); empty when it does not.
std::optional<Strides> view_strides(const Tensor& x, const Shape& shape) {
  if (x.is_contiguous()) return contiguous_strides(shape);
  const auto& os = x.shape();
  const auto& ost = x.strides();
  Strides ns(shape.size());
  std::int64_t view_d = static_cast<std::int64_t>(shape.size()) - 1;
  std::int64_t chunk = ost.empty() ? 1 : ost.back();
  std::int64_t tensor_numel = 1, view_numel = 1;
  for (std::int64_t td = static_cast<std::int64_t>(os.size()) - 1; td >= 0; --td) {
    tensor_numel *= os[static_cast<std::size_t>(td)];
    if (td == 0 || (os[static_cast<std::size_t>(td - 1)] != 1 &&
                    ost[static_cast<std::size_t>(td - 1)] != tensor_numel * chunk)) {
      while (view_d >= 0 &&
             (view_numel < tensor_numel || shape[static_cast<std::size_t>(view_d)] == 1)) {
        ns[static_cast<std::size_t>(view_d)] = view_numel * chunk;
        view_numel *= shape[static_cast<std::size_t>(view_d)];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (td > 0) {
        chunk = ost[static_cast<std::size_t>(td - 1)];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return ns;
}

Tensor view_backward_node(const Tensor& x, Tensor out, const char* name) {
  record(name, {x}, {out}, {}, [s = x.shape()](BackwardContext& c) -> TensorList {
    Tensor g = as_contiguous(c.grads[0]);
    return {g.alias(s, contiguous_strides(s), g.offset())};
  });
  return out;
}

}  // namespace

Tensor view(const Tensor& x, const Shape& shape_in) {
  OpScope op("view");
  const Shape shape = infer_shape(shape_in, x.numel(), x.shape(), "view");
  auto st = view_strides(x, shape);
  if (!st)
    throw std::invalid_argument(
        "view size is not compatible with input tensor's size and stride (at least one dimension "
        "spans across two contiguous subspaces). Use .reshape(...) instead.");
  return view_backward_node(x, x.alias(shape, *st, x.offset()), "ViewBackward0");
}

Tensor reshape(const Tensor& x, const Shape& shape_in) {
  OpScope op("reshape");
  const Shape shape = infer_shape(shape_in, x.numel(), x.shape(), "reshape");
  if (auto st = view_strides(x, shape))
    return view_backward_node(x, x.alias(shape, *st, x.offset()), "ViewBackward0");
  Tensor c = contiguous_copy(x);
  return view_backward_node(x, c.alias(shape, contiguous_strides(shape), 0), "UnsafeViewBackward0");
}

Tensor flatten(const Tensor& x, std::int64_t start_dim, std::int64_t end_dim) {
  if (x.dim() == 0) return reshape(x, {1});
  const auto s = wrap_dim(start_dim, x.dim(), "flatten");
  const auto e = wrap_dim(end_dim, x.dim(), "flatten");
  if (s > e) throw std::invalid_argument("flatten: start_dim cannot come after end_dim");
  Shape shape(x.shape().begin(), x.shape().begin() + s);
  std::int64_t n = 1;
  for (auto d = s; d <= e; ++d) n *= x.shape()[static_cast<std::size_t>(d)];
  shape.push_back(n);
  shape.insert(shape.end(), x.shape().begin() + e + 1, x.shape().end());
  return reshape(x, shape);
}

Tensor transpose(const Tensor& x, std::int64_t d0, std::int64_t d1) {
  OpScope op("transpose");
  Tensor out = transpose_raw(x, d0, d1);
  record("TransposeBackward0", {x}, {out}, {}, [d0, d1](BackwardContext& c) -> TensorList {
    return {transpose_raw(c.grads[0], d0, d1)};
  });
  return out;
}

Tensor permute(const Tensor& x, const std::vector<std::int64_t>& dims) {
  OpScope op("permute");
  const auto nd = x.dim();
  if (static_cast<std::int64_t>(dims.size()) != nd)
    throw std::invalid_argument(
        "permute: number of dims don't match in permute: " + std::to_string(dims.size()) +
        " given for a " + std::to_string(nd) + "-d tensor");
  Shape s(dims.size());
  Strides st(dims.size());
  std::vector<std::int64_t> inverse(dims.size(), -1);
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const auto d = static_cast<std::size_t>(wrap_dim(dims[i], nd, "permute"));
    if (d >= inverse.size()) throw std::invalid_argument("permute: dims do not fit " + x.str());
    if (inverse[d] != -1) throw std::invalid_argument("permute: repeated dim in permute");
    inverse[d] = static_cast<std::int64_t>(i);
    s[i] = x.shape()[d];
    st[i] = x.strides()[d];
  }
  Tensor out = x.alias(s, st, x.offset());
  record("PermuteBackward0", {x}, {out}, {}, [inverse](BackwardContext& c) -> TensorList {
    const Tensor& g = c.grads[0];
    Shape s2(inverse.size());
    Strides st2(inverse.size());
    for (std::size_t i = 0; i < inverse.size(); ++i) {
      s2[i] = g.shape()[static_cast<std::size_t>(inverse[i])];
      st2[i] = g.strides()[static_cast<std::size_t>(inverse[i])];
    }
    return {g.alias(s2, st2, g.offset())};
  });
  return out;
}

Tensor slice(const Tensor& x, std::int64_t dim, std::int64_t start, std::int64_t end,
             std::int64_t step) {
  OpScope op("slice");
  if (step <= 0) throw std::invalid_argument("slice: step must be positive");
  if (x.dim() == 0) throw std::invalid_argument("slice() cannot be applied to a 0-dim tensor.");
  const auto d = static_cast<std::size_t>(wrap_dim(dim, x.dim(), "slice"));
  const auto n = x.shape()[d];
  auto clampi = [n](std::int64_t v) {
    if (v < 0) v += n;
    return std::clamp<std::int64_t>(v, 0, n);
  };
  start = clampi(start);
  end = std::max(clampi(end), start);
  Shape s = x.shape();
  Strides st = x.strides();
  s[d] = (end - start + step - 1) / step;
  st[d] *= step;
  Tensor out = x.alias(s, st, x.offset() + start * x.strides()[d]);
  record("SliceBackward0", {x}, {out}, {},
         [shape = x.shape(), d, start, step](BackwardContext& c) -> TensorList {
           Tensor g = Tensor::zeros(shape, c.grads[0].dtype());
           Strides gs = g.strides();
           Shape sub = c.grads[0].shape();
           gs[d] *= step;
           Tensor region = g.alias(sub, gs, start * g.strides()[d]);
           copy_into_raw(region, c.grads[0]);
           return {g};
         });
  return out;
}

Tensor unsqueeze(const Tensor& x, std::int64_t dim) {
  const auto d = wrap_dim(dim, x.dim() + 1, "unsqueeze");
  Shape s = x.shape();
  s.insert(s.begin() + d, 1);
  return reshape(x, s);
}

Tensor squeeze(const Tensor& x, std::int64_t dim) {
  const auto d = wrap_dim(dim, x.dim(), "squeeze");
  if (x.dim() == 0 || x.shape()[static_cast<std::size_t>(d)] != 1) return x;
  Shape s = x.shape();
  s.erase(s.begin() + d);
  return reshape(x, s);
}

Tensor expand(const Tensor& x, const Shape& shape_in) {
  OpScope op("expand");
  Shape shape = shape_in;
  const std::size_t lead = shape.size() - std::min(shape.size(), x.shape().size());
  for (std::size_t i = lead; i < shape.size(); ++i)
    if (shape[i] == -1) shape[i] = x.shape()[i - lead];
  // PyTorch's messages for a size below zero.
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] >= 0) continue;
    if (i < lead)
      throw std::invalid_argument(
          "expand: the expanded size of the tensor (" + std::to_string(shape[i]) +
          ") isn't allowed in a leading, non-existing dimension " + std::to_string(i));
    throw std::invalid_argument("expand: trying to create tensor with negative dimension " +
                                std::to_string(shape[i]) + ": " + shape_str(shape_in));
  }
  Tensor out = expand_raw(x, shape);
  record("ExpandBackward0", {x}, {out}, {},
         [s = x.shape()](BackwardContext& c) -> TensorList { return {sum_to_raw(c.grads[0], s)}; });
  return out;
}

Tensor repeat(const Tensor& x, const Shape& repeats) {
  OpScope op("repeat");
  if (repeats.size() < x.shape().size())
    throw std::invalid_argument(
        "repeat: Number of dimensions of repeat dims can not be smaller than number of "
        "dimensions of tensor (" +
        shape_str(repeats) + " for " + x.str() + ")");
  for (const std::int64_t r : repeats)
    if (r < 0)
      throw std::invalid_argument("repeat: repeats must be non-negative, got " +
                                  shape_str(repeats));
  // x with leading 1s to the repeats' rank, then each dim d read as [repeats[d], size[d]]:
  // a broadcast view [r0, s0, r1, s1, ...] copied out, whose layout is the output's.
  const std::size_t lead = repeats.size() - x.shape().size();
  Shape padded(lead, 1);
  padded.insert(padded.end(), x.shape().begin(), x.shape().end());
  const Tensor xc = as_contiguous(x);
  const Strides st = contiguous_strides(padded);
  Shape pairs, out_shape;
  Strides pair_strides;
  std::vector<std::int64_t> repeat_dims;
  for (std::size_t d = 0; d < repeats.size(); ++d) {
    repeat_dims.push_back(static_cast<std::int64_t>(pairs.size()));
    pairs.insert(pairs.end(), {repeats[d], padded[d]});
    pair_strides.insert(pair_strides.end(), {0, st[d]});
    out_shape.push_back(repeats[d] * padded[d]);
  }
  Tensor copied = contiguous_copy(xc.alias(pairs, pair_strides, xc.offset()));
  Tensor out = copied.alias(out_shape, contiguous_strides(out_shape), copied.offset());
  // RepeatBackward0 keeps only the repeats and the input's sizes: it sums the copies.
  record("RepeatBackward0", {x}, {out}, {},
         [pairs, repeat_dims, shape = x.shape()](BackwardContext& c) -> TensorList {
           const Tensor g = as_contiguous(c.grads[0]);
           const Tensor summed = as_contiguous(sum_dims_raw(
               g.alias(pairs, contiguous_strides(pairs), g.offset()), repeat_dims, false));
           return {summed.alias(shape, contiguous_strides(shape), summed.offset())};
         });
  return out;
}

Tensor clone(const Tensor& x) {
  OpScope op("clone");
  Tensor out = contiguous_copy(x);
  record("CloneBackward0", {x}, {out}, {},
         [](BackwardContext& c) -> TensorList { return {c.grads[0]}; });
  return out;
}

Tensor contiguous(const Tensor& x) {
  return x.is_contiguous() ? x : clone(x);
}

bool skipped_by_cat(const Tensor& t) {
  return t.dim() == 1 && t.shape()[0] == 0;
}

Tensor cat(const std::vector<Tensor>& xs, std::int64_t dim) {
  OpScope op("cat");
  if (xs.empty()) throw std::invalid_argument("cat: expected a non-empty list of tensors");
  // PyTorch's legacy rule: 1-D empty tensors take no part (a streaming model's empty cache
  // concatenated with its first chunk); the shape comes from the first other tensor.
  std::size_t ref = 0;
  while (ref + 1 < xs.size() && skipped_by_cat(xs[ref])) ++ref;
  const auto& first = xs[ref];
  // PyTorch's words; indexing the empty shape below was undefined behaviour (found by
  // fuzz_onnx_model: Concat of scalars).
  for (std::size_t i = 0; i < xs.size(); ++i)
    if (xs[i].dim() == 0)
      throw std::invalid_argument("cat: zero-dimensional tensor (at position " + std::to_string(i) +
                                  ") cannot be concatenated");
  const auto d = static_cast<std::size_t>(wrap_dim(dim, first.dim(), "cat"));
  Shape out_shape = first.shape();
  out_shape[d] = 0;
  // Per input, its extent along d; -1 for one the legacy rule skips.
  std::vector<std::int64_t> sizes;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const auto& t = xs[i];
    if (t.dtype() != first.dtype())
      throw std::invalid_argument("cat: tensor " + std::to_string(i) + " is " + t.str() +
                                  ", expected the same dtype as " + first.str());
    if (skipped_by_cat(t) && !skipped_by_cat(first)) {
      sizes.push_back(-1);
      continue;
    }
    if (t.dim() != first.dim())
      throw std::invalid_argument("cat: tensor " + std::to_string(i) + " is " + t.str() +
                                  ", expected the same rank as " + first.str() +
                                  " (only 1-D empty tensors may differ)");
    for (std::size_t k = 0; k < out_shape.size(); ++k)
      if (k != d && t.shape()[k] != first.shape()[k])
        throw std::invalid_argument("cat: sizes of tensors must match except in dimension " +
                                    std::to_string(d) + ". Expected size " +
                                    std::to_string(first.shape()[k]) + " but got size " +
                                    std::to_string(t.shape()[k]) + " for tensor number " +
                                    std::to_string(i) + " in the list.");
    sizes.push_back(t.shape()[d]);
    out_shape[d] += t.shape()[d];
  }
  Tensor out = Tensor::empty(out_shape, first.dtype());
  std::int64_t at = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (sizes[i] < 0) continue;
    Shape sub = out_shape;
    sub[d] = sizes[i];
    Tensor region = out.alias(sub, out.strides(), at * out.strides()[d]);
    copy_into_raw(region, xs[i]);
    at += sizes[i];
  }
  record("CatBackward0", xs, {out}, {}, [sizes, d](BackwardContext& c) -> TensorList {
    TensorList r;
    std::int64_t at2 = 0;
    const Tensor& g = c.grads[0];
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      if (!c.needs_input_grad[i]) {
        r.push_back(Tensor());
      } else if (sizes[i] < 0) {
        // A skipped input's gradient is empty like it (cat_tensors_backward).
        r.push_back(Tensor::zeros({0}, g.dtype()));
      } else {
        Shape sub = g.shape();
        sub[d] = sizes[i];
        r.push_back(contiguous_copy(g.alias(sub, g.strides(), g.offset() + at2 * g.strides()[d])));
      }
      if (sizes[i] > 0) at2 += sizes[i];
    }
    return r;
  });
  return out;
}

Tensor constant_pad(const Tensor& x, const Shape& before, const Shape& after, double value) {
  OpScope op("constant_pad");
  const auto rank = static_cast<std::size_t>(x.dim());
  if (before.size() != rank || after.size() != rank)
    throw std::invalid_argument("constant_pad: " + std::to_string(before.size()) + " and " +
                                std::to_string(after.size()) + " pads for a tensor of rank " +
                                std::to_string(rank) + " (" + x.str() + ")");
  Shape out_shape = x.shape();
  std::int64_t offset = 0;
  for (std::size_t d = 0; d < rank; ++d) {
    if (before[d] < 0 || after[d] < 0)
      throw std::invalid_argument(
          "constant_pad: negative padding (cropping) is not supported, got " + shape_str(before) +
          " before and " + shape_str(after) + " after");
    out_shape[d] += before[d] + after[d];
  }
  Tensor out = Tensor::full(out_shape, value, x.dtype());
  const Strides st = out.strides();
  for (std::size_t d = 0; d < rank; ++d) offset += before[d] * st[d];
  Tensor middle = out.alias(x.shape(), st, offset);
  copy_into_raw(middle, x);
  record("ConstantPadNdBackward0", {x}, {out}, {},
         [shape = x.shape(), offset](BackwardContext& c) -> TensorList {
           const Tensor g = as_contiguous(c.grads[0]);
           return {contiguous_copy(g.alias(shape, g.strides(), g.offset() + offset))};
         });
  return out;
}

}  // namespace ckpt
