#include "engine/ops/dropout.hpp"
#include "engine/autograd/execution_context.hpp"

#include <stdexcept>
#include <string>

#include "engine/kernels/kernels.hpp"
#include "engine/ops/elementwise.hpp"

namespace ckpt {

Tensor dropout(const Tensor& x, double p, bool training, Generator* generator) {
  if (!(p >= 0.0 && p <= 1.0))
    throw std::invalid_argument("dropout: dropout probability has to be between 0 and 1, but got " +
                                std::to_string(p));
  if (p == 0.0 || !training || x.numel() == 0) return x;
  OpScope op("dropout");
  if (!is_floating(x.dtype()))
    throw std::invalid_argument("dropout: expected a floating-point input, got " + x.str());
  if (p == 1.0) return mul(x, Tensor::zeros({}, x.dtype()));
  Generator& gen = generator ? *generator : Generator::current();
  Tensor noise = Tensor::empty(x.shape(), x.dtype());
  // A dry run (meta) draws no numbers: the generator's state is the same size either way.
  if (!noise.is_meta())
    dispatch_floating(x.dtype(), "dropout", [&]<typename T>() {
      // bernoulli_(1 - p) draws one double per element, in order; then noise /= (1 - p) in T.
      const double keep = 1.0 - p;
      const T scale = T(1) / static_cast<T>(keep);
      T* np = noise.data<T>();
      const std::int64_t n = noise.numel();
      for (std::int64_t i = 0; i < n; ++i) np[i] = gen.uniform() < keep ? scale : T(0);
    });
  return mul(x, noise);
}

}  // namespace ckpt
