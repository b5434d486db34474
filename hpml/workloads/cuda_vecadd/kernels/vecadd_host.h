// Host-side helpers shared by the CUDA host program (vecadd.cu) and the CPU baseline (vecadd_cpu.cpp):
// the input pattern, the exact check of the sum, the command line, the clock and the JSON lines that
// workloads/cuda_vecadd/programs.py parses. Plain C++17, no CUDA.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <algorithm>
#include <string>
#include <thread>
#include <vector>

namespace vecadd {

// Runs work(part, begin, end) over [0, n) in up to kMaxThreads threads, part = 0, 1, ... Only for the untimed
// host work (filling the inputs, poisoning and checking c): at 100 M elements, first-touching fresh (and
// managed) pages from one thread took most of the grid's wall time. The timed CPU loop stays one plain loop.
constexpr unsigned kMaxThreads = 8;

template <typename Work>
inline void in_parallel(unsigned long long n, Work work) {
    const unsigned long long threads =
        n < (1ull << 20) ? 1 : std::min(kMaxThreads, std::max(1u, std::thread::hardware_concurrency()));
    const unsigned long long chunk = (n + threads - 1) / threads;
    std::vector<std::thread> pool;
    for (unsigned long long part = 0; part * chunk < n; ++part) {
        pool.emplace_back(work, part, part * chunk, std::min(n, (part + 1) * chunk));
    }
    for (std::thread& thread : pool) thread.join();
}

// Inputs that are not all zeros and whose sums are exact in float: a[i] = (i % 1000) / 2,
// b[i] = (i % 997) / 4 + 1 (b is never 0, so a c left at 0 or NaN is always caught). Within a range the
// remainders are counted, not divided: a 64-bit division per element made filling 100 M elements take seconds.
template <typename Visit>
inline void for_each_input(unsigned long long begin, unsigned long long end, Visit visit) {
    unsigned ra = static_cast<unsigned>(begin % 1000), rb = static_cast<unsigned>(begin % 997);
    for (unsigned long long i = begin; i < end; ++i) {
        visit(i, static_cast<float>(ra) * 0.5f, static_cast<float>(rb) * 0.25f + 1.0f);
        if (++ra == 1000) ra = 0;
        if (++rb == 997) rb = 0;
    }
}

inline void fill_inputs(float* a, float* b, unsigned long long n) {
    in_parallel(n, [=](unsigned long long, unsigned long long begin, unsigned long long end) {
        for_each_input(begin, end, [=](unsigned long long i, float x, float y) {
            a[i] = x;
            b[i] = y;
        });
    });
}

// c is poisoned with NaN (all bytes 0xFF) before every repetition, so a kernel or a copy that did not run
// leaves NaNs, never the previous repetition's right answer.
inline void poison(float* c, unsigned long long n) {
    in_parallel(n, [=](unsigned long long, unsigned long long begin, unsigned long long end) {
        std::memset(c + begin, 0xFF, (end - begin) * sizeof(float));
    });
}

// Elements where c[i] != a[i] + b[i], the inputs recomputed here (so a and b, which under managed memory now
// live on the GPU, are not read back) and added in float: the same IEEE round-to-nearest addition the GPU does.
inline long long count_mismatches(const float* c, unsigned long long n) {
    std::vector<long long> wrong(kMaxThreads, 0);
    in_parallel(n, [&](unsigned long long part, unsigned long long begin, unsigned long long end) {
        long long& mine = wrong[part];
        for_each_input(begin, end, [&](unsigned long long i, float x, float y) {
            if (!(c[i] == x + y)) ++mine;
        });
    });
    long long total = 0;
    for (long long count : wrong) total += count;
    return total;
}

// --corrupt-one (tests only): one element of c is changed after the add, so the check must find 1 per rep.
inline void corrupt_one(float* c, unsigned long long n) { c[n / 2] += 1.0f; }

inline double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

[[noreturn]] inline void fail(const std::string& message) {
    std::fprintf(stderr, "vecadd: %s\n", message.c_str());
    std::exit(2);
}

// "--key value" pairs, and flags ("--corrupt-one") with no value.
class Args {
  public:
    Args(int argc, char** argv) {
        for (int i = 1; i < argc; ++i) {
            std::string key = argv[i];
            if (key.rfind("--", 0) != 0) fail("unexpected argument " + key);
            bool has_value = i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0;
            values_[key.substr(2)] = has_value ? argv[++i] : "";
        }
    }
    bool flag(const std::string& key) const { return values_.count(key) > 0; }
    std::string text(const std::string& key) const {
        auto found = values_.find(key);
        if (found == values_.end()) fail("missing --" + key);
        return found->second;
    }
    std::vector<std::string> list(const std::string& key) const {
        std::vector<std::string> items;
        std::string all = text(key), item;
        for (char ch : all + ",") {
            if (ch == ',') {
                if (!item.empty()) items.push_back(item);
                item.clear();
            } else {
                item += ch;
            }
        }
        if (items.empty()) fail("--" + key + " needs at least one value");
        return items;
    }
    long long integer(const std::string& key, long long low) const {
        char* end = nullptr;
        std::string value = text(key);
        long long number = std::strtoll(value.c_str(), &end, 10);
        if (value.empty() || *end != '\0' || number < low) {
            fail("--" + key + " must be an integer >= " + std::to_string(low) + ", got '" + value + "'");
        }
        return number;
    }
    std::vector<unsigned long long> sizes() const {
        std::vector<unsigned long long> out;
        for (const std::string& item : list("sizes")) {
            char* end = nullptr;
            unsigned long long n = std::strtoull(item.c_str(), &end, 10);
            if (*end != '\0' || n == 0) fail("--sizes takes element counts >= 1, got '" + item + "'");
            out.push_back(n);
        }
        return out;
    }

  private:
    std::map<std::string, std::string> values_;
};

// One JSON object on one line: {"kind": ..., "key": value, ...}. Seconds print with 9 significant digits
// (nanoseconds at 1 s).
class JsonLine {
  public:
    explicit JsonLine(const char* kind) { text_ = std::string("{\"kind\": \"") + kind + "\""; }
    JsonLine& str(const char* key, const std::string& value) {
        text_ += std::string(", \"") + key + "\": \"" + value + "\"";
        return *this;
    }
    JsonLine& integer(const char* key, long long value) {
        text_ += std::string(", \"") + key + "\": " + std::to_string(value);
        return *this;
    }
    // null when empty: a part this memory mode does not have (no host-to-device copy under managed memory)
    JsonLine& seconds(const char* key, const std::vector<double>& values) {
        text_ += std::string(", \"") + key + "\": ";
        if (values.empty()) {
            text_ += "null";
            return *this;
        }
        text_ += "[";
        for (size_t i = 0; i < values.size(); ++i) {
            char buffer[64];
            std::snprintf(buffer, sizeof buffer, "%s%.9g", i ? ", " : "", values[i]);
            text_ += buffer;
        }
        text_ += "]";
        return *this;
    }
    JsonLine& counts(const char* key, const std::vector<long long>& values) {
        text_ += std::string(", \"") + key + "\": [";
        for (size_t i = 0; i < values.size(); ++i) text_ += (i ? ", " : "") + std::to_string(values[i]);
        text_ += "]";
        return *this;
    }
    void print() const {
        std::printf("%s}\n", text_.c_str());
        std::fflush(stdout);
    }

  private:
    std::string text_;
};

// The parts of one case, one entry per timed repetition (seconds); parts a mode lacks stay empty (null).
struct Parts {
    std::vector<double> alloc, fill, h2d, kernel, kernel_resident, d2h, free;
    std::vector<long long> mismatches;

    void print(unsigned long long n, const char* shape, const char* memory, long long warmup,
               long long blocks, long long threads) const {
        JsonLine("case")
            .integer("elements", static_cast<long long>(n))
            .str("shape", shape)
            .str("memory", memory)
            .integer("repetitions", static_cast<long long>(kernel.size()))
            .integer("warmup", warmup)
            .integer("blocks", blocks)
            .integer("threads_per_block", threads)
            .seconds("alloc_s", alloc)
            .seconds("fill_s", fill)
            .seconds("h2d_s", h2d)
            .seconds("kernel_s", kernel)
            .seconds("kernel_resident_s", kernel_resident)
            .seconds("d2h_s", d2h)
            .seconds("free_s", free)
            .counts("mismatches", mismatches)
            .print();
    }
};

}  // namespace vecadd
