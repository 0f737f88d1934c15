// The CUDA kernels: thin launchers around the __host__ __device__ arithmetic in the .cuh
// headers, which the CPU tests check on machines without a GPU.
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "engine/cuda/cuda_api.hpp"
#include "engine/cuda/elementwise.cuh"
#include "engine/cuda/gemm_tile.cuh"
#include "engine/cuda/softmax.cuh"
#include "engine/cuda/strided.cuh"

namespace ckpt::cuda {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("CUDA ") + what + ": " + cudaGetErrorString(e));
}

constexpr int kThreads = 256;

int blocks_for(std::int64_t n) {
  return static_cast<int>((n + kThreads - 1) / kThreads);
}

void finish(const char* what) {
  check(cudaGetLastError(), what);
  check(cudaDeviceSynchronize(), what);
}

__global__ void add_kernel(const float* a, const float* b, float* out, std::int64_t n) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = cuda_math::add(a[i], b[i]);
}

__global__ void mul_kernel(const float* a, const float* b, float* out, std::int64_t n) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = cuda_math::mul(a[i], b[i]);
}

__global__ void relu_kernel(const float* x, float* out, std::int64_t n) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = cuda_math::relu(x[i]);
}

__global__ void gelu_kernel(const float* x, float* out, std::int64_t n) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = cuda_math::gelu(x[i]);
}

__global__ void softmax_rows_kernel(const float* x, float* y, std::int64_t rows, int n) {
  const std::int64_t r = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (r < rows) cuda_math::softmax_row(x + r * n, y + r * n, n);
}

__global__ void binary_kernel(int op, const float* a, std::int64_t a_step, const float* b,
                              std::int64_t b_step, float* out, std::int64_t n) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = cuda_math::binary_at(op, a, a_step, b, b_step, i);
}

__global__ void binary_scalar_kernel(int op, const float* a, float s, float* out, std::int64_t n) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = cuda_math::binary(op, a[i], s);
}

template <typename Bits>
__global__ void strided_copy_kernel(const Bits* src, cuda_math::StridedLayout src_layout, Bits* dst,
                                    cuda_math::StridedLayout dst_layout, std::int64_t n) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) dst[cuda_math::offset_of(dst_layout, i)] = src[cuda_math::offset_of(src_layout, i)];
}

__global__ void sum_kernel(const float* in, cuda_math::StridedLayout kept,
                           cuda_math::StridedLayout reduced, std::int64_t reduced_count, float* out,
                           std::int64_t kept_count) {
  const std::int64_t j = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (j < kept_count) out[j] = cuda_math::sum_one(in, kept, reduced, reduced_count, j);
}

__global__ void fill_kernel(float* out, float value, std::int64_t n) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = value;
}

__global__ void accumulate_kernel(float* acc, const float* g, std::int64_t n) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) acc[i] = cuda_math::add(acc[i], g[i]);
}

__global__ void gemm_strided_kernel(cuda_math::MatrixView a, cuda_math::MatrixView b, float* c,
                                    int m, int n, int k, bool accumulate) {
  using cuda_math::kTile;
  __shared__ float as[kTile][kTile];
  __shared__ float bs[kTile][kTile];
  const int ty = threadIdx.y, tx = threadIdx.x;
  float acc = 0.0f;
  for (int t = 0; t < cuda_math::tile_steps(k); ++t) {
    as[ty][tx] = cuda_math::load_a(a, m, k, blockIdx.y, t, ty, tx);
    bs[ty][tx] = cuda_math::load_b(b, k, n, t, blockIdx.x, ty, tx);
    __syncthreads();
    acc = cuda_math::tile_dot(as, bs, ty, tx, acc);
    __syncthreads();
  }
  const int r = blockIdx.y * kTile + ty, col = blockIdx.x * kTile + tx;
  if (r < m && col < n) {
    float* out = c + static_cast<std::int64_t>(r) * n + col;
    *out = cuda_math::gemm_result(acc, accumulate ? *out : 0.0f, accumulate);
  }
}

}  // namespace

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  return n;
}

std::string device_summary() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return std::string("no CUDA device: ") + cudaGetErrorString(e);
  }
  if (n == 0) return "no CUDA device";
  cudaDeviceProp p{};
  check(cudaGetDeviceProperties(&p, 0), "cudaGetDeviceProperties");
  return std::string(p.name) + " (sm_" + std::to_string(p.major) + std::to_string(p.minor) + ")";
}

void* device_alloc(std::size_t bytes) {
  void* p = nullptr;
  check(cudaMalloc(&p, bytes), "cudaMalloc");
  return p;
}

void device_free(void* p) noexcept {
  // A free that fails leaves a sticky error for the next call to report; it cannot throw from
  // a storage's destructor.
  cudaFree(p);
}

void copy_to_device(void* dst, const void* src, std::size_t bytes) {
  check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to device");
}

void copy_to_host(void* dst, const void* src, std::size_t bytes) {
  check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
}

void copy_on_device(void* dst, const void* src, std::size_t bytes) {
  check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice), "cudaMemcpy on the device");
}

void zero(void* p, std::size_t bytes) {
  check(cudaMemset(p, 0, bytes), "cudaMemset");
}

void add(const float* a, const float* b, float* out, std::int64_t n) {
  if (n == 0) return;
  add_kernel<<<blocks_for(n), kThreads>>>(a, b, out, n);
  finish("add");
}

void mul(const float* a, const float* b, float* out, std::int64_t n) {
  if (n == 0) return;
  mul_kernel<<<blocks_for(n), kThreads>>>(a, b, out, n);
  finish("mul");
}

void relu(const float* x, float* out, std::int64_t n) {
  if (n == 0) return;
  relu_kernel<<<blocks_for(n), kThreads>>>(x, out, n);
  finish("relu");
}

void gelu(const float* x, float* out, std::int64_t n) {
  if (n == 0) return;
  gelu_kernel<<<blocks_for(n), kThreads>>>(x, out, n);
  finish("gelu");
}

void softmax_rows(const float* x, float* y, std::int64_t rows, int n) {
  if (rows == 0) return;
  softmax_rows_kernel<<<blocks_for(rows), kThreads>>>(x, y, rows, n);
  finish("softmax");
}

void gemm(const float* a, const float* b, float* c, int m, int n, int k) {
  gemm_strided(a, k, 1, b, n, 1, c, m, n, k, false);
}

void binary(int op, const float* a, std::int64_t a_step, const float* b, std::int64_t b_step,
            float* out, std::int64_t n) {
  if (n == 0) return;
  binary_kernel<<<blocks_for(n), kThreads>>>(op, a, a_step, b, b_step, out, n);
  finish("binary op");
}

void binary_scalar(int op, const float* a, float s, float* out, std::int64_t n) {
  if (n == 0) return;
  binary_scalar_kernel<<<blocks_for(n), kThreads>>>(op, a, s, out, n);
  finish("binary op with a scalar");
}

void strided_copy(const void* src, const cuda_math::StridedLayout& src_layout, void* dst,
                  const cuda_math::StridedLayout& dst_layout, std::int64_t n, int element_size) {
  if (n == 0) return;
  if (element_size == 1) {
    strided_copy_kernel<<<blocks_for(n), kThreads>>>(static_cast<const std::uint8_t*>(src),
                                                     src_layout, static_cast<std::uint8_t*>(dst),
                                                     dst_layout, n);
  } else if (element_size == 4) {
    strided_copy_kernel<<<blocks_for(n), kThreads>>>(static_cast<const std::uint32_t*>(src),
                                                     src_layout, static_cast<std::uint32_t*>(dst),
                                                     dst_layout, n);
  } else if (element_size == 8) {
    strided_copy_kernel<<<blocks_for(n), kThreads>>>(static_cast<const std::uint64_t*>(src),
                                                     src_layout, static_cast<std::uint64_t*>(dst),
                                                     dst_layout, n);
  } else {
    throw std::invalid_argument("strided copy: elements of " + std::to_string(element_size) +
                                " bytes");
  }
  finish("strided copy");
}

void sum(const float* in, const cuda_math::StridedLayout& kept,
         const cuda_math::StridedLayout& reduced, std::int64_t reduced_count, float* out,
         std::int64_t kept_count) {
  if (kept_count == 0) return;
  sum_kernel<<<blocks_for(kept_count), kThreads>>>(in, kept, reduced, reduced_count, out,
                                                   kept_count);
  finish("sum");
}

void fill(float* out, float value, std::int64_t n) {
  if (n == 0) return;
  fill_kernel<<<blocks_for(n), kThreads>>>(out, value, n);
  finish("fill");
}

void accumulate(float* acc, const float* g, std::int64_t n) {
  if (n == 0) return;
  accumulate_kernel<<<blocks_for(n), kThreads>>>(acc, g, n);
  finish("accumulate");
}

void gemm_strided(const float* a, std::int64_t a_rs, std::int64_t a_cs, const float* b,
                  std::int64_t b_rs, std::int64_t b_cs, float* c, int m, int n, int k,
                  bool accumulate) {
  if (m == 0 || n == 0) return;
  const dim3 threads(cuda_math::kTile, cuda_math::kTile);
  const dim3 blocks((n + cuda_math::kTile - 1) / cuda_math::kTile,
                    (m + cuda_math::kTile - 1) / cuda_math::kTile);
  gemm_strided_kernel<<<blocks, threads>>>(cuda_math::MatrixView{a, a_rs, a_cs},
                                           cuda_math::MatrixView{b, b_rs, b_cs}, c, m, n, k,
                                           accumulate);
  finish("gemm");
}

}  // namespace ckpt::cuda
