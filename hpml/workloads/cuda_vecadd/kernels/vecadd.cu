// The CUDA host program of the cuda_vecadd workload (the nvcc build path): the whole grid of one sweep
// point, in one process. workloads/cuda_vecadd/nvcc_path.py builds it (-O3 -arch=sm_XX of the device)
// and runs it; workloads/cuda_vecadd/nvrtc_path.py does the same steps in Python where nvcc is missing.
//
//   vecadd --device 0 --sizes 1000000,100000000 --shapes one_thread,one_block,many_blocks
//          --memory explicit,managed,prefetch --reps 5 --one-thread-reps 1 --warmup 1 [--corrupt-one]
//
// Prints JSON lines (workloads/cuda_vecadd/programs.py parses them): one "device" line; per size one
// "copy" line (a device-to-device cudaMemcpy moving the kernel's bytes); per size, memory mode and shape one
// "case" line with every timed repetition's parts in seconds. What each part times, per memory mode:
//
//   part             explicit                         managed                            prefetch
//   alloc            cudaMalloc x 3                   cudaMallocManaged x 3              cudaMallocManaged x 3
//   fill (not in     (host arrays filled once         host writes a and b                host writes a and b
//    the total)       per size, outside)
//   h2d              cudaMemcpy a, b to the device    - (pages migrate in the kernel)    cudaMemPrefetchAsync a, b, c
//   kernel           CUDA events around the launch    the same: the first run after the  CUDA events
//                                                     host wrote a, b (first-touch
//                                                     migration included)
//   kernel_resident  -                                a second run, pages resident       -
//                                                     (not for one_thread)
//   d2h              cudaMemcpy c to the host         host reads one float per 4 KiB     cudaMemPrefetchAsync c
//                                                     page of c (the pages migrate back)  to the host
//   free             cudaFree x 3                     cudaFree x 3                       cudaFree x 3
//
// Every host-clocked part ends with cudaDeviceSynchronize. c is poisoned (NaN) before every repetition
// and checked exactly on the host after it (not timed). Every CUDA call's status is checked, and the
// last error after every launch; a failure prints one line on stderr and exits 2.
#include <cuda_runtime.h>

#include <string>

#include "vecadd_host.h"
#include "vecadd_kernels.h"

namespace {

void check(cudaError_t status, const char* call, int line) {
    if (status != cudaSuccess) {
        vecadd::fail(std::string(call) + " failed at vecadd.cu:" + std::to_string(line) + ": " +
                     cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")");
    }
}
#define CUDA_CHECK(call) check((call), #call, __LINE__)

enum class Shape { one_thread, one_block, many_blocks, many_blocks_vec4 };
enum class Memory { explicit_copies, managed, prefetch };

Shape parse_shape(const std::string& name) {
    if (name == "one_thread") return Shape::one_thread;
    if (name == "one_block") return Shape::one_block;
    if (name == "many_blocks") return Shape::many_blocks;
    if (name == "many_blocks_vec4") return Shape::many_blocks_vec4;
    vecadd::fail("unknown shape '" + name + "': one_thread, one_block, many_blocks or many_blocks_vec4");
}

Memory parse_memory(const std::string& name) {
    if (name == "explicit") return Memory::explicit_copies;
    if (name == "managed") return Memory::managed;
    if (name == "prefetch") return Memory::prefetch;
    vecadd::fail("unknown memory mode '" + name + "': explicit, managed or prefetch");
}

long long blocks_for(Shape shape, unsigned long long n) {
    const unsigned long long per_block = VECADD_THREADS_PER_BLOCK * (shape == Shape::many_blocks_vec4 ? 4 : 1);
    if (shape != Shape::many_blocks && shape != Shape::many_blocks_vec4) return 1;
    return static_cast<long long>((n + per_block - 1) / per_block);
}

long long threads_for(Shape shape) { return shape == Shape::one_thread ? 1 : VECADD_THREADS_PER_BLOCK; }

void launch(Shape shape, const float* a, const float* b, float* c, unsigned long long n) {
    switch (shape) {
        case Shape::one_thread: vecadd_one_thread<<<1, 1>>>(a, b, c, n); break;
        case Shape::one_block: vecadd_one_block<<<1, VECADD_THREADS_PER_BLOCK>>>(a, b, c, n); break;
        case Shape::many_blocks:
            vecadd_many_blocks<<<static_cast<unsigned>(blocks_for(shape, n)), VECADD_THREADS_PER_BLOCK>>>(a, b, c, n);
            break;
        case Shape::many_blocks_vec4:
            vecadd_many_blocks_vec4<<<static_cast<unsigned>(blocks_for(shape, n)), VECADD_THREADS_PER_BLOCK>>>(a, b, c,
                                                                                                             n);
            break;
    }
    CUDA_CHECK(cudaGetLastError());
}

// One launch timed with CUDA events on the default stream; seconds.
double timed_launch(Shape shape, const float* a, const float* b, float* c, unsigned long long n) {
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    CUDA_CHECK(cudaEventRecord(start));
    launch(shape, a, b, c, n);
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    return ms / 1e3;
}

// cudaMemPrefetchAsync to the device or, with device == cudaCpuDeviceId, to the host. CUDA 13 removed the
// form that takes a device ordinal: it takes a cudaMemLocation and flags.
void prefetch(const void* pointer, size_t bytes, int device) {
#if CUDART_VERSION >= 13000
    cudaMemLocation location{};
    location.type = device == cudaCpuDeviceId ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
    location.id = device == cudaCpuDeviceId ? 0 : device;
    CUDA_CHECK(cudaMemPrefetchAsync(pointer, bytes, location, 0, 0));
#else
    CUDA_CHECK(cudaMemPrefetchAsync(pointer, bytes, device, 0));
#endif
}

// Reads one float per 4 KiB page, so every page of c migrates back to the host; returns their sum so the
// reads cannot be optimized away.
double touch_pages(const float* c, unsigned long long n) {
    double sum = 0;
    for (unsigned long long i = 0; i < n; i += 4096 / sizeof(float)) sum += c[i];
    return sum;
}

double since(double start) {
    CUDA_CHECK(cudaDeviceSynchronize());
    return vecadd::now_s() - start;
}

struct Grid {
    int device;
    bool corrupt;
};

// Host arrays of the explicit mode: pageable (malloc), as a plain program has them; filled once per size.
struct HostArrays {
    std::vector<float> a, b, c;
    explicit HostArrays(unsigned long long n) : a(n), b(n), c(n) { vecadd::fill_inputs(a.data(), b.data(), n); }
};

// a, b and c on the device (cudaMalloc) or managed (cudaMallocManaged); allocating and freeing them are timed.
struct Arrays {
    float *a = nullptr, *b = nullptr, *c = nullptr;

    Arrays(size_t bytes, bool managed, vecadd::Parts& parts) {
        double t = vecadd::now_s();
        for (float** array : {&a, &b, &c}) {
            if (managed) {
                CUDA_CHECK(cudaMallocManaged(array, bytes));
            } else {
                CUDA_CHECK(cudaMalloc(array, bytes));
            }
        }
        parts.alloc.push_back(since(t));
    }

    void release(vecadd::Parts& parts) {
        double t = vecadd::now_s();
        for (float* array : {a, b, c}) CUDA_CHECK(cudaFree(array));
        parts.free.push_back(since(t));
    }
};

void explicit_repetition(Shape shape, unsigned long long n, HostArrays& host, const Grid& grid,
                         vecadd::Parts& parts) {
    const size_t bytes = n * sizeof(float);
    Arrays arrays(bytes, false, parts);
    float *a = arrays.a, *b = arrays.b, *c = arrays.c;
    CUDA_CHECK(cudaMemset(c, 0xFF, bytes));
    vecadd::poison(host.c.data(), n);
    CUDA_CHECK(cudaDeviceSynchronize());

    double t = vecadd::now_s();
    CUDA_CHECK(cudaMemcpy(a, host.a.data(), bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(b, host.b.data(), bytes, cudaMemcpyHostToDevice));
    parts.h2d.push_back(since(t));

    parts.kernel.push_back(timed_launch(shape, a, b, c, n));

    t = vecadd::now_s();
    CUDA_CHECK(cudaMemcpy(host.c.data(), c, bytes, cudaMemcpyDeviceToHost));
    parts.d2h.push_back(since(t));

    if (grid.corrupt) vecadd::corrupt_one(host.c.data(), n);
    parts.mismatches.push_back(vecadd::count_mismatches(host.c.data(), n));
    arrays.release(parts);
}

void managed_repetition(Shape shape, Memory memory, unsigned long long n, const Grid& grid,
                        vecadd::Parts& parts) {
    const size_t bytes = n * sizeof(float);
    Arrays arrays(bytes, true, parts);
    float *a = arrays.a, *b = arrays.b, *c = arrays.c;

    double t = vecadd::now_s();
    vecadd::fill_inputs(a, b, n);
    parts.fill.push_back(vecadd::now_s() - t);
    CUDA_CHECK(cudaMemset(c, 0xFF, bytes));  // poisoned on the device: c's pages start there
    CUDA_CHECK(cudaDeviceSynchronize());

    if (memory == Memory::prefetch) {
        t = vecadd::now_s();
        prefetch(a, bytes, grid.device);
        prefetch(b, bytes, grid.device);
        prefetch(c, bytes, grid.device);
        parts.h2d.push_back(since(t));
    }

    parts.kernel.push_back(timed_launch(shape, a, b, c, n));
    // The second run shows what the first paid for migration; not for the one-thread kernel, whose seconds
    // of arithmetic hide the migration (and would cost the grid its minute).
    if (memory == Memory::managed && shape != Shape::one_thread) {
        parts.kernel_resident.push_back(timed_launch(shape, a, b, c, n));
    }

    t = vecadd::now_s();
    if (memory == Memory::prefetch) {
        prefetch(c, bytes, cudaCpuDeviceId);
        parts.d2h.push_back(since(t));
    } else {
        volatile double sink = touch_pages(c, n);
        (void)sink;
        parts.d2h.push_back(vecadd::now_s() - t);
    }

    if (grid.corrupt) vecadd::corrupt_one(c, n);
    parts.mismatches.push_back(vecadd::count_mismatches(c, n));
    arrays.release(parts);
}

// A device-to-device cudaMemcpy of 6 n bytes: it reads 6 n and writes 6 n bytes, the 12 n bytes that the
// kernel moves (reads a and b, writes c), so the two bandwidths compare like for like.
void copy_line(unsigned long long n, long long reps) {
    const size_t bytes = 6 * n;
    void *source, *target;
    CUDA_CHECK(cudaMalloc(&source, bytes));
    CUDA_CHECK(cudaMalloc(&target, bytes));
    CUDA_CHECK(cudaMemset(source, 0, bytes));
    CUDA_CHECK(cudaMemcpy(target, source, bytes, cudaMemcpyDeviceToDevice));  // warm-up
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    std::vector<double> seconds;
    for (long long r = 0; r < reps; ++r) {
        CUDA_CHECK(cudaEventRecord(start));
        CUDA_CHECK(cudaMemcpy(target, source, bytes, cudaMemcpyDeviceToDevice));
        CUDA_CHECK(cudaEventRecord(stop));
        CUDA_CHECK(cudaEventSynchronize(stop));
        float ms = 0;
        CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
        seconds.push_back(ms / 1e3);
    }
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    CUDA_CHECK(cudaFree(source));
    CUDA_CHECK(cudaFree(target));
    vecadd::JsonLine("copy")
        .integer("elements", static_cast<long long>(n))
        .integer("bytes", static_cast<long long>(bytes))
        .seconds("copy_s", seconds)
        .print();
}

void device_line(int device) {
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    int runtime = 0, driver = 0, concurrent = 0;
    CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
    CUDA_CHECK(cudaDriverGetVersion(&driver));
    CUDA_CHECK(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, device));
    vecadd::JsonLine("device")
        .integer("index", device)
        .str("name", prop.name)
        .str("compute_capability", std::to_string(prop.major) + "." + std::to_string(prop.minor))
        .integer("multiprocessors", prop.multiProcessorCount)
        .integer("memory_bytes", static_cast<long long>(prop.totalGlobalMem))
        .integer("runtime_version", runtime)
        .integer("driver_version", driver)
        .integer("concurrent_managed_access", concurrent)
        .print();
}

// The context is created and every kernel loaded (CUDA loads modules lazily, at a kernel's first launch)
// before anything is timed.
void warm_up() {
    const unsigned long long n = 1024;
    float* buffer;
    CUDA_CHECK(cudaMalloc(&buffer, 3 * n * sizeof(float)));
    for (Shape shape : {Shape::one_thread, Shape::one_block, Shape::many_blocks, Shape::many_blocks_vec4}) {
        launch(shape, buffer, buffer + n, buffer + 2 * n, n);
    }
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaFree(buffer));
}

}  // namespace

int main(int argc, char** argv) {
    vecadd::Args args(argc, argv);
    const Grid grid{static_cast<int>(args.integer("device", 0)), args.flag("corrupt-one")};
    const long long reps = args.integer("reps", 1), one_thread_reps = args.integer("one-thread-reps", 1);
    const long long warmup = args.integer("warmup", 0);
    std::vector<Shape> shapes;
    std::vector<Memory> modes;
    const std::vector<std::string> shape_names = args.list("shapes"), memory_names = args.list("memory");
    for (const std::string& name : shape_names) shapes.push_back(parse_shape(name));
    for (const std::string& name : memory_names) modes.push_back(parse_memory(name));

    CUDA_CHECK(cudaSetDevice(grid.device));
    device_line(grid.device);
    warm_up();
    for (unsigned long long n : args.sizes()) {
        copy_line(n, reps);
        HostArrays* host = nullptr;  // made once per size, only if the explicit mode runs
        for (size_t m = 0; m < modes.size(); ++m) {
            if (modes[m] == Memory::explicit_copies && host == nullptr) host = new HostArrays(n);
            for (size_t s = 0; s < shapes.size(); ++s) {
                // The one-thread kernel takes seconds at 100 M elements: its own count, and no warm-up
                // (warm_up() already loaded it).
                const bool slow = shapes[s] == Shape::one_thread;
                const long long timed = slow ? one_thread_reps : reps, untimed = slow ? 0 : warmup;
                vecadd::Parts discarded, parts;
                for (long long r = 0; r < untimed + timed; ++r) {
                    vecadd::Parts& into = r < untimed ? discarded : parts;
                    if (modes[m] == Memory::explicit_copies) {
                        explicit_repetition(shapes[s], n, *host, grid, into);
                    } else {
                        managed_repetition(shapes[s], modes[m], n, grid, into);
                    }
                }
                parts.print(n, shape_names[s].c_str(), memory_names[m].c_str(), untimed, blocks_for(shapes[s], n),
                            threads_for(shapes[s]));
            }
        }
        delete host;
    }
    return 0;
}
