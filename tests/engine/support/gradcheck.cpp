#include "gradcheck.hpp"

#include <cmath>
#include <sstream>

#include "engine/kernels/kernels.hpp"
#include "engine/tensor/generator.hpp"

namespace ckpt::testing {

Tensor random_leaf(const Shape& shape, std::uint64_t seed, double lo, double hi) {
  Generator g(seed);
  std::vector<double> v(static_cast<std::size_t>(shape_numel(shape)));
  for (auto& x : v) x = lo + (hi - lo) * g.uniform();
  Tensor t = Tensor::from_vector(v, shape);
  t.set_requires_grad(true);
  return t;
}

GradcheckResult gradcheck(const Fn& f, const TensorList& inputs, double eps) {
  Tensor probe;
  {
    NoGradGuard ng;
    probe = f(inputs);
  }
  Generator g(1234);
  std::vector<double> wv(static_cast<std::size_t>(probe.numel()));
  for (auto& x : wv) x = g.uniform() + 0.5;
  const Tensor w = Tensor::from_vector(wv, probe.shape());
  auto objective = [&](const TensorList& xs) { return sum(mul(f(xs), w)); };

  TensorList wrt;
  for (const auto& t : inputs)
    if (t.requires_grad()) wrt.push_back(t);
  const TensorList analytic = grad({objective(inputs)}, wrt, {}, false, true);

  GradcheckResult r;
  std::size_t k = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].requires_grad()) continue;
    const Tensor& x = inputs[i];
    const std::vector<double> a =
        analytic[k].defined() ? analytic[k].to_vector() : std::vector<double>(x.numel(), 0.0);
    ++k;
    double* data = x.data<double>();
    if (!x.is_contiguous()) throw std::logic_error("gradcheck: inputs must be contiguous leaves");
    for (std::int64_t e = 0; e < x.numel(); ++e) {
      const double orig = data[e];
      double plus, minus;
      {
        NoGradGuard ng;
        data[e] = orig + eps;
        plus = objective(inputs).item();
        data[e] = orig - eps;
        minus = objective(inputs).item();
        data[e] = orig;
      }
      const double numeric = (plus - minus) / (2 * eps);
      const double abs_err = std::abs(numeric - a[static_cast<std::size_t>(e)]);
      const double rel_err = abs_err / std::max(1e-12, std::abs(numeric));
      if (abs_err > r.max_abs_error && rel_err > 1e-4) {
        r.max_abs_error = abs_err;
        r.max_rel_error = rel_err;
        std::ostringstream os;
        os << "input " << i << " element " << e << ": analytic " << a[static_cast<std::size_t>(e)]
           << ", numeric " << numeric;
        r.where = os.str();
      }
    }
  }
  return r;
}

}  // namespace ckpt::testing
