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

constexpr char kMean[] = "mean", kSum[] = "sum";

}  // namespace

void register_reduce_aten(OpTable& t) {
  t.add_aten("mean_dims", {{"aten::mean", reduction<kMean>}});
  t.add_aten("sum_dims", {{"aten::sum", reduction<kSum>}});
  t.add_aten("amax", {{"aten::amax", aten_amax}});
}

}  // namespace ckpt
