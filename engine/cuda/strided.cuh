#pragma once

#include <cstdint>

#include "engine/cuda/hd.cuh"

namespace ckpt::cuda_math {

// A tensor's geometry as a kernel reads it, passed by value: element i in row-major order over
// `size` lives at offset_of(layout, i) from the first element. Up to kMaxDims dimensions; the
// kernel table refuses more.
constexpr int kMaxDims = 8;
struct StridedLayout {
  int nd = 0;
  std::int64_t size[kMaxDims] = {};
  std::int64_t stride[kMaxDims] = {};
};

CKPT_HD_INLINE std::int64_t offset_of(const StridedLayout& l, std::int64_t i) {
  std::int64_t off = 0;
  for (int d = l.nd - 1; d >= 0; --d) {
    off += (i % l.size[d]) * l.stride[d];
    i /= l.size[d];
  }
  return off;
}

// One output element of a sum over some dimensions of a tensor: `kept` walks the dimensions
// that stay (output element j starts at offset_of(kept, j)), `reduced` the ones summed over.
// Accumulated in double, as the cpu kernel does for its whole and trailing reductions.
CKPT_HD_INLINE float sum_one(const float* in, const StridedLayout& kept,
                             const StridedLayout& reduced, std::int64_t reduced_count,
                             std::int64_t j) {
  const float* base = in + offset_of(kept, j);
  double acc = 0;
  for (std::int64_t r = 0; r < reduced_count; ++r) acc += base[offset_of(reduced, r)];
  return static_cast<float>(acc);
}

}  // namespace ckpt::cuda_math
