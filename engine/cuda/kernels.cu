// The CUDA kernels: thin launchers around the __host__ __device__ arithmetic in the .cuh
// headers, which the CPU tests check on machines without a GPU.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "engine/cuda/cuda_api.hpp"
#include "engine/cuda/elementwise.cuh"
#include "engine/cuda/gemm_tile.cuh"
#include "engine/cuda/softmax.cuh"

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

__global__ void gemm_kernel(const float* a, const float* b, float* c, int m, int n, int k) {
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
  if (r < m && col < n) c[r * n + col] = acc;
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

void device_free(void* p) {
  check(cudaFree(p), "cudaFree");
}

void copy_to_device(void* dst, const void* src, std::size_t bytes) {
  check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to device");
}

void copy_to_host(void* dst, const void* src, std::size_t bytes) {
  check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
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
  if (m == 0 || n == 0) return;
  const dim3 threads(cuda_math::kTile, cuda_math::kTile);
  const dim3 blocks((n + cuda_math::kTile - 1) / cuda_math::kTile,
                    (m + cuda_math::kTile - 1) / cuda_math::kTile);
  gemm_kernel<<<blocks, threads>>>(a, b, c, m, n, k);
  finish("gemm");
}

}  // namespace ckpt::cuda
