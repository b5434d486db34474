// Can a kernel with ONE THREAD PER ELEMENT (the lab's many-blocks shape) reach 90 % of the device copy on an
// H200? Variants of c[i] = a[i] + b[i], K = 100 M floats, each timed with CUDA events (median of 20 after
// 3 warm-ups), against cudaMemcpy device-to-device of the same 400 MB (bytes read + written).
//   nvcc -O3 -arch=sm_90 -o variants variants.cu && ./variants
#include <cstdio>
#include <vector>
#include <algorithm>
#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA error %s at %d\n", cudaGetErrorString(e), __LINE__); return 1; } } while (0)

__global__ void plain(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, unsigned long long n) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
// The same, with the L2::256B prefetch hint on both loads: L2 fetches 256 bytes from DRAM per request instead
// of the warp's 128, so the next warp's loads find their sectors in flight or in L2.
__device__ __forceinline__ float load_l2_256(const float* p) {
    float v; asm volatile("ld.global.nc.L2::256B.f32 %0, [%1];" : "=f"(v) : "l"(p)); return v;
}
__global__ void l2_256(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, unsigned long long n) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = load_l2_256(a + i) + load_l2_256(b + i);
}
// Streaming loads/stores (evict-first): less L2 pollution, same bytes in flight.
__global__ void streaming(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, unsigned long long n) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) __stcs(c + i, __ldcs(a + i) + __ldcs(b + i));
}

template <typename F> float median_ms(F launch) {
    cudaEvent_t s, e; cudaEventCreate(&s); cudaEventCreate(&e);
    for (int w = 0; w < 3; ++w) launch();
    std::vector<float> t;
    for (int r = 0; r < 20; ++r) { cudaEventRecord(s); launch(); cudaEventRecord(e); cudaEventSynchronize(e);
        float ms; cudaEventElapsedTime(&ms, s, e); t.push_back(ms); }
    std::sort(t.begin(), t.end()); return t[t.size() / 2];
}

int main() {
    const unsigned long long n = 100000000ull; const size_t bytes = n * sizeof(float);
    float *a, *b, *c; CHECK(cudaMalloc(&a, bytes)); CHECK(cudaMalloc(&b, bytes)); CHECK(cudaMalloc(&c, bytes));
    std::vector<float> h(n); for (unsigned long long i = 0; i < n; ++i) h[i] = (i % 1000) * 0.5f;
    CHECK(cudaMemcpy(a, h.data(), bytes, cudaMemcpyHostToDevice)); CHECK(cudaMemcpy(b, h.data(), bytes, cudaMemcpyHostToDevice));
    float copy = median_ms([&] { cudaMemcpy(c, a, bytes, cudaMemcpyDeviceToDevice); });
    double copy_GBps = 2.0 * bytes / copy / 1e6;
    printf("copy (D2D, read + written): %.4f ms  %.0f GB/s\n", copy, copy_GBps);
    for (int threads : {256, 512, 1024}) {
        unsigned blocks = (unsigned)((n + threads - 1) / threads);
        struct V { const char* name; void (*k)(const float*, const float*, float*, unsigned long long); } vs[] =
            {{"plain", plain}, {"l2_256", l2_256}, {"streaming", streaming}};
        for (auto& v : vs) {
            CHECK(cudaMemset(c, 0xff, bytes));
            float ms = median_ms([&] { v.k<<<blocks, threads>>>(a, b, c, n); });
            CHECK(cudaGetLastError()); CHECK(cudaDeviceSynchronize());
            std::vector<float> out(n); CHECK(cudaMemcpy(out.data(), c, bytes, cudaMemcpyDeviceToHost));
            unsigned long long bad = 0; for (unsigned long long i = 0; i < n; ++i) bad += out[i] != 2 * h[i];
            double GBps = 3.0 * bytes / ms / 1e6;
            printf("%-10s threads %4d: %.4f ms  %.0f GB/s  %.1f %% of copy  wrong %llu\n", v.name, threads, ms, GBps, 100 * GBps / copy_GBps, bad);
        }
    }
    return 0;
}
