"""compile=True fuses a chain of elementwise float64 statements into one C loop (srcad/compiled/fuse.py).

One build (slow, shared by the module's tests). The fused gradient is checked against the Python
path bit for bit (the loop computes each number with the same IEEE operations and the same libm
functions: test_fused_libm_agrees_with_numpy_arrays checks that premise on this machine's NumPy
array loops), against central finite differences, with 1 and 2 OpenMP threads (the same bits),
and on arguments outside the rules (other shapes, strides, few numbers: the NumPy lines run).
"""
import ctypes
import ctypes.util
import hashlib
import importlib.util
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import srcad
from srcad import compiled
from srcad.compiled import build, fuse, pyx

FUSED = '''
import numpy as np


def floss(x, y, h):
    r = np.exp(-x * y) * (x - y) + np.sin(x) / (1.0 + h * y * y) - np.sqrt(y) * np.log(y) * np.cos(x)
    r = r + x * r * h
    return np.sum(r * r)
'''

RUN = '''
import hashlib, importlib.util, sys
import numpy as np, srcad
spec = importlib.util.spec_from_file_location("cfused", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
rng = np.random.default_rng(1)
x, y = rng.uniform(-1, 1, 80000), rng.uniform(0.5, 2, 80000)
g = srcad.grad(mod.floss, compile=True)(x, y, 0.3)
print(hashlib.sha256(g.tobytes()).hexdigest())
'''


def _args(shape, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1, 1, shape), rng.uniform(0.5, 2, shape)


@pytest.fixture(scope="module")
def fused(tmp_path_factory):
    root = tmp_path_factory.mktemp("fused")
    saved = {k: os.environ.get(k) for k in ("SRCAD_CACHE_DIR", "SRCAD_COMPILE_NICE")}
    os.environ["SRCAD_CACHE_DIR"] = str(root / "cache")
    os.environ.setdefault("SRCAD_COMPILE_NICE", "5")
    path = root / "cfused.py"
    path.write_text(FUSED)
    spec = importlib.util.spec_from_file_location("cfused", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    yield dict(root=root, mod=mod, path=path)
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="module")
def built(fused):
    f = fused["mod"].floss
    g = srcad.grad(f, compile=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", compiled.CompileWarning)
        out = g(*_args(40000), 0.3)
    info = compiled.last_build()
    return dict(f=f, g=g, out=out, ext=build._LOADED[info["module"]])


def test_emit_shows_the_fused_loop(fused):
    x, y = _args(400)
    text = srcad.emit(fused["mod"].floss, args=(x, y, 0.3), compile=True)
    assert "cdef void _srcad_fused_1(_SrcadView x, _SrcadView y," in text
    lines = text.splitlines()
    k = next(i for i, s in enumerate(lines) if s.startswith("cdef void _srcad_fused_1("))
    assert lines[k + 2].strip().startswith("# L6: r = np.exp(-x * y) * (x - y)")    # the user's line
    assert "prange(" in text
    assert ("libc.math.exp(" in text) == ("exp" in fuse.FUSE_LIBM)     # (fused where NumPy agrees with libm)
    assert "_srcad_shape = _srcad_fusable(2, (), x, y)" in text      # checked at run time ...
    assert "        neg_x = -x" in text                       # ... else the NumPy lines
    assert "# adjoint of L6:" in "\n".join(lines[:k + 200])   # the adjoint block fused too
    assert "_srcad_fused_2(" in text


def test_division_of_two_numbers_is_not_fused():
    """c / d of two Python floats raises ZeroDivisionError where NumPy's array division gives inf:
    the run-time check asks for an array among them (else the NumPy lines run), unless the
    divisor is a nonzero literal."""

    fn = "def f(x, c, d):\n    u = float(c)\n    v = float(d)\n    w = x * (u / v) + x * u / 2.0\n    return w\n"
    text, notes = pyx.translate(fn, {"f": {"x": ("d", 1), "c": "float", "d": "float"}})
    assert len(notes["fused"]) == 1
    line = next(s for s in text.splitlines() if "_srcad_fusable(" in s and "=" in s)
    assert line.strip() == "_srcad_shape = _srcad_fusable(1, ((1, 2),), x, u, v)"     # u / v: one an array


def test_a_statement_reading_its_own_target():
    """`y = y + ...` reads the old y at each place before the loop writes that place of a new array
    (bound to y after the loop); `y += ...` writes y's own numbers, each read just before, when y is
    writable and no other operand is in its memory; a tape push between is made before the loop."""
    fn = "def f(x):\n    tape = []\n    y = x * 2.0\n    tape.append(y)\n    y = y + x * x - x\n    return y\n"
    text, notes = pyx.translate(fn, {"f": {"x": ("d", 1)}})
    assert len(notes["fused"]) == 1 and "y_k = y_p[k * y_s] + x_p[k] * x_p[k] - x_p[k]" in text
    lines = [s.strip() for s in text.splitlines()]
    k = lines.index("tape.append(y)")
    assert lines[k + 1].startswith("_srcad_shape = _srcad_fusable(") and "y_new = _srcad_np.empty(_srcad_shape)" in lines
    assert lines.count("tape.append(y)") == 1 and lines[-3:-1] == ["else:", "y = y + x * x - x"]     # (pushed once)
    fn = "def f(x, s):\n    y = x * s\n    y2 = y + x * x\n    return y2\n"
    text, notes = pyx.translate(fn, {"f": {"x": ("d", 1), "s": "float"}})
    assert "y2_k = y_k + x_p[k] * x_p[k]" in text      # y read inside the run: the loop's own value
    fn = "def f(x, g):\n    x_bar = x * 2.0\n    x_bar += g * x\n    return x_bar\n"
    text, notes = pyx.translate(fn, {"f": {"x": ("d", 1), "g": ("d", 1)}})
    assert "_srcad_in_place_ok(x_bar, (g, x, ))" in text and "x_bar_p[k] = x_bar_k" in text


@pytest.mark.slow
def test_fused_libm_agrees_with_numpy_arrays():
    """The premise of bit equality: NumPy's float64 array loops give glibc's results here."""
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    x = np.random.default_rng(2).uniform(0.01, 50, 4000)
    for name, c in fuse.FUSE_LIBM.items():
        cf = getattr(libm, c)
        cf.restype, cf.argtypes = ctypes.c_double, [ctypes.c_double]
        want = np.array([cf(v) for v in x])
        assert np.array_equal(getattr(np, name)(x), want), name


@pytest.mark.slow
def test_fused_bits_and_fd(built):
    f, g = built["f"], built["g"]
    calls = []
    ext = built["ext"]
    check = ext._srcad_fusable
    ext._srcad_fusable = lambda *a: calls.append(check(*a)) or calls[-1]
    try:
        for shape in (40000, 80000):          # serial, and over prange (one signature: one build)
            x, y = _args(shape)
            got = g(x, y, 0.3)
            assert np.array_equal(got, srcad.grad(f)(x, y, 0.3))
        assert calls and all(c is not None for c in calls)
        calls.clear()
        x, y = _args(40000)
        for args in ((x[::2], y[::2]), (x, y[:1]), (x[:10], y[:10]), (x, np.float64(0.7) + 0 * x[:1])):
            assert np.array_equal(g(*args, 0.3), srcad.grad(f)(*args, 0.3))    # the NumPy lines
        assert None in calls        # (a run of x-shaped temporaries alone may still fuse)
    finally:
        ext._srcad_fusable = check
    x, y = _args(40, seed=3)
    eps, fd = 1e-6, np.zeros(40)
    for j in range(40):
        e = np.zeros(40)
        e[j] = eps
        fd[j] = (f(x + e, y, 0.3) - f(x - e, y, 0.3)) / (2 * eps)
    small = np.concatenate([x] * 1000), np.concatenate([y] * 1000)     # 40000 numbers: fused
    assert np.allclose(g(*small, 0.3)[:40], fd, rtol=1e-6, atol=1e-8)


@pytest.mark.slow
def test_fused_threads_same_bits(built, fused, tmp_path):
    out = set()
    for threads in ("1", "2"):
        env = dict(os.environ, OMP_NUM_THREADS=threads, SRCAD_FUSE_THREADS=threads)
        p = subprocess.run([sys.executable, "-c", RUN, str(fused["path"])], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        out.add(p.stdout.strip())
    x, y = _args(80000, seed=1)
    want = hashlib.sha256(srcad.grad(built["f"])(x, y, 0.3).tobytes()).hexdigest()
    assert out == {want}
