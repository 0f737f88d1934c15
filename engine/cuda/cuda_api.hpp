#pragma once

// The CUDA backend's host API (implemented in kernels.cu, built only when nvcc is found).
// Plain C++: callers need no CUDA headers. Pointers are device pointers; every call
// synchronises and throws std::runtime_error with CUDA's message on failure.

#include <cstddef>
#include <cstdint>
#include <string>

namespace ckpt::cuda {

// Number of usable CUDA devices; 0 when there is none or no driver (never throws).
int device_count();
// Why there is no device (CUDA's error text), or the first device's name.
std::string device_summary();

void* device_alloc(std::size_t bytes);
void device_free(void* p);
void copy_to_device(void* dst, const void* src, std::size_t bytes);
void copy_to_host(void* dst, const void* src, std::size_t bytes);

void add(const float* a, const float* b, float* out, std::int64_t n);
void mul(const float* a, const float* b, float* out, std::int64_t n);
void relu(const float* x, float* out, std::int64_t n);
void gelu(const float* x, float* out, std::int64_t n);
void softmax_rows(const float* x, float* y, std::int64_t rows, int n);
// C[m, n] = A[m, k] @ B[k, n], row-major.
void gemm(const float* a, const float* b, float* c, int m, int n, int k);

}  // namespace ckpt::cuda
