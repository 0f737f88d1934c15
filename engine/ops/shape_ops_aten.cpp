// ATen rules of the view, copy and layout ops (docs/capture_format.md). A view stays a view (the
// engine's view ops share storage as PyTorch's do), so what backward saves of it is its base.
#include <climits>

#include "engine/ops/aten_values.hpp"
#include "engine/ops/schema/op_schema.hpp"

namespace ckpt {

namespace {

// view, _unsafe_view, _reshape_alias: the recorded output shape (no -1 left to infer).
void aten_view(AtenNode& n) {
  n.emit1("view", {n.tensor("self")}, {{"shape", Shape(n.output_shape(0))}});
}
void aten_t(AtenNode& n) {
  const std::string x = n.tensor("self");
  if (n.probe(x).dim() < 2) return n.define(0, x);
  n.emit1("transpose", {x}, {{"dim0", std::int64_t{0}}, {"dim1", std::int64_t{1}}});
}
void aten_transpose(AtenNode& n) {
  n.emit1("transpose", {n.tensor("self")},
          {{"dim0", n.integer("dim0")}, {"dim1", n.integer("dim1")}});
}
void aten_permute(AtenNode& n) {
  n.emit1("permute", {n.tensor("self")}, {{"dims", n.ints("dims")}});
}
void aten_expand(AtenNode& n) {
  n.emit1("expand", {n.tensor("self")}, {{"shape", Shape(n.output_shape(0))}});
}
// clone copies; clone(memory_format=contiguous_format) of a strided value (what .contiguous()
// and reshape dispatch) is the engine's contiguous copy.
void aten_clone(AtenNode& n) {
  const std::string x = n.tensor("self");
  const bool to_contiguous =
      !n.has("memory_format") || n.text("memory_format") == "torch.contiguous_format";
  n.emit1(to_contiguous && !n.probe(x).is_contiguous() ? "contiguous" : "clone", {x});
}
void aten_slice(AtenNode& n) {
  n.emit1("slice", {n.tensor("self")},
          {{"dim", n.integer_or("dim", 0)},
           {"start", n.integer_or("start", 0)},
           {"end", n.integer_or("end", INT64_MAX)},
           {"step", n.integer_or("step", 1)}});
}
void aten_select(AtenNode& n) {
  n.emit1("select", {n.tensor("self")}, {{"dim", n.integer("dim")}, {"index", n.integer("index")}});
}
void aten_unsqueeze(AtenNode& n) {
  n.emit1("unsqueeze", {n.tensor("self")}, {{"dim", n.integer("dim")}});
}
void aten_squeeze(AtenNode& n) {
  if (!n.has("dim")) n.fail("squeeze without a dim is not supported; give the dim");
  n.emit1("squeeze", {n.tensor("self")}, {{"dim", n.integer("dim")}});
}
void aten_cat(AtenNode& n) {
  n.emit1("cat", n.tensors("tensors"), {{"dim", n.integer_or("dim", 0)}});
}
// split (equal parts, the last shorter) and split_with_sizes: one slice per output.
void aten_split(AtenNode& n) {
  const std::string x = n.tensor("self");
  const Tensor& probe = n.probe(x);
  const std::int64_t dim = wrap_dim(n.integer_or("dim", 0), probe.dim(), n.name().c_str());
  std::int64_t start = 0;
  for (std::size_t k = 0; k < n.output_count(); ++k) {
    const std::int64_t size = n.output_shape(k)[static_cast<std::size_t>(dim)];
    n.emit_op("slice", {x},
              {{"dim", dim}, {"start", start}, {"end", start + size}, {"step", std::int64_t{1}}},
              {static_cast<int>(k)});
    start += size;
  }
}
// unbind (q, k, v = qkv.unbind(0)): one select per output, views as PyTorch's are.
void aten_unbind(AtenNode& n) {
  const std::string x = n.tensor("self");
  const std::int64_t dim = n.integer_or("dim", 0);
  for (std::size_t k = 0; k < n.output_count(); ++k)
    n.emit_op("select", {x}, {{"dim", dim}, {"index", static_cast<std::int64_t>(k)}},
              {static_cast<int>(k)});
}
void aten_constant_pad(AtenNode& n) {
  const std::string x = n.tensor("self");
  const auto r = static_cast<std::size_t>(n.probe(x).dim());
  const auto pad = n.ints("pad");
  if (pad.size() % 2 != 0 || pad.size() / 2 > r) n.fail("pad must list (before, after) pairs");
  Shape before(r, 0), after(r, 0);
  for (std::size_t i = 0; i < pad.size() / 2; ++i) {
    before[r - 1 - i] = pad[2 * i];
    after[r - 1 - i] = pad[2 * i + 1];
  }
  n.emit1("constant_pad", {x},
          {{"before", before}, {"after", after}, {"value", n.number_or("value", 0)}});
}
// torch.roll (Swin's shifted windows): per rolled dim, the tail then the head, concatenated.
// It saves nothing, as RollBackward0 saves nothing; rolling two dims makes one intermediate copy
// that PyTorch's single kernel does not (a transient, never saved).
void aten_roll(AtenNode& n) {
  std::string x = n.tensor("self");
  const auto shifts = n.ints("shifts");
  const auto dims = n.has("dims") ? n.ints("dims") : std::vector<std::int64_t>{};
  if (dims.empty() || dims.size() != shifts.size())
    n.fail("roll is supported with one dim per shift (not over the flattened tensor)");
  std::vector<std::size_t> steps;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const std::int64_t size = n.probe(x).size(dims[i]);
    if (size > 0 && ((shifts[i] % size) + size) % size != 0) steps.push_back(i);
  }
  if (steps.empty()) return n.define(0, x);
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const std::size_t i = steps[k];
    const std::int64_t dim = wrap_dim(dims[i], n.probe(x).dim(), "roll");
    const std::int64_t size = n.probe(x).size(dim);
    const std::int64_t cut = size - ((shifts[i] % size) + size) % size;
    const auto part = [&](std::int64_t start, std::int64_t end) {
      return n
          .emit_op("slice", {x},
                   {{"dim", dim}, {"start", start}, {"end", end}, {"step", std::int64_t{1}}}, {-1})
          .at(0);
    };
    const std::string tail = part(cut, size), head = part(0, cut);
    const bool last = k + 1 == steps.size();
    x = n.emit_op("cat", {tail, head}, {{"dim", dim}}, {last ? 0 : -1}).at(0);
  }
}

// The same tensor under another name (lift_fresh: a constant made in the forward, 2.x).
void aten_alias(AtenNode& n) {
  n.define(0, n.tensor("self"));
}
// as_strided_ that only restrides dimensions of size 1 (PyTorch 1.13's adaptive_avg_pool2d to
// 1 x 1 of a channels-last input: the same elements in the same places) is the value itself;
// any other geometry is not supported.
void aten_restride(AtenNode& n) {
  const std::string x = n.tensor("self");
  const Tensor& probe = n.probe(x);
  const auto size = n.ints("size"), stride = n.ints("stride");
  bool same = size == probe.shape() && stride.size() == size.size() &&
              (!n.has("storage_offset") || n.integer("storage_offset") == 0);
  for (std::size_t d = 0; same && d < size.size(); ++d)
    same = size[d] == 1 || stride[d] == probe.strides()[d];
  if (!same) n.fail("as_strided_ is supported only where it restrides dimensions of size 1");
  n.define(0, x);
}

// What autograd's machinery detaches reads nothing later; a detached value the forward goes on
// using would lose its gradient in PyTorch and not in the engine: a load error when used. A
// tensor a factory made (PyTorch 1.13 detaches torch.full's result) is itself.
void aten_detach(AtenNode& n) {
  const std::string x = n.tensor("self");
  if (made_by_factories(n, x)) return n.define(0, x);
  n.define_pending(0, {{"detached", x}});
}

}  // namespace

void register_shape_ops_aten(OpTable& t) {
  t.add_aten("view", {{"aten::view", aten_view},
                      {"aten::_unsafe_view", aten_view},
                      {"aten::_reshape_alias", aten_view}});
  t.add_aten("transpose", {{"aten::t", aten_t}, {"aten::transpose", aten_transpose}});
  t.add_aten("permute", {{"aten::permute", aten_permute}});
  t.add_aten("expand", {{"aten::expand", aten_expand}});
  t.add_aten("clone", {{"aten::clone", aten_clone}});
  t.add_aten("slice", {{"aten::slice", aten_slice},
                       {"aten::split", aten_split},
                       {"aten::split_with_sizes", aten_split}});
  t.add_aten("select", {{"aten::select", aten_select}, {"aten::unbind", aten_unbind}});
  t.add_aten("unsqueeze", {{"aten::unsqueeze", aten_unsqueeze}});
  t.add_aten("squeeze", {{"aten::squeeze", aten_squeeze}});
  t.add_aten("cat", {{"aten::cat", aten_cat}, {"aten::roll", aten_roll}});
  t.add_aten("constant_pad", {{"aten::constant_pad_nd", aten_constant_pad}});
  t.add_aten("identity", {{"aten::alias", aten_alias},
                          {"aten::lift_fresh", aten_alias},
                          {"aten::as_strided_", aten_restride},
                          {"aten::detach", aten_detach}});
}

}  // namespace ckpt
