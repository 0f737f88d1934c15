#pragma once

// Private to conv_impl*.cpp and conv_columns.cpp, which share the convolutions' CPU kernels
// (1, 2 and 3 spatial dimensions, conv_geometry.hpp):
//   conv_columns.cpp     im2col and col2im, between image planes and GEMM column matrices
//   conv_impl.cpp        the choice of path (Winograd, per image, batched) and the forward
//   conv_backward.cpp    the input and weight gradients
//   conv_tiled.cpp       large images by column tiles (forward, weight and input gradients)
//   conv_transposed.cpp  the transposed convolution as the adjoint of the convolution
// The templates are instantiated for float and double, and for bfloat16 and float16 (autocast's:
// the GEMMs widen them to float, reduced_float.hpp; Winograd is float32 and float64 only).

#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine/kernels/conv_geometry.hpp"
#include "engine/kernels/winograd.hpp"
#include "engine/tensor/reduced_float.hpp"
#include "engine/tensor/tensor.hpp"

namespace ckpt::conv_detail {

// Whether a per-image GEMM is wide enough to run at full speed (else one GEMM over the batch).
bool per_image(const Geometry& g);
bool use_winograd(const Geometry& g, ConvPath path);
// Nested parallel regions only add overhead: inner loops run serially inside an outer one.
bool may_parallelize(std::int64_t work);
// Threads for the per-image loop: at most one per image, and one when the whole convolution
// is too small to pay for a thread team.
int image_threads(const Geometry& g);

// A weight gradient summed by threads: d holds the first thread's sum, partial [threads - 1, n]
// the others'; a thread that wrote nothing adds nothing (d is zeros if the first wrote nothing).
template <typename T>
void add_thread_partials(T* d, const Tensor& partial, const std::vector<char>& wrote,
                         std::int64_t n) {
  if (!wrote[0]) std::fill(d, d + n, T(0));
  for (std::size_t t = 1; t < wrote.size(); ++t) {
    if (!wrote[t]) continue;
    const T* p = partial.data<T>() + static_cast<std::int64_t>(t - 1) * n;
#pragma omp parallel for schedule(static) if (may_parallelize(n))
    for (std::int64_t i = 0; i < n; ++i) d[i] += p[i];
  }
}

// Elements of one channel's input zero-padded on every side.
std::int64_t padded_volume(const Geometry& g);
// Scratch for im2col and col2im: one zero-padded input volume per thread.
Tensor im2col_scratch(const Geometry& g, DType dtype);
// col [K, count * HoWo] from the `count` images of x from n0.
template <typename T>
void im2col(const T* x, const Geometry& g, std::int64_t n0, std::int64_t count, T* col, T* scratch);
// The adjoint of im2col (dx is overwritten).
template <typename T>
void col2im(const T* dcol, const Geometry& g, std::int64_t n0, std::int64_t count, T* dx,
            T* scratch);
// col2im from the transposed column matrix dcolT [count * HoWo, K].
template <typename T>
void col2im_t(const T* dcolT, const Geometry& g, std::int64_t count, T* dx, T* scratch);

// A zero-padded copy [C, padded_volume] of image n's channels.
template <typename T>
void pad_image(const T* x, const Geometry& g, std::int64_t n, T* padded);
// How im2col_pixels lays out a tile's column matrix [K, count]:
//   rows           row-major [K, count] (gemm_rm's operand)
//   column_panels  panels of kPackedCols pixels, each [K, kPackedCols] (gemm_packed's B, the
//                  forward's); the last panel's tail is left unwritten
//   row_panels     per group, the group's taps rounded up to whole panels of kPackedRows taps,
//                  each panel [count, kPackedRows] (gemm_packed's packed A, the weight
//                  gradient's); the rounding rows are left unwritten
enum class ColumnLayout { rows, column_panels, row_panels };
// The tile's column matrix for output pixels [p0, p0 + count) of one image, read from its
// zero-padded copy (or the image itself when the convolution has no padding).
template <typename T>
void im2col_pixels(const T* image, const Geometry& g, std::int64_t p0, std::int64_t count, T* col,
                   ColumnLayout layout = ColumnLayout::rows);

// The adjoint of im2col_pixels (rows layout) for the channels [c0, c1): adds dcol [K, count]
// into image, laid out as pad_image's copy.
template <typename T>
void col2im_pixels(const T* dcol, const Geometry& g, std::int64_t p0, std::int64_t count, T* image,
                   std::int64_t c0, std::int64_t c1);
// The interior of pad_image's copy back into image n of x.
template <typename T>
void unpad_image(const T* padded, const Geometry& g, std::int64_t n, T* x);

// The tiled path (conv_tiled.cpp): images large enough for per_image() and not pointwise.
bool tiled_applies(const Geometry& g);
// out [N, O, spatial...] preallocated.
template <typename T>
void tiled_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const Geometry& g,
                   Tensor& out);
template <typename T>
void tiled_weight_grad(const Tensor& gy, const Tensor& x, const Geometry& g, Tensor& dw);
// A stride-1 convolution's input gradient as the tiled forward of dY with the flipped kernel.
bool flipped_input_grad_applies(const Geometry& g);
template <typename T>
void flipped_input_grad(const Tensor& gy, const Tensor& w, const Geometry& g, Tensor& dx);
// Any other tiled convolution's input gradient: dcol = W^T dY and col2im, tile by tile.
template <typename T>
void tiled_input_grad(const Tensor& gy, const Tensor& w, const Geometry& g, Tensor& dx);

template <typename T>
Tensor forward_t(const Tensor& x, const Tensor& w, const Tensor& bias, const Geometry& g);
template <typename T>
TensorList backward_t(const Tensor& gy, const Tensor& x, const Tensor& w, const Geometry& g,
                      const std::vector<bool>& need, bool has_bias);

}  // namespace ckpt::conv_detail
