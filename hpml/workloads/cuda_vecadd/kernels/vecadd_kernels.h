// The three vector-add kernels of the cuda_vecadd workload: c[i] = a[i] + b[i] for i < n.
//
// The one source of truth for both build paths: the nvcc host program (vecadd.cu) includes this file, and
// the NVRTC path (workloads/cuda_vecadd/nvrtc_path.py) compiles its text as it is, so both run the same
// kernels. Hence no #include here (NVRTC has no system headers) and extern "C" (unmangled names that
// the Python side looks up).
//
// Launch shapes (the study's three scenarios, and a fourth that is not the lab's), 256 threads per block:
//   one_thread        <<<1, 1>>>                     one thread walks the whole array
//   one_block         <<<1, 256>>>                   256 threads of one block stride through it
//   many_blocks       <<<ceil(n / 256), 256>>>       one thread per element
//   many_blocks_vec4  <<<ceil(n / 1024), 256>>>      one thread per 4 elements, 16-byte loads and stores:
//                                                    4 times the bytes in flight per thread (see the study)
// Indices are 64-bit: n may exceed 2^31 - 1 elements.
#pragma once

#define VECADD_THREADS_PER_BLOCK 256

extern "C" __global__ void vecadd_one_thread(const float* __restrict__ a, const float* __restrict__ b,
                                             float* __restrict__ c, unsigned long long n) {
    for (unsigned long long i = 0; i < n; ++i) {
        c[i] = a[i] + b[i];
    }
}

extern "C" __global__ void vecadd_one_block(const float* __restrict__ a, const float* __restrict__ b,
                                            float* __restrict__ c, unsigned long long n) {
    for (unsigned long long i = threadIdx.x; i < n; i += blockDim.x) {
        c[i] = a[i] + b[i];
    }
}

extern "C" __global__ void vecadd_many_blocks(const float* __restrict__ a, const float* __restrict__ b,
                                              float* __restrict__ c, unsigned long long n) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}

// a, b and c come from cudaMalloc or cudaMallocManaged (aligned to 256 bytes), so a + i with i a multiple of 4
// is 16-byte aligned. The last n % 4 elements are added one by one.
extern "C" __global__ void vecadd_many_blocks_vec4(const float* __restrict__ a, const float* __restrict__ b,
                                                   float* __restrict__ c, unsigned long long n) {
    unsigned long long i = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (i + 3 < n) {
        float4 x = *reinterpret_cast<const float4*>(a + i);
        float4 y = *reinterpret_cast<const float4*>(b + i);
        float4 sum;
        sum.x = x.x + y.x;
        sum.y = x.y + y.y;
        sum.z = x.z + y.z;
        sum.w = x.w + y.w;
        *reinterpret_cast<float4*>(c + i) = sum;
    } else {
        for (; i < n; ++i) c[i] = a[i] + b[i];
    }
}
