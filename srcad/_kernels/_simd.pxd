# The inner loops of row max/min, in GCC/Clang vector types: one 32-byte vector holds 4 doubles or
# 8 floats (without AVX the compiler splits it into two SSE registers). gcc does not turn lane
# loops written in Cython into vector code (it unrolls them into chains of scalar max), so these
# loops are written here once, as a macro instantiated for both widths. Every one is exact: a
# max/min is the same whatever the order of its entries, so the lanes change no bit.
from libc.stdint cimport int64_t

cdef extern from *:
    """
    #include <math.h>
    #include <string.h>
    #include <stdint.h>

    typedef double srcad_vd __attribute__((vector_size(32)));
    typedef int64_t srcad_md __attribute__((vector_size(32)));
    typedef float srcad_vf __attribute__((vector_size(32)));
    typedef int32_t srcad_mf __attribute__((vector_size(32)));

    /* lane by lane a > b ? a : b (and a < b ? a : b): the definition of the x86 max/min
       instructions, NaN included (b when either is NaN), so with AVX one instruction each */
    #if defined(__AVX__)
    #include <immintrin.h>
    #define SRCAD_MAX_d(a, b) ((srcad_vd)_mm256_max_pd((__m256d)(a), (__m256d)(b)))
    #define SRCAD_MIN_d(a, b) ((srcad_vd)_mm256_min_pd((__m256d)(a), (__m256d)(b)))
    #define SRCAD_MAX_f(a, b) ((srcad_vf)_mm256_max_ps((__m256)(a), (__m256)(b)))
    #define SRCAD_MIN_f(a, b) ((srcad_vf)_mm256_min_ps((__m256)(a), (__m256)(b)))
    #else
    #define SRCAD_MAX_d(a, b) srcad_pick_d((srcad_md)((a) > (b)), a, b)
    #define SRCAD_MIN_d(a, b) srcad_pick_d((srcad_md)((a) < (b)), a, b)
    #define SRCAD_MAX_f(a, b) srcad_pick_f((srcad_mf)((a) > (b)), a, b)
    #define SRCAD_MIN_f(a, b) srcad_pick_f((srcad_mf)((a) < (b)), a, b)
    #endif

    /* S: name suffix, T: scalar, V: vector of T, M: mask vector (IT lanes as wide as T), W: lanes */
    #define SRCAD_EXTREME_FNS(S, T, V, M, IT, W)                                                \\
    static inline V srcad_load_##S(const T* p) { V v; memcpy(&v, p, sizeof v); return v; }      \\
    static inline V srcad_splat_##S(T a) { V v; for (int j = 0; j < W; j++) v[j] = a; return v; } \\
    static inline M srcad_iota_##S(void) { M i; for (int j = 0; j < W; j++) i[j] = j; return i; } \\
    static inline M srcad_isplat_##S(IT a) { M i; for (int j = 0; j < W; j++) i[j] = a; return i; } \\
    static inline V srcad_pick_##S(M m, V a, V b) { return (V)(((M)a & m) | ((M)b & ~m)); }     \\
    /* lane by lane: a where it beats b (is larger, or smaller for a min), else b */            \\
    static inline V srcad_better_##S(V a, V b, int is_max) {                                   \\
        return is_max ? SRCAD_MAX_##S(a, b) : SRCAD_MIN_##S(a, b); }                           \\
    static inline T srcad_hbest_##S(V o, int is_max) {                                         \\
        T r = o[0];                                                                            \\
        for (int j = 1; j < W; j++) r = (is_max ? o[j] > r : o[j] < r) ? o[j] : r;             \\
        return r; }                                                                            \\
    static inline int64_t srcad_hsum_##S(M m) {                                                \\
        int64_t a = 0;                                                                         \\
        for (int j = 0; j < W; j++) a += m[j];                                                 \\
        return a; }                                                                            \\
    /* max (min) of x[:n] for n >= 4 W, NaN if one is NaN: whole windows of 4 W, then the     \\
       last 4 W entries again (an entry seen twice changes no max) */                         \\
    static inline T srcad_run_extreme_##S(const T* x, Py_ssize_t n, int is_max) {             \\
        V o0 = srcad_load_##S(x), o1 = srcad_load_##S(x + W);                                  \\
        V o2 = srcad_load_##S(x + 2 * W), o3 = srcad_load_##S(x + 3 * W), v0, v1, v2, v3;      \\
        M nan = (M)(o0 != o0) | (M)(o1 != o1) | (M)(o2 != o2) | (M)(o3 != o3);                 \\
        Py_ssize_t q = 4 * W;                                                                  \\
        while (q < n) {                                                                        \\
            if (q + 4 * W > n) q = n - 4 * W;                                                  \\
            v0 = srcad_load_##S(x + q); v1 = srcad_load_##S(x + q + W);                         \\
            v2 = srcad_load_##S(x + q + 2 * W); v3 = srcad_load_##S(x + q + 3 * W);             \\
            o0 = srcad_better_##S(v0, o0, is_max); o1 = srcad_better_##S(v1, o1, is_max);     \\
            o2 = srcad_better_##S(v2, o2, is_max); o3 = srcad_better_##S(v3, o3, is_max);     \\
            nan |= (M)(v0 != v0) | (M)(v1 != v1) | (M)(v2 != v2) | (M)(v3 != v3);              \\
            q += 4 * W;                                                                        \\
        }                                                                                      \\
        o0 = srcad_better_##S(srcad_better_##S(o1, o0, is_max),                                \\
                              srcad_better_##S(o3, o2, is_max), is_max);                       \\
        return srcad_hsum_##S(nan) ? (T)NAN : srcad_hbest_##S(o0, is_max); }                   \\
    /* the position q of the one entry x[q] == m, or -1 when none or several are (n >= W):    \\
       whole windows of W, then the last W entries, counting those not seen yet */            \\
    static inline int64_t srcad_locate_##S(const T* x, Py_ssize_t n, T m) {                   \\
        M iota = srcad_iota_##S(), cnt = srcad_isplat_##S(0), pos = cnt, eq;                   \\
        V mb = srcad_splat_##S(m);                                                             \\
        Py_ssize_t q = 0, t = n - W;                                                           \\
        for (; q + W <= n; q += W) {                                                           \\
            eq = (M)(srcad_load_##S(x + q) == mb);                                             \\
            cnt -= eq;                                                                         \\
            pos += eq & (iota + (IT)q);                                                        \\
        }                                                                                      \\
        if (q < n) {                                                                           \\
            eq = (M)(srcad_load_##S(x + t) == mb) & (iota + (IT)t >= srcad_isplat_##S((IT)q)); \\
            cnt -= eq;                                                                         \\
            pos += eq & (iota + (IT)t);                                                        \\
        }                                                                                      \\
        return srcad_hsum_##S(cnt) == 1 ? srcad_hsum_##S(pos) : -1; }                          \\
    /* max (min) of x[:n] for 1 <= n <= 4 W, NaN if one is NaN, reading x[:4 W] (the lanes     \\
       past n masked off, no branch); with at (else NULL), *at = the position locate gives */  \\
    static inline T srcad_short_extreme_##S(const T* x, Py_ssize_t n, int is_max, int64_t* at) { \\
        M iota = srcad_iota_##S(), nb = srcad_isplat_##S((IT)n), k0, k1, k2, k3, nan, eq, cnt, pos; \\
        V e = srcad_splat_##S((T)(is_max ? -INFINITY : INFINITY)), v0, v1, v2, v3, mb;         \\
        T m;                                                                                   \\
        k0 = iota < nb; k1 = iota + W < nb; k2 = iota + 2 * W < nb; k3 = iota + 3 * W < nb;    \\
        v0 = srcad_pick_##S(k0, srcad_load_##S(x), e);                                         \\
        v1 = srcad_pick_##S(k1, srcad_load_##S(x + W), e);                                     \\
        v2 = srcad_pick_##S(k2, srcad_load_##S(x + 2 * W), e);                                 \\
        v3 = srcad_pick_##S(k3, srcad_load_##S(x + 3 * W), e);                                 \\
        nan = (M)(v0 != v0) | (M)(v1 != v1) | (M)(v2 != v2) | (M)(v3 != v3);                   \\
        m = srcad_hbest_##S(srcad_better_##S(srcad_better_##S(v1, v0, is_max),                 \\
                                             srcad_better_##S(v3, v2, is_max), is_max), is_max); \\
        m = srcad_hsum_##S(nan) ? (T)NAN : m;                                                  \\
        if (at) {                                                                              \\
            mb = srcad_splat_##S(m);                                                           \\
            eq = (M)(v0 == mb) & k0; cnt = eq; pos = eq & iota;                                \\
            eq = (M)(v1 == mb) & k1; cnt += eq; pos += eq & (iota + W);                        \\
            eq = (M)(v2 == mb) & k2; cnt += eq; pos += eq & (iota + 2 * W);                    \\
            eq = (M)(v3 == mb) & k3; cnt += eq; pos += eq & (iota + 3 * W);                    \\
            *at = srcad_hsum_##S(cnt) == -1 ? srcad_hsum_##S(pos) : -1;                        \\
        }                                                                                      \\
        return m; }

    SRCAD_EXTREME_FNS(d, double, srcad_vd, srcad_md, int64_t, 4)
    SRCAD_EXTREME_FNS(f, float, srcad_vf, srcad_mf, int32_t, 8)
    """
    double srcad_run_extreme_d(const double* x, Py_ssize_t n, int is_max) noexcept nogil
    float srcad_run_extreme_f(const float* x, Py_ssize_t n, int is_max) noexcept nogil
    int64_t srcad_locate_d(const double* x, Py_ssize_t n, double m) noexcept nogil
    int64_t srcad_locate_f(const float* x, Py_ssize_t n, float m) noexcept nogil
    double srcad_short_extreme_d(const double* x, Py_ssize_t n, int is_max, int64_t* at) noexcept nogil
    float srcad_short_extreme_f(const float* x, Py_ssize_t n, int is_max, int64_t* at) noexcept nogil
