"""compile=True (srcad/compiled/): the generated derivative as Cython, built and cached.

Builds are slow (10-40 s each on a loaded machine), so every test that builds is marked slow and
the module builds few and shares them:
one module-scope cache directory, one module of workloads written to it (a second process imports
the same file, so it generates the same text and must reuse the build). Every derivative is
checked against central finite differences, and against the Python path bit for bit where the
operations are the same (IEEE arithmetic and the libm functions whose results NumPy shares:
test_libm_agrees_with_numpy checks that premise on this machine).
"""
import ctypes
import ctypes.util
import importlib.util
import json
import os
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

import srcad
from srcad import compiled
from srcad.compiled import build, common, pyx

WORKLOADS = '''
import numpy as np


def scalar(x):
    y = x
    for i in range(200):
        y = np.sin(y) * 0.9 + 0.1 * y * y
    return y


def elem(x):
    n = x.shape[0]
    t = 0.0
    for i in range(n):
        t = t + np.sin(x[i]) * x[i]
    return t


def shifted(x):
    n = x.shape[0]
    t = 0.0
    for i in range(n - 1):
        t = t + x[i + 1] * x[i]
    return t


def mixed(x, w, scale=2.0):
    acc = 0.0
    parts = []
    for i in range(w.shape[0]):
        v = w[i] * x
        parts.append(np.tanh(v))
        acc = acc + v * v
    d = {"a": acc, "b": sum(parts)}
    k = 0
    while k < 3:
        acc = acc * 0.5 + d["b"]
        k += 1
    if acc > 1.0:
        acc = acc + np.exp(-x)
    return acc * scale + np.sum(w * x)


def rhs(s, p):
    return np.array([p[0] * (s[1] - s[0]), s[0] * (p[1] - s[2]) - s[1], s[0] * s[1] - p[2] * s[2]])


def rk4(p, s0, h, n):
    s = s0
    for i in range(n):
        k1 = rhs(s, p)
        k2 = rhs(s + 0.5 * h * k1, p)
        k3 = rhs(s + 0.5 * h * k2, p)
        k4 = rhs(s + h * k3, p)
        s = s + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return np.sum(s)


def rk4s(a, b, c, x, y, z, h, n):
    for i in range(n):
        k1x = a * (y - x)
        k1y = x * (b - z) - y
        k1z = x * y - c * z
        x2 = x + 0.5 * h * k1x
        y2 = y + 0.5 * h * k1y
        z2 = z + 0.5 * h * k1z
        k2x = a * (y2 - x2)
        k2y = x2 * (b - z2) - y2
        k2z = x2 * y2 - c * z2
        x3 = x + 0.5 * h * k2x
        y3 = y + 0.5 * h * k2y
        z3 = z + 0.5 * h * k2z
        k3x = a * (y3 - x3)
        k3y = x3 * (b - z3) - y3
        k3z = x3 * y3 - c * z3
        x4 = x + h * k3x
        y4 = y + h * k3y
        z4 = z + h * k3z
        k4x = a * (y4 - x4)
        k4y = x4 * (b - z4) - y4
        k4z = x4 * y4 - c * z4
        x = x + h / 6.0 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x)
        y = y + h / 6.0 * (k1y + 2.0 * k2y + 2.0 * k3y + k4y)
        z = z + h / 6.0 * (k1z + 2.0 * k2z + 2.0 * k3z + k4z)
    return x + y + z
'''

XS = np.linspace(-1.0, 1.5, 257)


def _fd(f, x, eps=1e-6):
    if isinstance(x, float):
        return (f(x + eps) - f(x - eps)) / (2 * eps)
    g = np.zeros_like(x)
    for j in range(x.size):
        e = np.zeros_like(x)
        e.flat[j] = eps
        g.flat[j] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """A private cache directory and the workloads module in it, for the whole module."""
    root = tmp_path_factory.mktemp("compiled")
    cache_dir = root / "cache"
    saved = {k: os.environ.get(k) for k in ("SRCAD_CACHE_DIR", "SRCAD_COMPILE_NICE")}
    os.environ["SRCAD_CACHE_DIR"] = str(cache_dir)
    os.environ.setdefault("SRCAD_COMPILE_NICE", "5")
    path = root / "cworkloads.py"
    path.write_text(WORKLOADS)
    spec = importlib.util.spec_from_file_location("cworkloads", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["cworkloads"] = mod
    spec.loader.exec_module(mod)
    yield dict(root=root, cache=cache_dir, mod=mod, path=path)
    sys.modules.pop("cworkloads", None)
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="module")
def scalar_built(env):
    f = env["mod"].scalar
    vg = srcad.value_and_grad(f, compile=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", compiled.CompileWarning)
        out = vg(0.7)
    return dict(f=f, vg=vg, out=out, build=compiled.last_build())


@pytest.fixture(scope="module")
def elem_built(env):
    f = env["mod"].elem
    g = srcad.grad(f, compile=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", compiled.CompileWarning)
        out = g(XS)
    return dict(f=f, g=g, out=out, build=compiled.last_build())


# ---- the premise of bit equality ----------------------------------------------------------------
@pytest.mark.skipif(ctypes.util.find_library("m") is None, reason="no C math library to compare with")
def test_libm_agrees_with_numpy():
    """pyx.py calls libc.math only for the functions whose float64 results NumPy shares bit for bit."""
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    x = np.random.default_rng(0).uniform(-3.0, 3.0, 2000)
    for np_name, c_name in pyx._LIBM.items():
        fn = getattr(np, np_name, None)
        if fn is None:
            continue
        cf = getattr(libm, c_name)
        cf.restype, cf.argtypes = ctypes.c_double, [ctypes.c_double]
        xs = np.clip(x / 3.0, -1.0, 1.0) if c_name in ("asin", "acos") else \
            np.abs(x) if c_name in ("log", "sqrt", "log1p") else x
        for v in xs:
            a, b = float(fn(np.float64(v))), cf(float(v))
            assert a == b or (a != a and b != b), (np_name, v, a, b)
    assert "tanh" not in pyx._LIBM        # NumPy's tanh differs from glibc's in the last bit


# ---- the .pyx text (no build) ---------------------------------------------------------------------
def test_emit_compile_shows_typed_pyx(env):
    m = env["mod"]
    text = srcad.emit(m.scalar, args=(0.7,), compile=True)
    assert text.startswith("# cython:")
    assert "def scalar_vjp(double x, scalar_bar=1.0):" in text
    assert "cdef double scaled_sin_y, scaled_y, scaled_y_y, sin_y, y" in text
    assert "cdef Py_ssize_t i" in text
    assert "sin_y = libc.math.sin(y)" in text and "libc.math.cos(y)" in text
    assert "tape_d.push(y)" in text and "y = tape_d.pop()" in text
    assert "# L8: y = np.sin(y) * 0.9 + 0.1 * y * y" in text      # the user's line, as a comment
    # element reads: unchecked only where the loop proves them in range
    text = srcad.emit(m.elem, args=(XS,), compile=True)
    assert "cdef _SrcadView x_v" in text and "x_v = _SrcadView(x, 1, False)" in text
    assert "double[" not in text          # (no typed memoryview: views.py)
    lines = text.splitlines()
    k = lines.index("        # L16: t = t + np.sin(x[i]) * x[i]")
    assert lines[k + 1].strip() == "x_i = _srcad_at1_proven(x_v, i)[0]"
    text = srcad.emit(m.shifted, args=(XS,), compile=True)
    # x[i + 1] is not proven (nor x[i] under range(n - 1)): bounds-checked reads
    assert "_srcad_at1(x_v, i + 1)[0]" in text and "_srcad_at1(x_v, i)[0]" in text
    assert "_srcad_at1_proven(x_v" not in text
    # no signature: nothing about the arguments is assumed
    text = srcad.emit(m.scalar, compile=True)
    assert "def scalar_vjp(x, scalar_bar=1.0):" in text and "cdef Py_ssize_t i" in text


def test_cli_emit_compile(env, tmp_path, capsys):
    from srcad.cli import main
    out = tmp_path / "scalar.pyx"
    assert main(["emit", f"{env['path']}:scalar", "--compile", "-o", str(out)]) == 0
    text = out.read_text()
    assert text.startswith("# cython:") and "def scalar_vjp(x, scalar_bar=1.0):" in text
    # --args: the example arguments' kinds (and the small arrays' lengths)
    assert main(["emit", f"{env['path']}:rk4", "--compile", "--args", "np.array([10.0, 28.0, 2.5]), np.ones(3), 1e-3, 5",
                 "-o", str(out)]) == 0
    text = out.read_text()
    assert "def rk4_vjp(p, s0, double h, n, rk4_bar=1.0):" in text
    assert main(["emit", f"{env['path']}:rk4", "--args", "np.ones(3"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("srcad: error: --args 'np.ones(3' is not a Python expression") and err.strip().endswith(".")


def test_cache_clear_removes_compiled_builds(tmp_path, monkeypatch, capsys):
    from srcad.cli import main
    monkeypatch.setenv("SRCAD_CACHE_DIR", str(tmp_path / "c"))
    d = build.directory()
    (d / "srcad_cy_f_0123").mkdir()
    (d / "srcad_cy_f_0123" / "srcad_cy_f_0123.pyx").write_text("x = 1\n")
    (d / "tmp.1.2.ab").mkdir()
    (d / "unrelated").mkdir()                  # not srcad's: left alone
    assert main(["cache", "--info"]) == 0
    assert "compiled  : 1 build," in capsys.readouterr().out
    assert main(["cache", "--clear"]) == 0
    assert "and 1 compiled build from" in capsys.readouterr().out
    assert sorted(p.name for p in d.iterdir()) == ["unrelated"]


def test_supplied_names_are_bound_for_cython():
    """Cython refuses a global it never sees bound: the names srcad supplies at load are bound first."""
    src = "def f(x):\n    return helper(x) * K\n"
    text = pyx.translate(src, {"f": {"x": "float"}}, free=("helper", "K"))[0]
    assert "K = None\nhelper = None\n" in text


def test_a_name_neither_bound_nor_supplied_is_named_before_cython(monkeypatch):
    """A module reading a global it neither binds nor is given (GradBench particle's compiled primal
    once read `d_neg_potential`, an srcad.grad wrapper whose source defines `neg_potential`) is
    refused by name before Cython runs (Cython says only "undeclared name not builtin"), and
    compile=True falls back to the Python module with one warning naming it."""
    src = ("import numpy as np\n\n\ndef g(a):\n    return np.sin(a)\n\n\n"
           "def f(x, n):\n    t = 0.0\n    for i in range(n):\n        t = t + helper(x) + g(x)\n"
           "    try:\n        pass\n    except ValueError as e:\n        print(e, len(x))\n    return t\n")
    with pytest.raises(pyx.TranslateError, match=r"line 11 of the module reads the name 'helper'"):
        common.require_bound(src, {})
    common.require_bound(src, {"helper": None})
    monkeypatch.setattr(compiled, "load", lambda *a: pytest.fail("no build for a module that cannot compile"))
    with pytest.warns(compiled.CompileWarning, match="reads the name 'helper'"):
        assert compiled.function(src, {}, "f", "unbound_probe", {"x": "float", "n": "int"}) is None


def test_compile_runs_the_split_adjoint(env, monkeypatch):
    """compile=True compiles the module the Python path runs: callees' split twins (generators: their
    primal sweeps run once), and the recomputing adjoint as the start of small-length builds
    (smallvec.py scalarises it). No build: compiled.function is replaced by a recorder."""
    seen = []

    def record(source, supplied, main, stem, kinds, live=None, fallback=None, small=None):
        seen.append((source, small, main, kinds))
        return None           # (as a failed build: the Python module runs)
    monkeypatch.setattr(compiled, "function", record)
    m = env["mod"]
    p, s0 = np.array([10.0, 28.0, 8.0 / 3.0]), np.array([1.0, 1.0, 1.0])
    got = srcad.value_and_grad(m.rk4, compile=True)(p, s0, 1e-3, 3)
    want = srcad.value_and_grad(m.rk4)(p, s0, 1e-3, 3)
    assert got[0] == want[0] and np.array_equal(got[1], want[1])
    (source, small, main, kinds), = seen
    assert "def rhs_split(" in source and "rt.split_forward(callee_frames, rhs_split" in source
    assert small is not None and "_split" not in small[0]
    text = compiled.pyx_text(source, main, kinds, ())
    assert "def rhs_split(" in text and "yield" in text
    fd = _fd(lambda q: m.rk4(q, s0, 1e-3, 3), p)
    assert np.allclose(got[1], fd, rtol=1e-6, atol=1e-8)


def test_untypable_names_stay_objects(env):
    """`v is None` tests, tuple targets, and a name also assigned a non-number stay Python objects."""
    src = ("def f(x, y):\n"
           "    a = x * 2.0\n"
           "    b = x * 3.0\n"
           "    if b is None:\n"
           "        b = 1.0\n"
           "    c, d = x, y\n"
           "    e = x * 1.0\n"
           "    e = [e]\n"
           "    return a + b\n")
    text = pyx.translate(src, {"f": {"x": "float", "y": "float"}})[0]
    assert "cdef double a\n" in text
    assert "def f(double x, double y):" in text
    decl = [line.strip() for line in text.splitlines() if line.startswith("    cdef double ")]
    assert decl == ["cdef double a"]


def test_numpy_sums_few_numbers_in_order():
    """smallvec's premise for np.sum of a vector of at most SUM_MAX numbers: NumPy adds them in order."""
    from srcad.compiled.vecexpr import SUM_MAX
    rng = np.random.default_rng(5)
    for n in range(1, SUM_MAX + 1):
        for _ in range(300):
            a = rng.standard_normal(n) * 10.0 ** rng.integers(-6, 6, n)
            acc = a[0]
            for v in a[1:]:
                acc = acc + v
            assert acc == np.sum(a), (n, a)


def _rk4_text(env, shapes):
    from srcad import cache
    from srcad.api.units import _kinds_of
    from srcad.inputs import cache_variant
    from srcad.transform.kinds import signature
    m = env["mod"]
    args = (np.array([10.0, 28.0, 8.0 / 3.0]), np.array([1.0, 1.0, 1.0]), 1e-3, 5)
    sig = signature(args)
    source, supplied, main, _ = cache.entry(m.rk4, "reverse", 0, (), cache_variant("value", None), sig)
    return pyx.translate(source, {main: _kinds_of(main, source, sig, "reverse")}, supplied,
                         None if shapes is None else {main: shapes})


def test_small_vectors_become_c_doubles(env):
    """RK4 of 3-element arrays: the state's numbers as C doubles, rhs and rhs_vjp typed from the call."""
    text, notes = _rk4_text(env, {"p": 3, "s0": 3})
    assert notes["vector"] == 3 and notes["why"] is None
    assert "cdef (double, double, double) _v_rhs_1(double s__0, double s__1, double s__2, double p__0," in text
    assert "cdef (double, double, double, double, double, double) _v_rhs_vjp_1(" in text
    assert "def rk4_value_and_vjp(p, s0, double h, n, rk4_bar=1.0):" in text
    assert "        k1__0, k1__1, k1__2 = _v_rhs_1(s__0, s__1, s__2, p__0, p__1, p__2)" in text
    assert "tape.put(s_plus_h_k3__2)" in text and "s_plus_h_k3__0 = tape.pop()" in text   # rhs_vjp reads them
    assert not re.search(r"tape\.(push|put)\(k1__0\)", text) \
        and not re.search(r"(?<!\w)k1__0 = tape\.pop\(\)", text)                   # read back by nothing
    assert "tape.reserve(12 * n)" in text         # the loop's tape at once: 12 numbers a step (no invariant 0.5 * h)
    assert "rk4_value = ((s__0 + s__1) + s__2)" in text           # np.sum of 3 numbers, in order
    assert "# L53: k2 = rhs(s + 0.5 * h * k1, p)" in text         # the user's lines, as comments
    assert "return (rk4_value, np.array([p_bar__0, p_bar__1, p_bar__2]), )" in text    # p_bar packed from its numbers
    # without lengths (or for a length too long to unroll): the general translation
    general, notes = _rk4_text(env, None)
    assert notes["vector"] == 0 and "_v_rhs" not in general
    assert _rk4_text(env, {"p": 30, "s0": 30})[1]["vector"] == 0


def test_outside_the_rules_stays_general():
    """A vector read at a run-time index, np.sin of a vector, a branch: not scalarised, and why."""
    cases = {"def f(x, k):\n    y = x[k] * 2.0\n    return y\n": "index",
             "def f(x, k):\n    y = np.sin(x)\n    return y\n": "np.sin",
             "def f(x, k):\n    y = x * 2.0\n    if k:\n        y = x\n    return y\n": "If"}
    for src, why in cases.items():
        text, notes = pyx.translate(src, {"f": {"x": ("d", 1), "k": "int"}}, (), {"f": {"x": 3}})
        assert notes["vector"] == 0 and why in notes["why"], (src, notes)
        assert "x__0" not in text


def test_item_writes_into_a_new_small_vector():
    """`v = np.zeros_like(x); v[k] = a; v[k] += b` (srcad's adjoints of x[k]): v's k-th C double
    replaced / updated; a write another name could see (v a parameter, v read whole before the
    write: an alias or tape push sees NumPy's write, not the C copy's) keeps the general form."""
    src = ("def f(x, a):\n    v = np.zeros_like(x)\n    v[2] = a * 2.0\n    v[-3] += a\n"
           "    w = v + x\n    return w\n")
    text, notes = pyx.translate(src, {"f": {"x": ("d", 1), "a": "float"}}, (), {"f": {"x": 3}})
    assert notes["vector"] == 1 and notes["why"] is None, notes
    assert "v__0, v__1, v__2 = 0.0, 0.0, 0.0" in text
    assert "v__2 = (a * 2.0)" in text and "v__0 = (v__0 + a)" in text
    refused = {"def f(x, a):\n    x[0] = a\n    return x\n": "not a small vector the function makes",
               "def f(x, a):\n    v = np.zeros_like(x)\n    u = v\n    v[0] = a\n    return u\n":
                   "read whole before its last item write",
               "def f(x, a):\n    v = x * 1.0\n    v[0] = a\n    return v\n": "not a new array",
               "def f(x, a):\n    v = np.zeros_like(x)\n    v[3] = a\n    return v\n": "out of range",
               "def f(x, a):\n    v = np.zeros_like(x)\n    v[0] = x\n    return v\n": "other than a number"}
    for src, why in refused.items():
        text, notes = pyx.translate(src, {"f": {"x": ("d", 1), "a": "float"}}, (), {"f": {"x": 3}})
        assert notes["vector"] == 0 and why in notes["why"], (src, notes)


def test_a_name_maybe_unbound_stays_an_object():
    """y is bound only if the loop runs: Python raises UnboundLocalError reading it after no trip;
    a C double would be read as whatever it holds, so y stays a Python object (Cython checks it)."""
    src = "def f(x, n):\n    for i in range(n):\n        y = x * 2.0\n    return y\n"
    text, notes = pyx.translate(src, {"f": {"x": "float", "n": "int"}})
    assert notes["vector"] == 0 and "y may be read before it is assigned" in notes["why"]
    assert "def f(double x, n):\n    cdef Py_ssize_t i\n    for i in range(n):" in text      # no cdef double y


# ---- built derivatives ------------------------------------------------------------------------------
@pytest.mark.slow
def test_scalar_loop_bits_and_fd(scalar_built):
    f, (value, g) = scalar_built["f"], scalar_built["out"]
    pv, pg = srcad.value_and_grad(f)(0.7)
    assert value == pv and g == pg           # the same operations: the same bits
    assert type(g) is float
    assert abs(g - _fd(f, 0.7)) <= 1e-6 * (1 + abs(g))
    b = scalar_built["build"]
    assert b["module"].startswith("srcad_cy_scalar_") and b["seconds"] >= 0.0


@pytest.mark.slow
def test_elementwise_loop_bits_and_fd(elem_built):
    f, g = elem_built["f"], elem_built["out"]
    want = srcad.grad(f)(XS)
    assert g.dtype == XS.dtype and g.shape == XS.shape
    assert np.array_equal(g, want)
    assert np.allclose(g, np.sin(XS) + XS * np.cos(XS), rtol=1e-13, atol=1e-13)     # analytic
    assert np.allclose(g, _fd(f, XS), rtol=1e-6, atol=1e-8)
    # a 5-entry array: within smallvec's lengths, but x[i] is read at a run-time index: the general module
    short = np.linspace(-1.0, 1.0, 5)
    assert np.array_equal(elem_built["g"](short), srcad.grad(f)(short))
    # the numbers read through views.py's buffer views: a strided argument, a read-only one
    strided = XS[::3]
    assert np.array_equal(elem_built["g"](strided), srcad.grad(f)(strided))
    frozen = XS.copy()
    frozen.flags.writeable = False
    assert np.array_equal(elem_built["g"](frozen), want)


@pytest.mark.slow
def test_compiled_runs_in_process_once(scalar_built):
    """A second operator on the same function and signature uses the loaded extension."""
    g = srcad.grad(scalar_built["f"], compile=True)
    assert g(0.3) == srcad.grad(scalar_built["f"])(0.3)
    assert compiled.last_build()["reused"] == "process"


@pytest.mark.slow
def test_cache_reused_by_another_process(env, scalar_built):
    code = ("import json, importlib.util, sys, srcad\n"
            "from srcad import compiled\n"
            f"spec = importlib.util.spec_from_file_location('cworkloads', {str(env['path'])!r})\n"
            "m = importlib.util.module_from_spec(spec); sys.modules['cworkloads'] = m; spec.loader.exec_module(m)\n"
            "v, g = srcad.value_and_grad(m.scalar, compile=True)(0.7)\n"
            "print(json.dumps([v, g, compiled.last_build()]))\n")
    envv = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    p = subprocess.run([sys.executable, "-c", code], cwd=env["root"], env=envv, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr
    v, g, info = json.loads(p.stdout.strip().splitlines()[-1])
    assert info["reused"] == "disk" and info["module"] == scalar_built["build"]["module"]
    assert [v, g] == list(scalar_built["out"])


@pytest.mark.slow
def test_tampered_build_is_detected(env, scalar_built, tmp_path):
    import shutil
    built = build.directory() / scalar_built["build"]["module"]
    assert (os.stat(build.directory()).st_mode & 0o077) == 0      # private
    name = built.name
    entry = tmp_path / name
    shutil.copytree(built, entry)     # (never write the loaded extension's own file: it is mapped)
    pyx_text = (entry / f"{name}.pyx").read_text()
    assert build._verify(entry, name, pyx_text) is None
    assert "not the text" in build._verify(entry, name, pyx_text + "# other\n")
    ext = build._ext_path(entry, name)
    data = ext.read_bytes()
    ext.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    assert "does not match the SHA-256" in build._verify(entry, name, pyx_text)
    ext.unlink()
    assert "incomplete" in build._verify(entry, name, pyx_text)


def test_build_failure_falls_back_with_one_warning(env, monkeypatch):
    f = env["mod"].mixed
    w = np.linspace(0.1, 1.0, 5)
    monkeypatch.setenv("CC", str(env["root"] / "no-such-compiler"))
    g = srcad.grad(f, compile=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = g(0.3, w)
        again = g(0.31, w)
        got2 = srcad.grad(f, compile=True)(0.3, w)
    msgs = [str(c.message) for c in caught if issubclass(c.category, compiled.CompileWarning)]
    assert len(msgs) == 1 and "no C compiler" in msgs[0] and "no-such-compiler" in msgs[0]
    assert got == srcad.grad(f)(0.3, w) == got2 and again == srcad.grad(f)(0.31, w)
    assert abs(got - _fd(lambda x: f(x, w), 0.3)) <= 1e-6 * (1 + abs(got))


def test_without_cython_falls_back_with_one_warning(env, monkeypatch):
    import sys
    f = env["mod"].mixed
    w = np.linspace(0.1, 1.0, 5)
    monkeypatch.setitem(sys.modules, "Cython", None)       # `import Cython` raises ImportError
    monkeypatch.setattr(compiled, "_NAMED", {})             # as in a fresh process: nothing named yet
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = srcad.grad(f, compile=True)(0.45, w)
    msgs = [str(c.message) for c in caught if issubclass(c.category, compiled.CompileWarning)]
    assert len(msgs) == 1 and "Cython is not installed" in msgs[0]
    assert abs(got - _fd(lambda x: f(x, w), 0.45)) <= 1e-6 * (1 + abs(got))


# ---- heavier: one build each ---------------------------------------------------------------------
@pytest.mark.slow
def test_mixed_program_compiles_and_matches(env):
    """Lists, a dict, a while loop, a branch, np.tanh and a default: typed where proven, objects elsewhere."""
    f = env["mod"].mixed
    w = np.linspace(0.1, 1.0, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", compiled.CompileWarning)
        vg = srcad.value_and_grad(f, compile=True)
        v, g = vg(0.3, w)
    pv, pg = srcad.value_and_grad(f)(0.3, w)
    assert v == pv and g == pg
    assert abs(g - _fd(lambda x: f(x, w), 0.3)) <= 1e-6 * (1 + abs(g))
    assert vg(0.3, w, 3.0) == srcad.value_and_grad(f)(0.3, w, 3.0)      # the default, passed
    saved = f.__defaults__
    try:
        f.__defaults__ = (5.0,)       # the default as it is now, as for the Python path
        assert vg(0.3, w) == srcad.value_and_grad(f)(0.3, w) == (f(0.3, w), srcad.grad(f)(0.3, w))
        assert vg(0.3, w) != (v, g)
    finally:
        f.__defaults__ = saved


@pytest.mark.slow
def test_rk4_small_arrays_bits_and_fd(env):
    """The issue's workload: a module scalarised for 3-element arrays; the same bits as the Python path."""
    m = env["mod"]
    p, s0 = np.array([10.0, 28.0, 8.0 / 3.0]), np.array([1.0, 1.0, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", compiled.CompileWarning)
        vg = srcad.value_and_grad(m.rk4, compile=True)
        v, g = vg(p, s0, 1e-3, 300)
    pv, pg = srcad.value_and_grad(m.rk4)(p, s0, 1e-3, 300)
    assert v == pv and np.array_equal(g, pg) and g.dtype == pg.dtype and g.shape == (3,)
    fd = _fd(lambda q: m.rk4(q, s0, 1e-3, 300), p)
    assert np.allclose(g, fd, rtol=1e-6, atol=1e-8)
    v2, g2 = vg(p, s0, 1e-3, 0)            # no step: the zero gradient, as the Python path gives
    assert v2 == np.sum(s0) and np.array_equal(g2, srcad.grad(m.rk4)(p, s0, 1e-3, 0))
    # forward mode: the tangent code scalarised too (rhs_jvp typed from the call, tuple results unpacked)
    d = np.array([0.3, -0.2, 0.5])
    with warnings.catch_warnings():
        warnings.simplefilter("error", compiled.CompileWarning)
        y, dy = srcad.jvp(m.rk4, (p, s0, 1e-3, 300), (d, None, None, None), compile=True)
    assert (y, dy) == srcad.jvp(m.rk4, (p, s0, 1e-3, 300), (d, None, None, None))
    assert abs(dy - fd @ d) <= 1e-6 * (1 + abs(dy))


@pytest.mark.slow
def test_rk4_scalar_state_and_jvp_vjp(env):
    m = env["mod"]
    args = (10.0, 28.0, 8.0 / 3.0, 1.0, 1.0, 1.0, 1e-3, 300)
    with warnings.catch_warnings():
        warnings.simplefilter("error", compiled.CompileWarning)
        got = srcad.grad(m.rk4s, (0, 1, 2), compile=True)(*args)
        y, dy = srcad.jvp(m.scalar, (0.7,), (1.0,), compile=True)
        yv, pull = srcad.vjp(m.scalar, 0.7, compile=True)
        pulled = pull(1.0)
    assert got == srcad.grad(m.rk4s, (0, 1, 2))(*args)
    for k in range(3):
        def fk(v, k=k):
            a = list(args)
            a[k] = v
            return m.rk4s(*a)
        assert abs(got[k] - _fd(fk, args[k])) <= 1e-5 * (1 + abs(got[k]))
    assert (y, dy) == srcad.jvp(m.scalar, (0.7,), (1.0,))
    assert yv == m.scalar(0.7) and pulled == srcad.vjp(m.scalar, 0.7)[1](1.0)
    assert abs(dy - _fd(m.scalar, 0.7)) <= 1e-6 * (1 + abs(dy))


def test_benchmark_hand_gradients_against_finite_differences():
    """benchmarks/compiled.py compares with hand-written derivative loops: they must be right."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, root)
    try:
        from benchmarks import compiled as bench
        from benchmarks import compiled_workloads as w
    finally:
        sys.path.remove(root)
    assert abs(bench.hand_scalar(0.7) - _fd(w.scalar, 0.7)) <= 1e-6
    p, s0 = np.array([10.0, 28.0, 8.0 / 3.0]), np.array([1.0, 1.0, 1.0])
    got = bench.hand_rk4(p, s0, 1e-3, 200)
    fd = _fd(lambda q: w.rk4(q, s0, 1e-3, 200), p)
    assert np.allclose(got, fd, rtol=1e-6, atol=1e-8)
    xs = np.linspace(-1.0, 1.0, 7)
    assert np.allclose(bench.hand_elem(xs), _fd(w.elem, xs), rtol=1e-6, atol=1e-8)
