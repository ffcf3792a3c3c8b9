"""The builds of the kernels (baseline and, on x86-64, AVX2, picked at import by the CPU) give the
same bits: every kernel is run on the same inputs through each build, and the outputs are compared
bit for bit. Rows long and short (the vector paths' whole windows, tails and masked short rows),
NaN and ties, float32 and float64, one and two threads, vectors and blocks of several columns."""
import importlib
import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

import srcad._kernels as K

NAMES = ("_reduce", "_scatter", "_spmm")


def _builds():
    out = {"baseline": [importlib.import_module(f"srcad._kernels.{n}") for n in NAMES]}
    if importlib.util.find_spec("srcad._kernels._spmm_avx2") is not None and K._compiled("_cpu").has_avx2():
        out["avx2"] = [importlib.import_module(f"srcad._kernels.{n}_avx2") for n in NAMES]
    return out


BUILDS = _builds()


def _matrix(rng, dtype, n_rows=60, n_cols=70):
    lens = rng.choice([0, 1, 2, 3, 7, 8, 9, 31, 32, 33, 45, 70], size=n_rows)
    rows, cols = [], []
    for i, m in enumerate(lens):
        rows += [i] * m
        cols += sorted(rng.choice(n_cols, size=m, replace=False))
    data = rng.normal(size=len(rows)).round(1).astype(dtype)     # rounded: many ties
    data[rng.random(len(data)) < 0.02] = np.nan
    return sp.csr_array((data, (rows, cols)), shape=(n_rows, n_cols))


def _run_all(dtype, k, threads, seed):
    rng = np.random.default_rng(seed)
    A = _matrix(rng, dtype)
    ip, ix, d = A.indptr, A.indices, A.data
    X = rng.normal(size=(A.shape[1], k) if k > 1 else A.shape[1]).astype(dtype)
    G = rng.normal(size=(A.shape[0], k) if k > 1 else A.shape[0]).astype(dtype)
    K.set_num_threads(threads)
    out = {}
    out["matmul"] = K.csr_matmul(ip, ix, d, X, A.shape[0])
    t = K.csr_transpose_index(ip, ix, A.shape[1])
    out["matmul_t"] = K.csr_matmul_t(*t, d, G, A.shape[1])
    out["sddmm"] = K.sddmm(ip, ix, G, X)
    for op in ("max", "min"):
        vals, at = K.csr_row_reduce(ip, d, A.shape[0], op, locate=True)
        out[f"row_{op}"] = vals
        out[f"row_{op}_vjp"] = K.csr_row_reduce_vjp(ip, d, vals, G[:, 0] if k > 1 else G)
        cvals = K.csr_col_reduce(t[0], t[2], d, A.shape[1], op)
        out[f"col_{op}"] = cvals
        out[f"col_{op}_vjp"] = K.csr_col_reduce_vjp(t[0], t[2], d, cvals, X[:, 0] if k > 1 else X)
    seg = rng.integers(0, 9, size=40)
    E = rng.normal(size=(40, 13)).round(1).astype(dtype)
    for op in ("sum", "max", "min"):
        out[f"segment_{op}"] = K.segment_reduce(E, seg, 9, op)[0]
    idx = rng.integers(-A.shape[1], A.shape[1], size=50)
    out["gather"] = K.gather_rows(X, idx)
    out["scatter"] = K.scatter_add_rows(K.gather_rows(X, idx), idx, A.shape[1])
    out["outer"] = K.outer(X.reshape(-1)[:20], G.reshape(-1)[:30])
    return out


@pytest.mark.skipif(len(BUILDS) < 2, reason="one build of the kernels here (not x86-64 with AVX2, "
                                            "or built with SRCAD_NATIVE=1 / SRCAD_KERNEL_VARIANTS=0)")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k", [1, 3, 8])
def test_builds_give_the_same_bits(monkeypatch, dtype, k):
    threads = K.get_num_threads()
    results = {}
    try:
        for name, mods in BUILDS.items():
            for n, m in zip(NAMES, mods):
                monkeypatch.setattr(K, n, m)
            results[name] = [_run_all(dtype, k, nt, seed) for nt in (1, 2) for seed in range(2)]
    finally:
        K.set_num_threads(threads)
    base = results.pop("baseline")
    for name, res in results.items():
        for a, b in zip(base, res):
            for key in a:
                x, y = np.asarray(a[key]), np.asarray(b[key])
                assert x.dtype == y.dtype and x.shape == y.shape, key
                assert x.tobytes() == y.tobytes(), f"{key}: the {name} build differs from the baseline"


def test_isa_is_reported_and_can_be_forced(tmp_path):
    # the children start in an empty directory: `python -c` puts its working directory first on
    # sys.path, and the repository's root holds the unbuilt source tree (CI runs from there)
    assert K.isa in BUILDS
    env = dict(os.environ, SRCAD_KERNELS="baseline")
    code = "import srcad._kernels as k; print(k.isa, k._spmm.__name__)"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["baseline", "srcad._kernels._spmm"]
    r = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, SRCAD_KERNELS="sse9"),
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode != 0 and "SRCAD_KERNELS='sse9': expected auto, baseline or avx2" in r.stderr
