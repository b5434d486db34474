// The CPU baseline of the cuda_vecadd workload: c = a + b in a plain loop, one thread, built with the host
// C++ compiler (-O3, so the loop is vectorized as any optimizing build would do it).
//
//   vecadd_cpu --sizes 1000000,5000000 --reps 5 --warmup 1 [--corrupt-one]
//
// Per size: `warmup` untimed repetitions, then `reps` timed ones, each: allocate a, b, c (malloc: timed),
// fill a and b and poison c (not timed: the pages are touched here), the loop (timed), the exact check
// (not timed), free (timed). One JSON line per size on stdout (workloads/cuda_vecadd/programs.py).
#include <cstdlib>

#include "vecadd_host.h"

namespace {

void add(const float* __restrict a, const float* __restrict b, float* __restrict c, unsigned long long n) {
    for (unsigned long long i = 0; i < n; ++i) c[i] = a[i] + b[i];
}

void repetition(unsigned long long n, bool corrupt, vecadd::Parts& parts) {
    const size_t bytes = n * sizeof(float);
    double t = vecadd::now_s();
    float* a = static_cast<float*>(std::malloc(bytes));
    float* b = static_cast<float*>(std::malloc(bytes));
    float* c = static_cast<float*>(std::malloc(bytes));
    if (!a || !b || !c) vecadd::fail("malloc of 3 x " + std::to_string(bytes) + " bytes failed");
    parts.alloc.push_back(vecadd::now_s() - t);

    vecadd::fill_inputs(a, b, n);
    vecadd::poison(c, n);

    t = vecadd::now_s();
    add(a, b, c, n);
    parts.kernel.push_back(vecadd::now_s() - t);

    if (corrupt) vecadd::corrupt_one(c, n);
    parts.mismatches.push_back(vecadd::count_mismatches(c, n));

    t = vecadd::now_s();
    std::free(a);
    std::free(b);
    std::free(c);
    parts.free.push_back(vecadd::now_s() - t);
}

}  // namespace

int main(int argc, char** argv) {
    vecadd::Args args(argc, argv);
    const long long reps = args.integer("reps", 1), warmup = args.integer("warmup", 0);
    const bool corrupt = args.flag("corrupt-one");
    for (unsigned long long n : args.sizes()) {
        vecadd::Parts discarded, parts;
        for (long long r = 0; r < warmup; ++r) repetition(n, corrupt, discarded);
        for (long long r = 0; r < reps; ++r) repetition(n, corrupt, parts);
        parts.print(n, "cpu", "host", warmup, 0, 1);
    }
    return 0;
}
