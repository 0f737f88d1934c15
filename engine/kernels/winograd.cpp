#include "engine/kernels/winograd.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/kernels/blas.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/kernels/winograd_detail.hpp"

namespace ckpt::conv_detail {

namespace {

using namespace winograd;  // Plan and the tile transforms (winograd_detail.hpp)

// Tiles per block for the forward and input-gradient GEMMs (columns of each of the 16 GEMMs):
// enough to run the GEMM at speed, few enough that a block's transformed input and output
// stay in the core's cache. The weight gradient reduces over tiles, so it takes longer blocks.
constexpr std::int64_t kTargetTiles = 128;
constexpr std::int64_t kWeightTargetTiles = 512;

// Below this many multiply-adds (of the direct convolution) one thread does it all.
constexpr double kMinParallelMacs = 4.0 * (1 << 20);

Plan make_plan(std::int64_t n, std::int64_t cin, std::int64_t h, std::int64_t w, std::int64_t cout,
               std::int64_t ph, std::int64_t pw) {
  Plan p{n, cin, h, w, cout, ph, pw, h + 2 * ph - 2, w + 2 * pw - 2, 0, 0};
  p.ty = (p.ho + 1) / 2;
  p.tx = (p.wo + 1) / 2;
  return p;
}

Plan forward_plan(const Geometry& g) {
  return make_plan(g.n, g.c, g.h, g.w, g.o, g.ph, g.pw);
}

// dx = dY convolved with the flipped, transposed weight under padding 2 - p: its output is
// the input's size again.
Plan input_grad_plan(const Geometry& g) {
  return make_plan(g.n, g.o, g.ho, g.wo, g.c, 2 - g.ph, 2 - g.pw);
}

// Whole images per block, so that a block's tiles never straddle an image's edge; at least
// one block per thread when there are images enough.
struct Blocks {
  std::int64_t images = 1, count = 1;
  int threads = 1;
};

Blocks split(const Plan& p, std::int64_t target_tiles) {
  Blocks b;
  const int max_threads =
      omp_in_parallel() || p.macs() < kMinParallelMacs ? 1 : omp_get_max_threads();
  b.images = std::clamp<std::int64_t>((target_tiles + p.tiles() - 1) / p.tiles(), 1, p.n);
  b.images = std::min(b.images, (p.n + max_threads - 1) / max_threads);
  b.count = (p.n + b.images - 1) / b.images;
  b.threads = static_cast<int>(std::min<std::int64_t>(max_threads, b.count));
  return b;
}

// xi = 4 i + j of the rotated kernel's transform is xi = 4 p(i) + p(j) of the kernel's, p
// swapping 0 and 3.
constexpr int kFlip[16] = {15, 13, 14, 12, 7, 5, 6, 4, 11, 9, 10, 8, 3, 1, 2, 0};

// out = conv(in) with the transformed weight U[xi][cout][cin] (flipped: U[kFlip[xi]][cin][cout]
// used transposed): per block of images, transform the input, 16 GEMMs, transform the output,
// all on one thread.
template <typename T>
void run_conv(const Plan& p, const T* in, const T* U, bool flipped, const T* bias, T* out,
              DType dtype) {
  const Blocks b = split(p, kTargetTiles);
  const std::int64_t ld_max = b.images * p.tiles();
  const std::int64_t per_thread =
      16 * (slice(p.cin * ld_max) + slice(p.cout * ld_max)) + scratch_size(p);
  Tensor ws = Tensor::empty({b.threads, per_thread}, dtype);
  if (!out) return;  // a dry run: the workspace is allocated, nothing is computed
  T* base = ws.data<T>();
  parallel_for_threads(b.count, b.threads, [&](std::int64_t blk) {
    const std::int64_t n0 = blk * b.images, count = std::min(b.images, p.n - n0);
    const std::int64_t ld = count * p.tiles();
    T* V = base + omp_get_thread_num() * per_thread;
    T* M = V + 16 * slice(p.cin * ld_max);
    T* pad = M + 16 * slice(p.cout * ld_max);
    transform_input(p, in, n0, count, V, pad);
    for (int xi = 0; xi < 16; ++xi)
      gemm_rm<T>(flipped, false, p.cout, ld, p.cin, T(1),
                 U + (flipped ? kFlip[xi] : xi) * slice(p.cout * p.cin), flipped ? p.cout : p.cin,
                 V + xi * slice(p.cin * ld), ld, T(0), M + xi * slice(p.cout * ld), ld);
    transform_output(p, M, n0, count, bias, out, pad);
  });
}

template <typename T>
void forward_t(const Tensor& x, const Tensor& w, const Tensor& bias, const Geometry& g,
               Tensor& out) {
  Tensor U = Tensor::empty({16 * slice(g.o * g.c)}, w.dtype());
  const bool live = !out.is_meta();
  if (live) transform_weight(w.data<T>(), g.o * g.c, U.data<T>());
  run_conv(forward_plan(g), data_or_null<T>(x, live), data_or_null<T>(U, live), false,
           data_or_null<T>(bias, live), data_or_null<T>(out, live), x.dtype());
}

template <typename T>
void input_grad_t(const Tensor& gy, const Tensor& w, const Geometry& g, Tensor& dx) {
  Tensor U = Tensor::empty({16 * slice(g.o * g.c)}, w.dtype());
  const bool live = !dx.is_meta();
  if (live) transform_weight(w.data<T>(), g.o * g.c, U.data<T>());
  run_conv(input_grad_plan(g), data_or_null<T>(gy, live), data_or_null<T>(U, live), true,
           static_cast<const T*>(nullptr), data_or_null<T>(dx, live), gy.dtype());
}

template <typename T>
void weight_grad_t(const Tensor& gy, const Tensor& x, const Geometry& g, Tensor& dw) {
  const Plan p = forward_plan(g);
  const Blocks b = split(p, kWeightTargetTiles);
  const std::int64_t ld_max = b.images * p.tiles();
  const std::int64_t per_thread =
      16 * (slice(p.cin * ld_max) + slice(p.cout * ld_max)) + scratch_size(p);
  const std::int64_t usize = 16 * slice(p.cout * p.cin);
  Tensor ws = Tensor::empty({b.threads, per_thread}, x.dtype());
  // One Winograd-domain accumulator per thread, summed at the end; each starts by overwriting.
  Tensor dU = Tensor::empty({b.threads, usize}, x.dtype());
  if (dw.is_meta()) return;  // a dry run: the buffers are allocated, nothing is computed
  std::vector<char> wrote(static_cast<std::size_t>(b.threads), 0);
  T* base = ws.data<T>();
  T* acc_base = dU.data<T>();
  parallel_for_threads(b.count, b.threads, [&](std::int64_t blk) {
    const int tid = omp_get_thread_num();
    const std::int64_t n0 = blk * b.images, count = std::min(b.images, p.n - n0);
    const std::int64_t ld = count * p.tiles();
    T* V = base + tid * per_thread;
    T* Mh = V + 16 * slice(p.cin * ld_max);
    T* pad = Mh + 16 * slice(p.cout * ld_max);
    transform_input(p, x.data<T>(), n0, count, V, pad);
    adjoint_output(p, gy.data<T>(), n0, count, Mh, pad);
    T* acc = acc_base + tid * usize;
    const T beta = wrote[static_cast<std::size_t>(tid)] ? T(1) : T(0);
    for (int xi = 0; xi < 16; ++xi)
      gemm_rm<T>(false, true, p.cout, p.cin, ld, T(1), Mh + xi * slice(p.cout * ld), ld,
                 V + xi * slice(p.cin * ld), ld, beta, acc + xi * slice(p.cout * p.cin), p.cin);
    wrote[static_cast<std::size_t>(tid)] = 1;
  });
  for (int t = 1; t < b.threads; ++t) {
    if (!wrote[static_cast<std::size_t>(t)]) continue;
    const T* src = acc_base + t * usize;
#pragma omp parallel for schedule(static) if (usize > kParallelGrain)
    for (std::int64_t i = 0; i < usize; ++i) acc_base[i] += src[i];
  }
  inverse_weight(acc_base, g.o * g.c, dw.data<T>());
}

}  // namespace

bool winograd_applies(const Geometry& g) {
  return g.planar() && g.kh == 3 && g.kw == 3 && g.sh == 1 && g.sw == 1 && g.dh == 1 && g.dw == 1 &&
         g.groups == 1 && g.ph <= 2 && g.pw <= 2 && g.n > 0 && g.ho > 0 && g.wo > 0;
}

bool winograd_pays(const Geometry& g, ConvPath path) {
  if (!winograd_applies(g)) return false;
  const Plan p = path == ConvPath::input_grad ? input_grad_plan(g) : forward_plan(g);
  // The transforms cost per tile and channel what the GEMMs save: thin channel counts or
  // planes of one tile (where most of a 4x4 window is padding) lose.
  return p.tiles() >= 4 && p.cin >= 16 && p.cout >= 16;
}

void winograd_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const Geometry& g,
                      Tensor& out) {
  dispatch_floating(x.dtype(), "conv2d (winograd)",
                    [&]<typename T>() { forward_t<T>(x, w, bias, g, out); });
}

void winograd_input_grad(const Tensor& gy, const Tensor& w, const Geometry& g, Tensor& dx) {
  dispatch_floating(gy.dtype(), "conv2d backward (winograd, input)",
                    [&]<typename T>() { input_grad_t<T>(gy, w, g, dx); });
}

void winograd_weight_grad(const Tensor& gy, const Tensor& x, const Geometry& g, Tensor& dw) {
  dispatch_floating(gy.dtype(), "conv2d backward (winograd, weight)",
                    [&]<typename T>() { weight_grad_t<T>(gy, x, g, dw); });
}

}  // namespace ckpt::conv_detail
