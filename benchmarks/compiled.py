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
          cumsum and concatenate) at n = 6, 1000, 10^4: compile=True must not be slower there.

Times are medians of repeated calls; the first compiled call (building or loading the extension)
is reported separately, with srcad.compiled.last_build(). The hand-written loops are forward-mode
derivatives written in plain Python/NumPy, the speed a user gets without srcad.

    python -m benchmarks.compiled [--repeat 7] [--json out.json] [--only scalar,rk4,ode_1000]
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


def _median(fn, repeat, number=1):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return statistics.median(times)


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
            if isinstance(h, types.FunctionType) and h.__module__ == f.__module__ and name not in mine:
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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--json")
    ap.add_argument("--only", default="scalar,rk4,rk4s,elem,ode_tiny,ode_1000,ode_10000,lse_10000,lse_1280000,loss")
    opts = ap.parse_args(argv)
    import srcad
    from srcad import compiled
    w = _workloads()
    p, s0 = np.array([10.0, 28.0, 8.0 / 3.0]), np.array([1.0, 1.0, 1.0])
    xs = np.linspace(-1.0, 1.0, 10_000)
    cases = {
        "scalar": (w.scalar, (0.7,), 0, lambda: hand_scalar(0.7)),
        "rk4": (w.rk4, (p, s0, 1e-4, 10_000), 0, lambda: hand_rk4(p, s0, 1e-4, 10_000)),
        "rk4s": (w.rk4s, (10.0, 28.0, 8.0 / 3.0, 1.0, 1.0, 1.0, 1e-4, 10_000), (0, 1, 2),
                 lambda: hand_rk4(p, s0, 1e-4, 10_000)),
        "elem": (w.elem, (xs,), 0, lambda: hand_elem(xs)),
    }
    from benchmarks.gradbench import ode
    for label, size in (("ode_tiny", ode.SIZES["tiny"]), ("ode_1000", ode.SIZES["quick"][0]),
                        ("ode_10000", ode.SIZES["full"][0])):
        cases[label] = (ode.primal, ode.data(size), 0, None)     # GradBench's ode (vectorised NumPy)
    from benchmarks.gradbench import lse
    for size in lse.SIZES["full"]:
        cases[f"lse_{size}"] = (lse.primal, lse.data(size), 0, None)     # GradBench's lse (vectorised NumPy)
    xl = np.linspace(0.1, 1.0, 10 ** 6)
    cases["loss"] = (w.loss, (xl, xl[::-1].copy() + 0.5), 0, None)    # a fusable elementwise loss
    rows = []
    for name in opts.only.split(","):
        f, args, wrt, hand = cases[name]
        slow = name in ("rk4", "rk4s", "loss") or name.startswith(("ode", "lse"))
        r = max(3, opts.repeat // 2) if slow else opts.repeat
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
        row = dict(workload=name, first_call_s=first, build=build, bits_equal=same,
                   primal_s=_median(lambda: f(*args), r, number),
                   compiled_primal_s=_median(lambda: fc(*args), r, number),
                   python_path_s=_median(lambda: py(*args), r, number),
                   compiled_s=_median(lambda: cp(*args), r, number),
                   hand_s=_median(hand, r, number) if hand else float("nan"))
        row["compiled_over_primal"] = row["compiled_s"] / row["compiled_primal_s"]
        row["python_over_primal"] = row["python_path_s"] / row["primal_s"]
        row["speedup_vs_python_path"] = row["python_path_s"] / row["compiled_s"]
        row["compiled_over_hand"] = row["compiled_s"] / row["hand_s"]
        rows.append(row)
        print(f"{name:7s} primal {row['primal_s'] * 1e3:9.3f} ms (compiled {row['compiled_primal_s'] * 1e3:8.3f} ms) | "
              f"python path {row['python_path_s'] * 1e3:9.3f} ms (d/p {row['python_over_primal']:5.1f}) | "
              f"compiled {row['compiled_s'] * 1e3:8.3f} ms (d/compiled p {row['compiled_over_primal']:5.2f}, "
              f"{row['speedup_vs_python_path']:6.1f}x faster than the Python path, time {row['compiled_over_hand']:6.3f}x "
              f"the hand loop's) | first call {first:6.2f} s "
              f"(reused: {build.get('reused')}) | bits equal {same}", flush=True)
    if opts.json:
        with open(opts.json, "w") as fh:
            json.dump(rows, fh, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
