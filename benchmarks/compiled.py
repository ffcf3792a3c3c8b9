"""compile=True on loop-heavy code: the generated derivative compiled by Cython (srcad/compiled/)
against the Python path, the primal, and a hand-written NumPy/Python derivative loop.

Workloads (benchmarks/compiled_workloads.py):
  scalar  a 200-step scalar loop  y = sin(y) * 0.9 + 0.1 * y * y, gradient w.r.t. the start;
  rk4     an RK4 integrator of a 3-state (Lorenz-like) system for 10^4 steps, gradient w.r.t. the
          3 parameters (the state as small NumPy arrays, as people write it);
  rk4s    the same integrator with the state as three floats;
  elem    a per-element loop over an array of 10^4 floats, t += sin(x[i]) * x[i].
  loss    r = np.exp(-x * y) * (x - y) + np.sin(x) / (1.0 + y * y); sum(r * r) over 10^6 entries
          (elementwise chains compile=True fuses into one loop, srcad/compiled/fuse.py);
  lse_*   GradBench's lse (log-sum-exp, n = 10^4 and 1.28 * 10^6);
  ode_*   GradBench's ode (benchmarks/gradbench/ode.py: vectorised NumPy, RK4 over n-vectors with
          cumsum and concatenate) at n = 6, 1000, 10^4, 10^5: compile=True must not be slower there;
  det_*   GradBench's det (recursive expansion by minors, ell = 5, 6, 7);
  particle  GradBench's particle (the crossing cost through a while loop with an inner srcad.grad).

Times are medians of repeated calls, the tools interleaved round by round in one process; the
first compiled call (building or loading the extension) is reported separately, with
srcad.compiled.last_build() (set SRCAD_CACHE_DIR to an empty directory to time the builds). The
hand-written loops are forward-mode derivatives written in plain Python/NumPy, the speed a user
gets without srcad. When JAX is installed, `jax.jit(jax.grad(...))` of the same programs in float64
(jax_references) is timed too, its first call (trace and XLA compile) reported separately.

    python -m benchmarks.compiled [--repeat 7] [--json out.json] [--only scalar,rk4,ode_1000] [--no-jax]
"""
import argparse
import importlib
import json
import math
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))



# ---- hand-written derivatives (forward mode, plain Python / NumPy) ----------------------------
def hand_scalar(x):
    y, dy = x, 1.0
    for _ in range(200):
        s, c = math.sin(y), math.cos(y)
        y, dy = s * 0.9 + 0.1 * y * y, (0.9 * c + 0.2 * y) * dy
    return dy


def hand_rk4(p, s0, h, n):
    """d sum(s_n) / dp by forward mode: the state's 3x3 sensitivity S = ds/dp carried along."""
    def f(s):
        return np.array([p[0] * (s[1] - s[0]), s[0] * (p[1] - s[2]) - s[1], s[0] * s[1] - p[2] * s[2]])

    def jac(s, S):      # d f(s(p), p) / dp = f_s S + f_p
        fs = np.array([[-p[0], p[0], 0.0], [p[1] - s[2], -1.0, -s[0]], [s[1], s[0], -p[2]]])
        fp = np.array([[s[1] - s[0], 0.0, 0.0], [0.0, s[0], 0.0], [0.0, 0.0, -s[2]]])
        return fs @ S + fp

    s, S = s0.copy(), np.zeros((3, 3))
    for _ in range(n):
        k1, K1 = f(s), jac(s, S)
        s2, S2 = s + 0.5 * h * k1, S + 0.5 * h * K1
        k2, K2 = f(s2), jac(s2, S2)
        s3, S3 = s + 0.5 * h * k2, S + 0.5 * h * K2
        k3, K3 = f(s3), jac(s3, S3)
        s4, S4 = s + h * k3, S + h * K3
        k4, K4 = f(s4), jac(s4, S4)
        s = s + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        S = S + h / 6.0 * (K1 + 2.0 * K2 + 2.0 * K3 + K4)
    return S.sum(axis=0)


def hand_elem(x):
    return np.sin(x) + x * np.cos(x)     # vectorised NumPy: what a user would write by hand


# ---- JAX references (optional: skipped with a note when jax is absent) ---------------------------
def jax_module():
    """jax and jax.numpy in float64 (jax_enable_x64), or None when JAX is not installed."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:          # optional peer
        return None
    jax.config.update("jax_enable_x64", True)
    return jax, jnp


def jax_references():
    """{workload: a function of the workload's arguments giving its JAX jit gradient}, written as a
    JAX user would: `jax.jit(jax.grad(f, argnums))`, loops as lax.fori_loop (a Python loop of 10^4
    RK4 steps would be traced step by step), GradBench ode's 10 steps as the Python loop its
    GradBench JAX spelling uses. {} without JAX. The integer arguments (step counts) are static."""
    mods = jax_module()
    if mods is None:
        return {}
    jax, jnp = mods
    lax = jax.lax

    def scalar(x):
        return lax.fori_loop(0, 200, lambda i, y: jnp.sin(y) * 0.9 + 0.1 * y * y, x)

    def scalar_unrolled(x):          # the Python loop itself, traced 200 times
        y = x
        for _ in range(200):
            y = jnp.sin(y) * 0.9 + 0.1 * y * y
        return y

    def rhs(s, p):
        return jnp.array([p[0] * (s[1] - s[0]), s[0] * (p[1] - s[2]) - s[1], s[0] * s[1] - p[2] * s[2]])

    def rk4(p, s0, h, n):
        def step(i, s):
            k1 = rhs(s, p)
            k2 = rhs(s + 0.5 * h * k1, p)
            k3 = rhs(s + 0.5 * h * k2, p)
            k4 = rhs(s + h * k3, p)
            return s + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        return jnp.sum(lax.fori_loop(0, n, step, s0))

    def rk4s(a, b, c, x, y, z, h, n):
        def step(i, st):
            x, y, z = st
            k1x, k1y, k1z = a * (y - x), x * (b - z) - y, x * y - c * z
            x2, y2, z2 = x + 0.5 * h * k1x, y + 0.5 * h * k1y, z + 0.5 * h * k1z
            k2x, k2y, k2z = a * (y2 - x2), x2 * (b - z2) - y2, x2 * y2 - c * z2
            x3, y3, z3 = x + 0.5 * h * k2x, y + 0.5 * h * k2y, z + 0.5 * h * k2z
            k3x, k3y, k3z = a * (y3 - x3), x3 * (b - z3) - y3, x3 * y3 - c * z3
            x4, y4, z4 = x + h * k3x, y + h * k3y, z + h * k3z
            k4x, k4y, k4z = a * (y4 - x4), x4 * (b - z4) - y4, x4 * y4 - c * z4
            return (x + h / 6.0 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x),
                    y + h / 6.0 * (k1y + 2.0 * k2y + 2.0 * k3y + k4y),
                    z + h / 6.0 * (k1z + 2.0 * k2z + 2.0 * k3z + k4z))
        x, y, z = lax.fori_loop(0, n, step, (x, y, z))
        return x + y + z

    def elem(x):
        return lax.fori_loop(0, x.shape[0], lambda i, t: t + jnp.sin(x[i]) * x[i], 0.0)

    def ode_rhs(x, y):
        return jnp.concatenate((x[:1], jnp.cumsum(x[1:]) * y[:-1]))

    def ode(x, s):
        h = 2.0 / s
        y = jnp.zeros_like(x)
        for _ in range(s):
            k1 = ode_rhs(x, y)
            k2 = ode_rhs(x, y + 0.5 * h * k1)
            k3 = ode_rhs(x, y + 0.5 * h * k2)
            k4 = ode_rhs(x, y + h * k3)
            y = y + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        return y[-1]

    def det(A):
        n = A.shape[0]
        if n == 1:
            return A[0, 0]
        total = 0.0
        sign = 1.0
        for j in range(n):
            keep = np.concatenate((np.arange(j), np.arange(j + 1, n)))
            total = total + sign * A[0, j] * det(A[1:, keep])
            sign = -sign
        return total

    def jit_grad(f, argnums, static):
        g = jax.jit(jax.grad(f, argnums), static_argnums=static)

        def call(*args):
            out = g(*args)
            return jax.block_until_ready(out)
        return call

    refs = {"scalar": jit_grad(scalar, 0, ()), "scalar_unrolled": jit_grad(scalar_unrolled, 0, ()),
            "rk4": jit_grad(rk4, 0, (3,)), "rk4s": jit_grad(rk4s, (0, 1, 2), (7,)),
            "elem": jit_grad(elem, 0, ())}
    for ell in (5, 6, 7):
        refs[f"det_{ell}"] = jit_grad(det, 0, ())       # (traced per shape: one jit serves every ell)
    for label in ("ode_tiny", "ode_1000", "ode_10000", "ode_100000"):
        refs[label] = jit_grad(ode, 0, (1,))
    return refs


def _medians(tools, repeat, number=1):
    """{tool: median seconds per call}, the tools interleaved round by round (a load change on the
    machine moves every tool's numbers alike)."""
    times = {k: [] for k in tools}
    for _ in range(repeat):
        for k, fn in tools.items():
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            times[k].append((time.perf_counter() - t0) / number)
    return {k: statistics.median(v) for k, v in times.items()}


def compiled_primal(f, args):
    """f itself compiled the same way (srcad/compiled/ types the user's function as it types
    generated code), with the functions of its module that it calls (typed from the call, as the
    derivative's helpers are): the primal a compiled derivative is measured against."""
    import inspect
    import textwrap
    import types

    from srcad import compiled
    from srcad.transform.kinds import signature
    mine = {f.__name__: f}
    todo = [f]
    while todo:
        g = todo.pop()
        for name in g.__code__.co_names:
            h = f.__globals__.get(name)
            # only a plain function whose source defines `name`: a wrapper (srcad.grad of a
            # function, functools.wraps) shows its wrapped function's source, so it is supplied
            if (isinstance(h, types.FunctionType) and h.__module__ == f.__module__ and name not in mine
                    and h.__code__.co_name == name and not hasattr(h, "__wrapped__")):
                mine[name] = h
                todo.append(h)
    source = "\n\n".join(textwrap.dedent(inspect.getsource(g)) for g in mine.values())
    names = list(inspect.signature(f).parameters)
    supplied = {k: v for g in mine.values() for k, v in f.__globals__.items()
                if k in g.__code__.co_names and k not in mine}
    return compiled.function(source, supplied, f.__name__, f.__name__ + "_primal",
                             dict(zip(names, signature(args)[0])))


def _workloads():
    sys.path.insert(0, HERE)
    return importlib.import_module("compiled_workloads")


def _cases(w):
    p, s0 = np.array([10.0, 28.0, 8.0 / 3.0]), np.array([1.0, 1.0, 1.0])
    xs = np.linspace(-1.0, 1.0, 10_000)
    cases = {
        "scalar": (w.scalar, (0.7,), 0, lambda: hand_scalar(0.7)),
        "rk4": (w.rk4, (p, s0, 1e-4, 10_000), 0, lambda: hand_rk4(p, s0, 1e-4, 10_000)),
        "rk4s": (w.rk4s, (10.0, 28.0, 8.0 / 3.0, 1.0, 1.0, 1.0, 1e-4, 10_000), (0, 1, 2),
                 lambda: hand_rk4(p, s0, 1e-4, 10_000)),
        "elem": (w.elem, (xs,), 0, lambda: hand_elem(xs)),
    }
    from benchmarks.gradbench import det, lse, ode, particle
    for label, size in (("ode_tiny", ode.SIZES["tiny"]), ("ode_1000", ode.SIZES["quick"][0]),
                        ("ode_10000", ode.SIZES["full"][0]), ("ode_100000", ode.SIZES["full"][1])):
        cases[label] = (ode.primal, ode.data(size), 0, None)     # GradBench's ode (vectorised NumPy)
    for ell in (5, 6, 7):
        cases[f"det_{ell}"] = (det.primal, det.data(ell), 0, None)     # GradBench's det (recursive)
    cases["particle"] = (particle.crossing_cost, (np.array([0.0]),), 0, None)   # nested: an inner srcad.grad
    for size in lse.SIZES["full"]:
        cases[f"lse_{size}"] = (lse.primal, lse.data(size), 0, None)     # GradBench's lse (vectorised NumPy)
    xl = np.linspace(0.1, 1.0, 10 ** 6)
    cases["loss"] = (w.loss, (xl, xl[::-1].copy() + 0.5), 0, None)    # a fusable elementwise loss
    return cases


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--json")
    ap.add_argument("--only", default="scalar,rk4,rk4s,elem,ode_tiny,ode_1000,ode_10000,lse_10000,lse_1280000,loss")
    ap.add_argument("--no-jax", action="store_true", help="leave out the JAX jit references")
    opts = ap.parse_args(argv)
    import srcad
    from srcad import compiled
    w = _workloads()
    cases = _cases(w)
    refs = {} if opts.no_jax else jax_references()
    if not refs and not opts.no_jax:
        print("(JAX is not installed: the JAX jit columns are left out)")
    print(f"load average at the start: {os.getloadavg()}", flush=True)
    rows = []
    for name in opts.only.split(","):
        f, args, wrt, hand = cases[name]
        slow = name in ("rk4", "rk4s", "loss", "det_7", "ode_100000") or name.startswith("lse")
        r = max(5, opts.repeat // 2) if slow else opts.repeat
        number = 1 if slow else 20
        py = srcad.value_and_grad(f, wrt)
        cp = srcad.value_and_grad(f, wrt, compile=True)
        t0 = time.perf_counter()
        got = cp(*args)
        first = time.perf_counter() - t0
        build = compiled.last_build()
        want = py(*args)
        same = bool(np.array_equal(np.asarray(got[1], dtype=float), np.asarray(want[1], dtype=float))
                    and got[0] == want[0])
        fc = compiled_primal(f, args) or f
        assert fc(*args) == f(*args)
        tools = {"primal": lambda: f(*args), "compiled_primal": lambda: fc(*args),
                 "python_path": lambda: py(*args), "compiled": lambda: cp(*args)}
        if hand:
            tools["hand"] = hand
        jax_first = jax_err = float("nan")
        ref = refs.get(name)
        if ref is not None:
            jargs = args
            t0 = time.perf_counter()
            jg = ref(*jargs)
            jax_first = time.perf_counter() - t0
            jg = np.asarray(jg[0] if isinstance(jg, tuple) and len(jg) == 1 else jg, dtype=float)
            jax_err = float(np.max(np.abs(jg - np.asarray(got[1], dtype=float))) /
                            max(1.0, float(np.max(np.abs(jg)))))
            tools["jax"] = lambda: ref(*jargs)
            unrolled = refs.get(f"{name}_unrolled")
            if unrolled is not None:         # the Python loop traced step by step (XLA sees no loop)
                row_first = time.perf_counter()
                unrolled(*jargs)
                jax_unrolled_first = time.perf_counter() - row_first
                tools["jax_unrolled"] = lambda: unrolled(*jargs)
        med = _medians(tools, r, number)
        row = dict(workload=name, first_call_s=first, build=build, bits_equal=same, jax_first_call_s=jax_first,
                   jax_rel_diff=jax_err, **{f"{k}_s": v for k, v in med.items()})
        row.setdefault("hand_s", float("nan"))
        row.setdefault("jax_s", float("nan"))
        if "jax_unrolled_s" in row:
            row["jax_unrolled_first_call_s"] = jax_unrolled_first
            print(f"{name:10s} JAX jit of the unrolled Python loop {row['jax_unrolled_s'] * 1e3:8.3f} ms "
                  f"(first call {jax_unrolled_first:.2f} s)")
        row["compiled_over_primal"] = row["compiled_s"] / row["compiled_primal_s"]
        row["python_over_primal"] = row["python_path_s"] / row["primal_s"]
        row["speedup_vs_python_path"] = row["python_path_s"] / row["compiled_s"]
        row["compiled_over_jax"] = row["compiled_s"] / row["jax_s"]
        rows.append(row)
        ms = 1e3
        print(f"{name:10s} primal {row['primal_s'] * ms:9.3f} ms (compiled {row['compiled_primal_s'] * ms:8.3f}) | "
              f"python path {row['python_path_s'] * ms:9.3f} ms | compiled {row['compiled_s'] * ms:8.3f} ms "
              f"(d/cp {row['compiled_over_primal']:5.2f}) | JAX jit {row['jax_s'] * ms:8.3f} ms "
              f"(compiled/JAX {row['compiled_over_jax']:5.2f}, JAX first call {jax_first:6.2f} s, "
              f"rel diff {jax_err:.1e}) | srcad first call {first:6.2f} s (reused: {build.get('reused')}, "
              f"Cython {build.get('cython_seconds', float('nan')):.1f} s, cc {build.get('cc_seconds', float('nan')):.1f} s)"
              f" | bits equal {same} | load {os.getloadavg()[0]:.2f}", flush=True)
    if opts.json:
        with open(opts.json, "w") as fh:
            json.dump(rows, fh, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
