# Fused types shared by the kernels: values are float32 or float64, indices int32 or int64.
from libc.stdint cimport int32_t, int64_t

ctypedef fused real_t:
    float
    double

ctypedef fused index_t:
    int32_t
    int64_t

# A second index type for segment ids, so that a kernel over segment ids can call helpers
# specialised on index_t independently of the ids' width.
ctypedef fused key_t:
    int32_t
    int64_t
