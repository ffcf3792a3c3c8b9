# cython: language_level=3
"""What this machine runs, asked once by srcad._kernels when it picks a build of its kernels (the
baseline one, or the AVX2 one on x86-64 CPUs and operating systems that run AVX2), and the
OpenMP thread count that `omp_set_num_threads` (threadpoolctl) sets. Compiled for the baseline
instruction set like every kernel module without a suffix."""
cimport openmp

cdef extern from *:
    """
    #if (defined(__x86_64__) || defined(__i386__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
    static int srcad_cpu_has_avx2(void) { __builtin_cpu_init(); return __builtin_cpu_supports("avx2"); }
    #else
    static int srcad_cpu_has_avx2(void) { return 0; }
    #endif
    """
    int srcad_cpu_has_avx2() noexcept nogil


def has_avx2():
    """Whether the CPU and the operating system run AVX2 instructions."""
    return bool(srcad_cpu_has_avx2())


def omp_max_threads():
    """omp_get_max_threads() of the OpenMP runtime the kernels use (what omp_set_num_threads and
    OMP_NUM_THREADS set)."""
    return openmp.omp_get_max_threads()
