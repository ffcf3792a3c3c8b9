"""Safety: caches that must never serve stale facts, line numbering of sources with unusual line
separators, file names in the cache directory, kernel errors as named errors, and fork safety.
Every derivative is checked against an analytic formula or a dense/numpy reference."""
import importlib.util
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp

import srcad
from srcad.errors import InputError


def _load(tmp_path, name, source):
    path = tmp_path / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ---- line separators: Python numbers lines at \n, \r\n, \r only -------------------------------------
# str.splitlines also cuts at these; each sits in a comment or a string of the user's function
ODD_SEPARATORS = ["\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


@pytest.mark.parametrize("sep", ODD_SEPARATORS + ["".join(ODD_SEPARATORS)])
def test_odd_line_separators_in_comments_and_strings(tmp_path, sep):
    source = textwrap.dedent(f'''\
        import numpy as np


        def f(x):
            a = np.sin(x)  # a comment {sep} holding a separator
            b = a * x
            s = "a string {sep} too"
            c = np.exp(b) + x ** 3  # {sep}{sep}
            return np.sum(c) + 0.0 * len(s)
        ''')
    mod = _load(tmp_path, f"odd_sep_{ord(sep[0])}_{len(sep)}", source)
    x = np.array([0.3, -0.7, 1.1])

    a, b = np.sin(x), np.sin(x) * x
    db = np.cos(x) * x + a                                  # d b / d x (elementwise)
    grad = np.exp(b) * db + 3 * x ** 2
    d2b = -np.sin(x) * x + 2 * np.cos(x)
    hess = np.diag(np.exp(b) * (db ** 2 + d2b) + 6 * x)

    np.testing.assert_allclose(srcad.grad(mod.f)(x), grad, rtol=1e-12)
    np.testing.assert_allclose(srcad.hessian(mod.f)(x), hess, rtol=1e-11, atol=1e-13)
    v = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(srcad.hvp(mod.f)(x, v), hess @ v, rtol=1e-11, atol=1e-13)


def test_source_lines_match_python_numbering():
    from srcad.transform.compile import source_lines
    text = "a = 1  # \f\u2028\x85\nb = 2\r\nc = 3\rd = 4"
    lines = source_lines(text)
    assert "".join(lines) == text
    assert len(lines) == 4
    code = compile(text, "<t>", "exec")
    assert sorted({ins.positions.lineno for ins in __import__("dis").get_instructions(code)
                   if ins.positions.lineno}) == [1, 2, 3, 4]
    assert source_lines(text, False) == ["a = 1  # \f\u2028\x85", "b = 2", "c = 3", "d = 4"]


# ---- a function's __name__ never leaves the cache directory ----------------------------------------
@pytest.mark.parametrize("name", ["../../escape", "a/b", "..", "x\0y", "größe", "9lives", "class", "a b",
                                  "..\\..\\win", "/abs/path"])
def test_cache_file_names_stay_inside_the_directory(tmp_path, monkeypatch, name):
    from srcad import cache
    d = tmp_path / "cache"
    monkeypatch.setenv("SRCAD_CACHE_DIR", str(d))
    monkeypatch.setitem(cache._disk, "dir", None)
    monkeypatch.setitem(cache._disk, "bad", None)
    before = set(tmp_path.rglob("*"))

    def f(x):
        return np.sum(np.sin(x) * x)
    f.__name__ = name
    x = np.array([0.5, 1.5, -0.25])
    np.testing.assert_allclose(srcad.grad(f)(x), np.cos(x) * x + np.sin(x), rtol=1e-13)
    np.testing.assert_allclose(srcad.hessian(f)(x), np.diag(2 * np.cos(x) - np.sin(x) * x), rtol=1e-12, atol=1e-15)
    new = set(tmp_path.rglob("*")) - before
    files = [p for p in new if p.is_file()]
    assert files and all(p.parent == d for p in files), files
    assert all(cache._FILE.match(p.name) for p in files if p.name != cache._TAG)   # eviction sees them
    assert not [p for p in tmp_path.parent.iterdir() if "escape" in p.name or "win" in p.name]


def test_file_stem():
    from srcad.cache import file_stem
    for name in ["../../x", "a/b", "\0", "", "9", "größe", "x" * 500]:
        stem = file_stem(name)
        assert stem.isidentifier() and stem.isascii() and len(stem) <= 66 and "/" not in stem


# ---- kernels' index errors are named errors --------------------------------------------------------
@pytest.mark.parametrize("op", ["sum", "max", "min"])
@pytest.mark.parametrize("bad", [5, 3, -4])
def test_segment_ids_out_of_range(op, bad):
    fn = getattr(srcad.sparse, "segment_" + op)
    data = np.arange(8.0).reshape(4, 2)
    with pytest.raises(InputError, match=rf"segment_{op}: segment_ids holds {bad}, outside -3\.\.2"):
        fn(data, np.array([0, 1, bad, 1]), 3)

    def f(d):
        return np.sum(fn(d, np.array([0, 1, bad, 1]), 3) ** 2)
    with pytest.raises(InputError, match="segment_ids"):
        srcad.grad(f)(data)


@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_negative_segment_ids_count_from_the_end(op):
    data = np.array([[1.0, 5.0], [2.0, -1.0], [3.0, 0.5], [-2.0, 4.0]])
    ids = np.array([0, -1, 2, 1])
    ref_ids = ids % 3
    out = getattr(srcad.sparse, "segment_" + op)(data, ids, 3)
    red = {"sum": np.sum, "max": np.max, "min": np.min}[op]
    ref = np.array([red(data[ref_ids == s], axis=0) for s in range(3)])
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("bad", [5, -4])
@pytest.mark.parametrize("factored", [False, True])
def test_accumulate_rowsparse_rows_out_of_range(bad, factored):
    from srcad.runtime.rowsparse import RowSparse
    acc = np.arange(6.0).reshape(3, 2)
    keep = acc.copy()
    idx = np.array([0, bad])
    g = (RowSparse.outer(idx, np.array([1.0, 2.0]), np.array([3.0, 4.0]), (3, 2)) if factored
         else RowSparse(idx, np.ones((2, 2)), (3, 2)))
    with pytest.raises(InputError, match=rf"srcad.accumulate\(acc, g\): g is a srcad.RowSparse whose indices hold {bad}"):
        srcad.accumulate(acc, g)
    np.testing.assert_array_equal(acc, keep)           # all or nothing
    with pytest.raises(InputError, match="RowSparse of shape"):
        RowSparse(idx, np.ones((2, 2)), (3, 2)).todense()
    # in range, negative rows count from the end as in numpy
    good = RowSparse(np.array([0, -1, 0]), np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), (3, 2))
    ref = keep.copy()
    np.add.at(ref, np.array([0, -1, 0]), good.values)
    np.testing.assert_array_equal(srcad.accumulate(acc, good), ref)


# ---- sparse structure caches never serve a pattern that changed ----------------------------------
def _refill(rng, indptr, indices, data, n_cols, fmt_rows):
    """Refill CSR/CSC buffers in place with a new random sorted pattern of the same size."""
    per = np.diff(indptr)
    for i in range(len(per)):
        indices[indptr[i]:indptr[i + 1]] = np.sort(rng.choice(n_cols, per[i], replace=False))
    data[:] = rng.normal(size=len(data))


def _min_by(groups, values, n):
    out = np.full(n, np.inf)
    np.minimum.at(out, groups, values)
    return out


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("cls", ["array", "matrix"])
def test_index_buffers_refilled_in_place(fmt, cls):
    rng = np.random.default_rng(3)
    m, n, per = 9, 7, 3
    n_major, n_minor = (m, n) if fmt == "csr" else (n, m)
    indptr = np.arange(0, n_major * per + 1, per, dtype=np.int32)
    indices = np.empty(n_major * per, np.int32)
    data = np.empty(n_major * per)
    make = getattr(sp, f"{fmt}_{cls}")

    def loss(A, x):
        return np.sum((A.T @ x) ** 2) + np.sum(srcad.sparse.reduce_min(A, axis=0) * np.arange(1.0, n + 1))

    grad = srcad.grad(loss, wrt=(0, 1))
    for it in range(5):
        _refill(rng, indptr, indices, data, n_minor, per)
        A = make((data, indices, indptr), shape=(m, n))      # shares the buffers
        x = rng.normal(size=m)
        D = A.toarray()
        coo = A.tocoo()
        cols_min = _min_by(coo.col, coo.data, n)
        np.testing.assert_array_equal(srcad.sparse.reduce_min(A, axis=0), cols_min)
        np.testing.assert_allclose(srcad.sparse.matmul(A.T.tocsr() if fmt == "csr" else A.T, x), D.T @ x, rtol=1e-13)
        gA, gx = grad(A, x)
        np.testing.assert_allclose(gx, 2 * D @ (D.T @ x), rtol=1e-12, atol=1e-14)
        # d/dA_ij: 2 x_i (A^T x)_j, plus the weight of column j at the entry holding its minimum
        dense = 2 * np.outer(x, D.T @ x)
        ref = dense[coo.row, coo.col] + np.where(coo.data == cols_min[coo.col], np.arange(1.0, n + 1)[coo.col], 0.0)
        got = gA.tocoo()
        order_ref = np.lexsort((coo.col, coo.row))
        order_got = np.lexsort((got.col, got.row))
        np.testing.assert_allclose(got.data[order_got], ref[order_ref], rtol=1e-12, atol=1e-14)


def test_coo_coordinates_refilled_in_place():
    rng = np.random.default_rng(5)
    m, n, nnz = 8, 6, 20
    row, col, data = np.empty(nnz, np.int32), np.empty(nnz, np.int32), np.empty(nnz)
    for it in range(4):
        row[:], col[:], data[:] = rng.integers(0, m, nnz), rng.integers(0, n, nnz), rng.normal(size=nnz)
        A = sp.coo_array((data, (row, col)), shape=(m, n))
        X = rng.normal(size=(n, 2))
        G = rng.normal(size=(m, 2))
        D = A.toarray()
        np.testing.assert_allclose(srcad.sparse.matmul(A, X), D @ X, rtol=1e-12)
        np.testing.assert_allclose(srcad.grad(lambda A, G: np.sum(A.T @ G), wrt=1)(A, G),
                                   np.tile(D.sum(axis=1)[:, None], (1, 2)), rtol=1e-12)
        mx = np.full(m, -np.inf)
        np.maximum.at(mx, row, np.bincount(row * n + col, weights=data, minlength=m * n)[row * n + col])
        np.testing.assert_array_equal(srcad.sparse.reduce_max(A, axis=1), mx)


def test_a_refill_out_of_range_is_caught_again():
    indptr = np.array([0, 2, 3], np.int32)
    indices = np.array([0, 2, 1], np.int32)
    A = sp.csr_array((np.ones(3), indices, indptr), shape=(2, 3))
    np.testing.assert_array_equal(srcad.sparse.matmul(A, np.ones(3)), [2.0, 1.0])
    indices[1] = 7                                  # refilled with a column the shape has not
    with pytest.raises(InputError, match="column index 7"):
        srcad.sparse.matmul(A, np.ones(3))


def test_fingerprint_sees_every_change():
    from srcad import _kernels as K
    rng = np.random.default_rng(0)
    for n in [0, 1, 3, 1000, (1 << 16) * 3 + 5]:
        a = rng.integers(0, 50, n).astype(np.int32)
        fp = K.fingerprint(a)
        assert fp == K.fingerprint(a.copy())
        for t in (1, 2):
            K.set_num_threads(t)
            try:
                assert K.fingerprint(a) == fp          # the same for any thread count
            finally:
                K.set_num_threads(K._default_num_threads())
        if n >= 2:
            b = a.copy()
            i, j = 0, n - 1
            b[i], b[j] = a[j] + 1, a[i]
            assert K.fingerprint(b) != fp
            c = a.copy()
            c[n // 2] += 1
            assert K.fingerprint(c) != fp
            assert K.fingerprint(a[:-1]) != fp
        assert K.fingerprint(a.astype(np.int64)) != fp or n == 0


# ---- fork safety -----------------------------------------------------------------------------------
_FORK_SCRIPT = r'''
import os, sys, threading, time, multiprocessing as mp
import numpy as np, scipy.sparse as sp
import srcad
from srcad import _kernels as K

K.set_num_threads(2)
rng = np.random.default_rng(0)
A = sp.random(2000, 2000, density=0.02, format="csr", random_state=1)
X = rng.normal(size=(2000, 8))
assert A.nnz * 8 >= K.SERIAL_WORK
D = A.toarray()
srcad.sparse.matmul(A, X)                       # a parallel region in the parent
srcad.sparse.reduce_max(A, axis=0)


def loss(A, X):
    return np.sum((A @ X) ** 2)


def work():
    """Kernels (and a compile) in the child, against numpy; 0 when right."""
    ok = np.allclose(srcad.sparse.matmul(A, X), D @ X, rtol=1e-12)
    ok &= np.array_equal(srcad.sparse.reduce_max(A, axis=1), np.array([
        A.data[A.indptr[i]:A.indptr[i + 1]].max() if A.indptr[i + 1] > A.indptr[i] else -np.inf
        for i in range(A.shape[0])]))
    def fresh(A, X):
        return np.sum((A @ X) ** 2) + 0.0
    g = srcad.grad(fresh, wrt=1)(A, X)
    ok &= np.allclose(g, 2 * D.T @ (D @ X), rtol=1e-10)
    return 0 if ok else 3


def wait(pid, limit=60):
    t = time.time()
    while time.time() - t < limit:
        r, st = os.waitpid(pid, os.WNOHANG)
        if r:
            return os.waitstatus_to_exitcode(st)
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return "hung"


def fork_and_work():
    pid = os.fork()
    if pid == 0:
        os._exit(work())
    return wait(pid)


results = {"plain fork": fork_and_work()}

# a fork while other threads hold srcad's locks (a compile, the pattern cache, the memory pool)
from srcad import cache, _kernels
from srcad._kernels import _pool
from srcad.runtime import pattern_cache
held, release = threading.Event(), threading.Event()
def hold():
    with cache._lock, pattern_cache._LOCK, _pool._lock:
        held.set()
        release.wait()
t = threading.Thread(target=hold)
t.start()
held.wait()
results["fork while locks are held"] = fork_and_work()
release.set()
t.join()

ctx = mp.get_context("fork")
with ctx.Pool(1) as pool:
    r = pool.apply_async(work)
    try:
        results["multiprocessing fork pool"] = r.get(timeout=60)
    except mp.TimeoutError:
        results["multiprocessing fork pool"] = "hung"
        pool.terminate()
print(results)
sys.exit(0 if all(v == 0 for v in results.values()) else 1)
'''


def test_kernels_and_compiles_work_in_a_forked_child(tmp_path):
    script = tmp_path / "fork_child.py"
    script.write_text(_FORK_SCRIPT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [os.path.dirname(os.path.dirname(os.path.abspath(srcad.__file__)))] + sys.path)}
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=240, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_set_num_threads_in_a_child_forked_after_a_parallel_kernel(tmp_path):
    from srcad import _kernels as K
    saved = dict(K._fork), K.get_num_threads()
    try:
        K._fork.update(parallel_ran=True, single=False)
        K._after_fork_in_child()                  # what os.register_at_fork runs in the child
        assert K.get_num_threads() == 1
        with pytest.warns(RuntimeWarning, match="forked after srcad's kernels ran in parallel"):
            K.set_num_threads(2)
        assert K.get_num_threads() == 1
    finally:
        K._fork.clear()
        K._fork.update(saved[0])
        K.set_num_threads(saved[1])


def test_odd_separator_in_a_nested_def(tmp_path):
    source = textwrap.dedent('''\
        import numpy as np


        def f(x):
            def inner(v):
                w = v * v  # \u2028 a separator \f in the nested def
                return np.sin(w)
            return np.sum(inner(x) * x)
        ''')
    mod = _load(tmp_path, "odd_sep_nested", source)
    x = np.array([0.4, -1.2])
    # f = sum(x sin(x^2)): f' = sin(x^2) + 2 x^2 cos(x^2); f'' = 6 x cos(x^2) - 4 x^3 sin(x^2)
    np.testing.assert_allclose(srcad.grad(mod.f)(x), np.sin(x ** 2) + 2 * x ** 2 * np.cos(x ** 2), rtol=1e-12)
    np.testing.assert_allclose(srcad.hessian(mod.f)(x), np.diag(6 * x * np.cos(x ** 2) - 4 * x ** 3 * np.sin(x ** 2)),
                               rtol=1e-11, atol=1e-14)
