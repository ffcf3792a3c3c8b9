"""Random programs with checkpointed loops: grad(f, checkpoint=k) against checkpoint=None (bit for
bit) and against central finite differences in float64.

Each program, drawn from a seeded `numpy.random.Generator`, is

    def prog(x, y, n):         # x, y: float64 arrays of shape (4,); n: the trip count
        <values before the loop: array and scalar state, an array the loop writes into, reads
         of that array (which the loop then overwrites), a list>
        for i in range(...):   # the checkpointed loop (or a loop over enumerate/zip of x, y)
            <2-5 statements: rebinding and in-place updates of the state (+=, -=, *=, /=),
             subscript writes, tuple swaps, a nested loop, branches on i, temporaries,
             constant sub-expressions, list appends, reads of values from before the loop>
        <maybe a second loop; reads after the loop>
        return <a scalar of what the loop left and what was read before it>

with smooth operations only (finite differences are exact up to O(eps^2) there) and divisions
by values bounded away from zero. For each program and several k (1, 2, the trip count and
more; trip counts 0, 1, 2, 3, 5) the gradient with respect to x and y must be the same bits as
with checkpoint=None, the value returned by value_and_grad the same as the function's, and both
must match finite differences. A program checkpoint=None refuses (UnsupportedSyntaxError) is
counted as refused, never as a failure; checkpoint=k refusing what checkpoint=None accepts is
allowed only for loops that are not over `range` (README), with the error naming the line.

    python tests/test_checkpoint_fuzz.py --seeds 3000 [--start 0]     # many more, with counts
"""
import importlib.util
import itertools
import os
import re
import sys
import tempfile

import numpy as np
import pytest

import srcad

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fdcheck import numerical_grad  # noqa: E402

N = 4


HELPER = """
def helper(v, c):
    for j in range(2):
        v = v - c * np.sin(v)
    return v

"""


class Gen:
    """One random program from a seed."""

    def __init__(self, seed):
        self.r = np.random.default_rng(seed)

    def pick(self, xs):
        return xs[int(self.r.integers(0, len(xs)))]

    def c(self):
        """A small constant, sometimes written as a constant sub-expression."""
        v = self.pick([0.3, 0.5, 0.7, 0.9, 1.1, 0.25, 0.1])
        form = self.r.integers(0, 6)
        if form == 0:
            return f"({v * 2} * 0.5)"
        if form == 1:
            return f"(1.0 - {1.0 - v:.2f})"
        if form == 2:
            return f"({v} + 2.0 * 0.0)"
        return repr(v)

    def arr_expr(self):
        """A bounded array-valued expression of the state and the inputs."""
        return self.pick([
            f"np.sin(b) * {self.c()}", f"np.tanh(a) * {self.c()}", f"np.cos(a + b) * {self.c()}",
            f"x * {self.c()}", f"np.sin(y * a) * {self.c()}", f"w * {self.c()}", f"tmp * {self.c()}",
            f"(a * b) * {self.c()}", f"np.tanh(a) * s * {self.c()}", "np.sin(p) * x", f"xs[-1] * {self.c()}",
            f"d['u'] * {self.c()}", f"np.cos(w[::-1]) * {self.c()}", f"np.roll(a, 1) * {self.c()}",
        ])

    def sc_expr(self):
        return self.pick([
            f"np.sum(np.sin(a)) * {self.c()}", f"np.sum(a * b) * {self.c()}", f"np.sum(w) * {self.c()}",
            f"w[i % {N}] * {self.c()}", f"a[(i + 1) % {N}] * {self.c()}", f"np.sin(t) * {self.c()}",
            f"p * {self.c()}", f"np.cos(s) * {self.c()}", "0.01 * i", f"q * {self.c()}",
            f"d['v'] * {self.c()}", f"np.sum(tmp) * {self.c()}", f"np.tanh(s * t) * {self.c()}",
        ])

    def denom(self, scalar=False):
        e = self.pick(["np.sin(s)", "np.cos(t)", "np.tanh(p)"] if scalar else
                      ["np.sin(b)", "np.cos(a)", "np.tanh(w)", "np.sin(s)"])
        return f"(2.0 + {e})"

    def block(self, depth, ind, lo=1, hi=3):
        return [ln for _ in range(int(self.r.integers(lo, hi))) for ln in self.stmt(depth, ind)]

    def stmt(self, depth, ind):
        """Lines of one loop-body statement at indentation ind."""
        P = "    " * ind
        kinds = ["rebind", "aug_arr", "aug_arr", "aug_sc", "aug_sc", "rebind_sc", "sub", "sub", "swap", "tmp",
                 "append", "aug_sub", "dict", "call", "ifexp", "param", "count", "last"]
        if depth < 2:
            kinds += ["nested", "branch", "branch", "nested_arr", "while", "break", "data_branch"]
        if depth == 0:          # (inside the `while` it would skip `j += 1`)
            kinds += ["continue"]
        k = self.pick(kinds)
        if k == "rebind":
            return [f"{P}a = a * {self.c()} + {self.arr_expr()}"]
        if k == "aug_arr":
            v = self.pick(["a", "b", "a", "w"])
            op = self.pick(["+=", "-=", "*=", "/="])
            if op == "*=":
                return [f"{P}{v} *= (1.0 + 0.1 * np.sin({self.arr_expr()}))"]
            if op == "/=":
                return [f"{P}{v} /= {self.denom()}"]
            return [f"{P}{v} {op} {self.arr_expr()}"]
        if k == "aug_sc":
            v = self.pick(["s", "t"])
            op = self.pick(["+=", "-=", "*=", "/="])
            if op == "*=":
                return [f"{P}{v} *= (1.0 + 0.1 * np.sin({self.sc_expr()}))"]
            if op == "/=":
                return [f"{P}{v} /= {self.denom(True)}"]
            return [f"{P}{v} {op} {self.sc_expr()}"]
        if k == "rebind_sc":
            v = self.pick(["s", "t"])
            return [f"{P}{v} = np.tanh({v} * {self.c()} + {self.sc_expr()})"]
        if k == "sub":
            form = self.r.integers(0, 4)
            if form == 0:
                return [f"{P}w[i % {N}] = w[(i + 1) % {N}] * {self.c()} + np.sin(a[i % {N}])"]
            if form == 1:
                return [f"{P}w[1:3] = w[0:2] * {self.c()} + b[2:4] * {self.c()}"]
            if form == 2:
                return [f"{P}b[(i + 3) % {N}] = np.sin(b[i % {N}]) * {self.c()}"]
            return [f"{P}w[(i + 2) % {N}] = {self.sc_expr()}"]
        if k == "aug_sub":
            op = self.pick(["+=", "-=", "*=", "/="])
            rhs = {"*=": "(1.0 + 0.1 * np.sin(s))", "/=": self.denom(True)}.get(op) or self.sc_expr()
            return [f"{P}w[i % {N}] {op} {rhs}"]
        if k == "swap":
            if self.r.integers(0, 2):
                return [f"{P}a, b = b, a * {self.c()} + np.sin(b) * {self.c()}"]
            return [f"{P}s, t = t, s * {self.c()} + np.sin(t) * {self.c()}"]
        if k == "tmp":
            return [f"{P}tmp = {self.arr_expr()} + {self.c()}",
                    f"{P}b = b * {self.c()} + np.tanh(tmp) * {self.c()}"]
        if k == "append":
            return [f"{P}xs.append(np.sin(a) * {self.c()})"]
        if k == "dict":
            if self.r.integers(0, 2):
                return [f"{P}d['u'] = d['u'] * {self.c()} + {self.arr_expr()}"]
            return [f"{P}d['v'] += {self.sc_expr()}"]
        if k == "call":
            return [f"{P}a = helper(a, {self.c()}) + {self.arr_expr()}"]
        if k == "ifexp":
            return [f"{P}b = b * {self.c()} if i % 2 == 0 else b + {self.arr_expr()}"]
        if k == "param":
            return [f"{P}x = x * {self.c()} + np.sin(a) * {self.c()}"]
        if k == "count":
            return [f"{P}cnt += 1", f"{P}s = s + 0.01 * cnt"]
        if k == "last":
            return [f"{P}last = {self.arr_expr()}"]
        if k == "nested":
            m = int(self.r.integers(0, 3))
            return [f"{P}for j{depth} in range({m}):"] + self.block(depth + 1, ind + 1)
        if k == "nested_arr":
            return [f"{P}for e in b:", f"{P}    s = s + np.sin(e) * {self.c()}"]
        if k == "while":
            # one counter name a depth: a loop nested inside must not reset it
            return [f"{P}c{depth} = 0", f"{P}while c{depth} < 2:"] + self.block(depth + 1, ind + 1) + \
                [f"{P}    c{depth} += 1"]
        if k == "break":
            return [f"{P}for j{depth} in range(3):"] + self.block(depth + 1, ind + 1) + \
                [f"{P}    if j{depth} == {self.pick([0, 1])}:", f"{P}        break"]
        if k == "continue":
            return [f"{P}if i == {self.pick([0, 1, 2])}:", f"{P}    continue"]
        if k == "data_branch":
            cond = self.pick(["np.sum(a * a) > -1.0", "s > 1000.0", "np.sum(w * w) >= 0.0", "t < -1e3"])
            out = [f"{P}if {cond}:"] + self.block(depth + 1, ind + 1)
            if self.r.integers(0, 2):
                out += [f"{P}else:"] + self.stmt(depth + 1, ind + 1)
            return out
        if k == "branch":
            cond = self.pick(["i % 2 == 0", "i > 1", "i == 0", "i % 3 != 1"])
            out = [f"{P}if {cond}:"] + self.block(depth + 1, ind + 1)
            if self.r.integers(0, 2):
                out += [f"{P}else:"] + self.stmt(depth + 1, ind + 1)
            return out
        raise AssertionError(k)

    def loop(self, size):
        header = self.pick(["for i in range(n):"] * 8 + [
            "for i in range(1, n + 1):", "for i in range(n - 1, -1, -1):", "for i in range(0, 2 * n, 2):",
            "for i, e in enumerate(x):", "for e, f in zip(x, y):", "for e in y:", "for key, e in dd.items():"])
        lines = ["    " + header]
        targets = header[len("for "):].split(" in ")[0].replace(" ", "").split(",")
        if "i" not in targets:
            lines.append("        i = 1")
        if "e" in targets:
            lines.append(f"        s = s + np.sum(np.sin(e)) * {self.c()}")
        return lines + self.block(0, 2, 1, size + 1)

    def program(self, size=5):
        r = self.r
        body = self.loop(size)
        if r.integers(0, 4) == 0:
            body += [self.pick(["    p = p * 0.5 + np.sum(a) * 0.1", "    w[0] = s * 0.5", "    a = a * t"])]
            body += self.loop(size)
        terms = ["np.sum(a * b)", "s * t", "np.sum(w ** 2)", "p * s", "q", "np.sum(tmp)", "np.sum(last)",
                 "np.sum(np.stack(xs) ** 2)", "np.sum(np.sin(w) * a)", "t", "p * q", "np.sum(d['u']) * d['v']",
                 "s * cnt", "np.sum(x * y)", "i * s"]
        chosen = [t for t in terms if r.integers(0, 3) == 0] or ["np.sum(a)"]
        ret = "    return " + " + ".join(chosen)
        pre = [
            ("a", "    a = x * 0.5 + 0.1" if r.integers(0, 2) else "    a = np.sin(x)"),
            ("b", "    b = np.cos(y)"),
            ("s", "    s = np.sum(x * y) * 0.1" if r.integers(0, 2) else "    s = 0.5"),
            ("t", "    t = np.sum(y) * 0.2"),
            ("w", self.pick(["    w = x * 1.0", "    w = np.zeros(4) + y", "    w = y.copy()", "    w = np.ones(4)"])),
            ("p", self.pick(["    p = np.sin(w[1]) * w[2]", "    p = w[0] * w[3]", "    p = np.sum(w * w)",
                             "    p = np.sum(np.cos(w)) * a[1]"])),
            ("q", "    q = w[2] * 1.0"),
            ("tmp", "    tmp = a * 0.0"),
            ("xs", "    xs = [a * 1.0]"),
            ("d", "    d = {'u': a * 1.0, 'v': s * 0.5}"),
            ("dd", "    dd = {'g': x * 1.0, 'h': y * 0.5}"),
            ("cnt", "    cnt = 0"),
            ("i", "    i = 0"),
            ("last", "    last = b * 1.0"),
        ]
        text = "\n".join(body + [ret])
        used = set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", text))
        deps = {"p": {"w", "a"}, "q": {"w"}, "tmp": {"a"}, "xs": {"a"}, "d": {"a", "s"}, "last": {"b"}}
        for name in ("last", "d", "xs", "tmp", "q", "p"):
            if name in used:
                used |= deps[name]
        keep = [ln for name, ln in pre if name in used and not (name == "last" and r.integers(0, 4) == 0)]
        lines = ["def prog(x, y, n):"] + keep + body + [ret]
        return "\n".join(lines) + "\n"


_ids = itertools.count()
_dir = tempfile.mkdtemp(prefix="srcad_ckpt_fuzz_")


def load(source):
    name = f"srcad_ckpt_fuzz_{os.getpid()}_{next(_ids)}"
    path = os.path.join(_dir, name + ".py")
    with open(path, "w") as fh:
        fh.write("import numpy as np\n\n" + HELPER + "\n" + source)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _not_range(source):
    return any(h in source for h in ("enumerate(", "zip(", "for e in y:", ".items()"))


def check(seed, size=5):
    """('ok' | 'refused' | 'wrong' | 'crash' | 'skip', message) for the program of this seed, whose
    loops hold up to `size` statements."""
    gen = Gen(seed)
    src = gen.program(size)
    mod = load(src)
    prog = mod.prog
    r = np.random.default_rng(seed + 1)
    x, y = r.uniform(-1.0, 1.0, N), r.uniform(-1.0, 1.0, N)
    n = int(r.choice([0, 1, 2, 3, 5]))
    ks = [int(r.choice([1, 1, 2, 3, max(n, 1), n + 1, 10]))]     # one k a program: each k is a new build
    where = f"seed {seed}, n={n}\n{src}"
    try:
        value = prog(x.copy(), y.copy(), n)
    except NameError:           # `last` read after a loop that did not run: not a program
        return "skip", where
    try:
        want = srcad.grad(prog, wrt=(0, 1))(x.copy(), y.copy(), n)
    except srcad.UnsupportedSyntaxError as exc:
        return "refused", f"checkpoint=None refused: {exc}\n{where}"
    except Exception as exc:            # a bug outside checkpointing (or in the generator)
        return "crash", f"checkpoint=None raised {type(exc).__name__}: {exc}\n{where}"
    if not (np.isfinite(value) and abs(value) < 1e6):
        return "refused", where
    for k in ks:
        try:
            v, got = srcad.value_and_grad(prog, wrt=(0, 1), checkpoint=k)(x.copy(), y.copy(), n)
        except srcad.UnsupportedSyntaxError as exc:
            if _not_range(src) and "not a `range`" in str(exc) and exc.lineno > 0:
                return "refused", f"checkpoint={k} refused: {exc}\n{where}"
            return "crash", f"checkpoint={k} refused: {exc}\n{where}"
        except Exception as exc:
            return "crash", f"checkpoint={k} raised {type(exc).__name__}: {exc}\n{where}"
        if not (v == value and all(np.array_equal(g, h) for g, h in zip(got, want))):
            return "wrong", f"checkpoint={k}: value {v} vs {value}; grad {got} vs {want}\n{where}"
    for j in (0, 1):
        fd = numerical_grad(prog, (x, y, n), j)
        scale = max(1.0, float(np.max(np.abs(fd))))
        if not np.allclose(want[j], fd, rtol=1e-5, atol=1e-6 * scale):
            return "wrong", f"against finite differences (argument {j}): {want[j]} vs {fd}\n{where}"
    return "ok", where


# 60 in CI (each program is two builds, most of the file's time); `python tests/test_checkpoint_fuzz.py
# --seeds 3000` runs thousands
SEEDS = range(60)


@pytest.mark.parametrize("chunk", range(4))
def test_random_checkpointed_loops(chunk):
    """60 random programs (15 a chunk): bit-identical to checkpoint=None, equal to FD."""
    counts = {}
    for seed in SEEDS[chunk::4]:
        status, msg = check(seed, size=3)
        counts[status] = counts.get(status, 0) + 1
        assert status in ("ok", "refused", "skip"), msg
    assert counts.get("ok", 0) >= 0.8 * sum(counts.values()), counts


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=1000)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--show", type=int, default=3, help="programs to print per failing kind")
    args = ap.parse_args(argv)
    counts, shown = {}, {}
    for seed in range(args.start, args.start + args.seeds):
        status, msg = check(seed)
        counts[status] = counts.get(status, 0) + 1
        if status in ("wrong", "crash", "refused") and shown.get(status, 0) < args.show:
            shown[status] = shown.get(status, 0) + 1
            print(f"--- {status}: {msg}", flush=True)
        if (seed - args.start + 1) % 25 == 0:
            print(f"after {seed - args.start + 1} programs:",
                  " ".join(f"{k}={counts.get(k, 0)}" for k in ("ok", "wrong", "crash", "refused", "skip")), flush=True)
    print(" ".join(f"{k}={counts.get(k, 0)}" for k in ("ok", "wrong", "crash", "refused", "skip")))


if __name__ == "__main__":
    main()
