#pragma once

// The CUDA backend's host API (implemented in kernels.cu, built only when nvcc is found): the
// lowest floor, raw device pointers and nothing of the engine's types, so that the tensor
// floor's storage (engine/tensor/device.cpp) and the kernel table (engine/kernels) both build
// on it. Plain C++: callers need no CUDA headers. Every call synchronises and throws
// std::runtime_error with CUDA's message on failure.

#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/cuda/strided.cuh"

namespace ckpt::cuda {

// Number of usable CUDA devices; 0 when there is none or no driver (never throws).
int device_count();
// Why there is no device (CUDA's error text), or the first device's name.
std::string device_summary();

void* device_alloc(std::size_t bytes);
void device_free(void* p) noexcept;
void copy_to_device(void* dst, const void* src, std::size_t bytes);
void copy_to_host(void* dst, const void* src, std::size_t bytes);
void copy_on_device(void* dst, const void* src, std::size_t bytes);
void zero(void* p, std::size_t bytes);

void add(const float* a, const float* b, float* out, std::int64_t n);
void mul(const float* a, const float* b, float* out, std::int64_t n);
void relu(const float* x, float* out, std::int64_t n);
void gelu(const float* x, float* out, std::int64_t n);
void softmax_rows(const float* x, float* y, std::int64_t rows, int n);
// C[m, n] = A[m, k] @ B[k, n], row-major.
void gemm(const float* a, const float* b, float* c, int m, int n, int k);

// The kernel table's rows (engine/kernels/kernel_table_cuda.cpp).
// out[i] = a[i * a_step] op b[i * b_step] (a step of 0 broadcasts one element); op indexes
// add, sub, mul, div (cuda_math::binary).
void binary(int op, const float* a, std::int64_t a_step, const float* b, std::int64_t b_step,
            float* out, std::int64_t n);
// out[i] = a[i] op s
void binary_scalar(int op, const float* a, float s, float* out, std::int64_t n);
void fill(float* out, float value, std::int64_t n);
// dst element i = src element i, both read through their layouts (same sizes); the element's
// bytes moved as they are (4 or 8).
void strided_copy(const void* src, const cuda_math::StridedLayout& src_layout, void* dst,
                  const cuda_math::StridedLayout& dst_layout, std::int64_t n, int element_size);
// out[j] = the sum over `reduced` from element j of `kept` (cuda_math::sum_one).
void sum(const float* in, const cuda_math::StridedLayout& kept,
         const cuda_math::StridedLayout& reduced, std::int64_t reduced_count, float* out,
         std::int64_t kept_count);
// acc[i] += g[i]
void accumulate(float* acc, const float* g, std::int64_t n);
// C = A @ B (+ C when accumulate), A and B read through their strides (transposed views too),
// C row-major [m, n].
void gemm_strided(const float* a, std::int64_t a_rs, std::int64_t a_cs, const float* b,
                  std::int64_t b_rs, std::int64_t b_cs, float* c, int m, int n, int k,
                  bool accumulate);

}  // namespace ckpt::cuda
