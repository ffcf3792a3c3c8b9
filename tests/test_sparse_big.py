"""A 10^6 x 10^6 sparse matrix with 10^7 stored entries, differentiated w.r.t. its values and a
dense vector: the peak RSS of the process (measured in a subprocess with resource.getrusage)
shows that nothing of size 10^12 (8 TB dense) was ever attempted."""
import json
import os
import subprocess
import sys

import numpy as np
import scipy.sparse as sp

N, NNZ = 10 ** 6, 10 ** 7


def loss(A, x):
    y = A @ x
    return np.sum(y ** 2) + np.sum(A.T @ x) + A.sum()


def _child():
    import resource
    import time

    import srcad
    rng = np.random.default_rng(0)
    per_row = NNZ // N
    # sorted, distinct columns in every row: column c of row i lies in band c of width N / per_row
    cols = (np.arange(per_row, dtype=np.int32) * (N // per_row)
            + rng.integers(0, N // per_row, (N, per_row), dtype=np.int32)).ravel()
    indptr = np.arange(0, NNZ + 1, per_row, dtype=np.int32)
    A = sp.csr_array((rng.normal(size=NNZ), cols, indptr), shape=(N, N))
    del cols
    x = rng.normal(size=N)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.perf_counter()
    gA, gx = srcad.grad(loss, wrt=(0, 1))(A, x)
    elapsed = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss        # KiB on Linux
    # spot checks against the analytic gradient: dL/dA_ij = 2 y_i x_j + x_i + 1, dL/dx = 2 A^T y + A 1
    y = A @ x
    p = rng.integers(0, NNZ, 50)
    i = np.searchsorted(indptr, p, side="right") - 1
    j = A.indices[p]
    ok_a = np.allclose(gA.data[p], 2 * y[i] * x[j] + x[i] + 1.0, rtol=1e-10, atol=1e-10)
    q = rng.integers(0, N, 50)
    want_x = (2 * (A.T @ y) + A @ np.ones(N))[q]
    ok_x = np.allclose(gx[q], want_x, rtol=1e-9, atol=1e-9)
    print(json.dumps(dict(
        type=type(gA).__name__, nnz=int(gA.nnz), shape=list(gA.shape), same_indices=bool(np.array_equal(gA.indices, A.indices)),
        x_shape=list(gx.shape), ok_a=bool(ok_a), ok_x=bool(ok_x), seconds=elapsed,
        peak_mib=peak / 1024, before_mib=before / 1024,
        input_mib=(A.data.nbytes + A.indices.nbytes + A.indptr.nbytes + x.nbytes) / 2 ** 20)))


def test_ten_million_entries_never_densified():
    # the child imports srcad as this process does (the installed package, or PYTHONPATH's)
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child"], capture_output=True,
                         text=True, env=dict(os.environ), timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["type"] == "csr_array" and r["nnz"] == NNZ and r["shape"] == [N, N] and r["same_indices"]
    assert r["x_shape"] == [N] and r["ok_a"] and r["ok_x"]
    # a dense 10^6 x 10^6 float64 array is 7.3 TiB; the inputs are ~130 MiB. The whole process,
    # inputs, generated code, gradients and the cached transposed index included, stays < 1.5 GiB
    assert r["peak_mib"] < 1536, r
    print(r)


if __name__ == "__main__" and "--child" in sys.argv:
    _child()
