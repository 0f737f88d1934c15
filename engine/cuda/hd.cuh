#pragma once

// Kernel arithmetic is written once, in functions that nvcc compiles for the device (called
// from the kernels in kernels.cu) and g++ compiles for the host (called by the CPU tests, so
// that the arithmetic is checked on machines without a GPU). Under g++ the CUDA qualifiers are
// defined away.
#if defined(__CUDACC__)
#define CKPT_HD __host__ __device__
#define CKPT_HD_INLINE __host__ __device__ __forceinline__
#else
#define CKPT_HD
#define CKPT_HD_INLINE inline
#endif
