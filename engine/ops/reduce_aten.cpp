// ATen rules of the reductions (docs/capture_format.md): over every element (.default) or over
// dims (.dim, .dim_IntList).
#include "engine/ops/schema/op_schema.hpp"

namespace ckpt {

namespace {

template <const char* Type>
void reduction(AtenNode& n) {
  const std::string x = n.tensor("self");
  if (n.has("dtype")) n.fail("a reduction with its own dtype is not supported");
  const auto dims = n.has("dim") ? n.ints("dim") : std::vector<std::int64_t>{};
  if (dims.empty() && !n.flag("keepdim", false)) {
    n.emit1(Type, {x});
    return;
  }
  std::vector<std::int64_t> all;
  for (std::int64_t d = 0; d < n.probe(x).dim(); ++d) all.push_back(d);
  n.emit1(std::string(Type) + "_dims", {x},
          {{"dims", dims.empty() ? all : dims},
           {"keepdim", std::int64_t{n.flag("keepdim", false) ? 1 : 0}}});
}

void aten_amax(AtenNode& n) {
  n.emit1("amax", {n.tensor("self")},
          {{"dims", n.ints("dim")}, {"keepdim", std::int64_t{n.flag("keepdim", false) ? 1 : 0}}});
}

// norm.ScalarOpt_dim (1.13's F.normalize, torch.norm(x, p, dim)) and 2.x's linalg_vector_norm:
// the p-norm over dims; a p of inf, 0 or below 1 is not supported.
void aten_norm(AtenNode& n) {
  if (n.has("dtype")) n.fail("a norm with its own dtype is not supported");
  const double p = n.has("p") ? n.number("p") : n.number_or("ord", 2);
  const auto dims = n.has("dim") ? n.ints("dim") : std::vector<std::int64_t>{};
  n.emit1("vector_norm", {n.tensor("self")},
          {{"p", p}, {"dims", dims}, {"keepdim", std::int64_t{n.flag("keepdim", false) ? 1 : 0}}});
}

constexpr char kMean[] = "mean", kSum[] = "sum";

}  // namespace

void register_reduce_aten(OpTable& t) {
  t.add_aten("mean_dims", {{"aten::mean", reduction<kMean>}});
  t.add_aten("sum_dims", {{"aten::sum", reduction<kSum>}});
  t.add_aten("amax", {{"aten::amax", aten_amax}});
  t.add_aten("vector_norm", {{"aten::norm", aten_norm}, {"aten::linalg_vector_norm", aten_norm}});
}

}  // namespace ckpt
