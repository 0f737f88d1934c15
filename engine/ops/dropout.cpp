#include "engine/ops/dropout.hpp"
#include "engine/autograd/execution_context.hpp"

#include <stdexcept>
#include <string>

#include "engine/autograd/node.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/ops/elementwise.hpp"
#include "engine/tensor/memory_semantics.hpp"
#include "engine/tensor/reduced_float.hpp"

namespace ckpt {

namespace {

// PyTorch 1.13 on the CPU: bernoulli_(1 - p) draws one double per element, in order; then
// noise /= (1 - p) in T; output = x * noise, and MulBackward0 saves the float noise.
Tensor noise_dropout(const Tensor& x, double p, Generator& gen) {
  Tensor noise = Tensor::empty(x.shape(), x.dtype());
  // A dry run (meta) draws no numbers: the generator's state is the same size either way.
  if (!noise.is_meta())
    dispatch_floating_all(x.dtype(), "dropout", [&]<typename T>() {
      // A reduced T divides in float and rounds once.
      using M = opmath_t<T>;
      const double keep = 1.0 - p;
      const T scale = static_cast<T>(M(1) / static_cast<M>(keep));
      T* np = noise.data<T>();
      const std::int64_t n = noise.numel();
      for (std::int64_t i = 0; i < n; ++i) np[i] = gen.uniform() < keep ? scale : T(0);
    });
  return mul(x, noise);
}

// PyTorch 2.x on CUDA (MemorySemantics::dropout_bool_mask): F.dropout of a CUDA tensor takes
// the fused at::native_dropout (aten/src/ATen/native/Dropout.cpp, is_fused_kernel_acceptable),
// whose kernel (native/cuda/Dropout.cu, dropout_cuda) allocates the bool mask and then the
// output (oracle snapshot gpt_mini__plain: 16,384 B of mask before the 65,536 B output), and
// NativeDropoutBackward0 saves the mask alone (oracle nodes: result1, bool, one byte an
// element). Its backward, native_dropout_backward, is grad * mask * scale into a new tensor.
// The values come from this engine's generator (one draw per element), not CUDA's Philox.
Tensor mask_dropout(const Tensor& x, double p, Generator& gen) {
  const double scale = 1.0 / (1.0 - p);
  Tensor mask = Tensor::empty(x.shape(), DType::b8);
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  if (!out.is_meta())
    dispatch_floating_all(x.dtype(), "dropout", [&]<typename T>() {
      // The CUDA kernel scales in its accumulate type (float for the reduced dtypes).
      using M = opmath_t<T>;
      bool* mp = mask.data<bool>();
      T* op = out.data<T>();
      const T* xp = x.data<T>();
      const M s = static_cast<M>(scale);
      for_each_offset(x, [&](std::int64_t off, std::int64_t i) {
        mp[i] = gen.uniform() < 1.0 - p;
        op[i] = mp[i] ? static_cast<T>(static_cast<M>(xp[off]) * s) : T(0);
      });
    });
  record("NativeDropoutBackward0", {x}, {out}, {mask}, [scale](BackwardContext& c) -> TensorList {
    const Tensor& g = c.grads[0];
    const Tensor& m = c.saved[0];
    Tensor dx = Tensor::empty(g.shape(), g.dtype());
    if (!dx.is_meta())
      dispatch_floating_all(g.dtype(), "dropout", [&]<typename T>() {
        using M = opmath_t<T>;
        const bool* mp = m.data<bool>();
        const T* gp = g.data<T>();
        T* dp = dx.data<T>();
        const M s = static_cast<M>(scale);
        for_each_offset(g, [&](std::int64_t off, std::int64_t i) {
          dp[i] = mp[i] ? static_cast<T>(static_cast<M>(gp[off]) * s) : T(0);
        });
      });
    return {dx};
  });
  return out;
}

}  // namespace

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
  return memory_semantics(x.device()).dropout_bool_mask ? mask_dropout(x, p, gen)
                                                        : noise_dropout(x, p, gen);
}

}  // namespace ckpt
