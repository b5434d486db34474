"""The cuda_vecadd workload: CUDA vector add from the CPU to many blocks, explicit copies vs unified memory.

    __main__.py      the torchrun entry point: build, run the grid, write result.json
    kernels/         the CUDA C++ and C++ sources, shipped in the package: vecadd_kernels.h (the three kernels,
                     one source for both build paths), vecadd.cu (the CUDA host program), vecadd_cpu.cpp (the
                     CPU baseline), vecadd_host.h (what both host programs share)
    build_cache.py   builds keyed by source, compiler version, arch and flags; flock + rename against races
    nvcc_path.py     vecadd.cu with nvcc;   nvrtc_path.py  the kernels through NVRTC (CuPy), host in Python
    cpu_path.py      vecadd_cpu.cpp with the host C++ compiler
    programs.py      the programs' command line and JSON lines, and what each timed part means
"""
