"""Binomial checkpointing of loops (grad(f, checkpoint=k)) and @srcad.checkpoint."""
import tracemalloc
from functools import lru_cache
from math import comb

import numpy as np
import pytest

import srcad
from srcad.runtime import binomial as rv
from fdcheck import numerical_grad


def sim(x, w, n):
    for i in range(n):
        y = np.sin(x) * w
        x = x + 0.1 * y
    return np.sum(x ** 2)


def damp(v, c):
    return v - c * v ** 3


def with_call(x, c, n):
    s = 0.0
    for i in range(n):
        x = damp(x, c) + 0.01 * i
        s = s + np.sum(x)
    return s * np.sum(x)


def nested(x, a, n, m):
    for i in range(n):
        for j in range(m):
            x = np.tanh(x * a + j)
        if i % 2 == 0:
            x = x * 1.5
        else:
            x = x - 0.2
    return np.sum(x * x)


def writes(x, n):
    y = np.zeros(n)
    t = x
    for i in range(2, n):
        t = np.cos(t) * x
        y[i] = np.sum(t) + y[i - 1] * 0.5 - y[i - 2] * 0.1
    return np.sum(y ** 2)


def two_loops(x, n):
    for i in range(n):
        x = x * 0.9 + np.sin(x)
    z = x
    for k in range(1, n, 2):
        z = z * x + k
    return np.sum(z)


def heat(u, kappa, n):
    for i in range(n):
        lap = np.roll(u, 1) + np.roll(u, -1) - 2.0 * u
        u = u + kappa * lap - 0.001 * u ** 3
    return np.sum(u ** 2)


@srcad.checkpoint
def block(x, w):
    h = np.tanh(x * w)
    return np.sum(h * h) + np.sum(x)


def uses_block(x, w):
    return block(x * 2.0, w) * block(x, w + 1.0)


def looped_while(x):
    while np.sum(x) < 10.0:
        x = x * 2.0
    return np.sum(x)


def looped_break(x, n):
    for i in range(n):
        x = x * 1.1
        if np.sum(x) > 5.0:
            break
    return np.sum(x)


def looped_array(x, vs):
    for v in vs:
        x = x * v
    return np.sum(x)


rng = np.random.default_rng(3)
X = rng.normal(size=6)
W = rng.normal(size=6)


@pytest.mark.parametrize("n", [0, 1, 2, 7, 33])
@pytest.mark.parametrize("k", [1, 2, 3, 5, 64])
def test_bit_identical_for_lengths_and_snapshots(n, k):
    want = srcad.grad(sim, wrt=(0, 1))(X, W, n)
    got = srcad.grad(sim, wrt=(0, 1), checkpoint=k)(X, W, n)
    assert all(np.array_equal(a, b) for a, b in zip(got, want))


@pytest.mark.parametrize("f, args, wrt", [
    (with_call, (X, 0.3, 17), (0, 1)),
    (nested, (X, 0.7, 9, 3), (0, 1)),
    (writes, (X, 12), 0),
    (two_loops, (X, 11), 0),
    (heat, (X, 0.2, 25), (0, 1)),
])
@pytest.mark.parametrize("k", [1, 2, 4])
def test_bit_identical_with_calls_nested_loops_and_writes(f, args, wrt, k):
    want = srcad.grad(f, wrt=wrt)(*args)
    got = srcad.grad(f, wrt=wrt, checkpoint=k)(*args)
    want, got = (want, got) if isinstance(wrt, tuple) else ((want,), (got,))
    for a, b in zip(got, want):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("f, args", [(sim, (X, W, 13)), (with_call, (X, 0.3, 9)), (nested, (X, 0.7, 5, 2)),
                                     (writes, (X, 9)), (heat, (X, 0.2, 12))])
def test_against_finite_differences(f, args):
    got = srcad.grad(f, checkpoint=3)(*args)
    fd = numerical_grad(f, args, 0)
    np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-7)


def test_value_and_grad_vjp_and_emit():
    (v0, g0) = srcad.value_and_grad(sim)(X, W, 10)
    (v1, g1) = srcad.value_and_grad(sim, checkpoint=2)(X, W, 10)
    assert v0 == v1 and np.array_equal(g0, g1)
    y, pb = srcad.vjp(sim, X, W, 10, checkpoint=2)
    gx, gw, gn = pb(1.0)
    assert gn is None
    fd = numerical_grad(sim, (X, W, 10), 1)
    np.testing.assert_allclose(gw, fd, rtol=1e-6, atol=1e-7)
    text = srcad.emit(sim, checkpoint=4)
    assert "def loop_L" in text and "_step_vjp(" in text and "rt.revolve(" in text and ", 4)" in text
    plain = srcad.emit(sim)
    assert "revolve" not in plain and "def loop_L" not in plain
    compile(text, "<emitted>", "exec")


def test_bad_checkpoint_value():
    for bad in (0, -2, 1.5, True, "3"):
        with pytest.raises(srcad.SrcadError, match="checkpoint"):
            srcad.grad(sim, checkpoint=bad)


@pytest.mark.parametrize("f, args, what", [
    (looped_while, (X,), "while"),
    (looped_break, (X, 5), "end early"),
])
def test_loops_that_cannot_be_checkpointed_raise(f, args, what):
    with pytest.raises(srcad.UnsupportedSyntaxError, match=what) as info:
        srcad.grad(f, checkpoint=3)(*args)
    assert "test_checkpoint.py" in str(info.value) and info.value.lineno > 0


def test_loop_over_array():
    # normalized to a range loop: checkpointed; otherwise a named error, never a wrong number
    vs = np.array([0.5, 1.5, 2.0, 0.7])
    try:
        got = srcad.grad(looped_array, checkpoint=2)(X, vs)
    except srcad.UnsupportedSyntaxError as exc:
        assert "not a `range`" in str(exc) and exc.lineno > 0
        return
    np.testing.assert_allclose(got, numerical_grad(looped_array, (X, vs), 0), rtol=1e-6, atol=1e-7)


def test_checkpoint_decorator_against_finite_differences():
    assert getattr(block, "__srcad_checkpoint__", False)
    g = srcad.grad(uses_block, wrt=(0, 1))(X, W)
    for k in (0, 1):
        np.testing.assert_allclose(g[k], numerical_grad(uses_block, (X, W), k), rtol=1e-6, atol=1e-7)
    # recomputed, not taped: the caller's primal sweep keeps none of block's intermediates
    text = srcad.emit(uses_block)
    caller = text[text.index("def uses_block_vjp"):]
    assert "tanh" not in caller.split("# adjoint sweep")[0]


# -- the schedule: step re-runs against an independent count ------------------------------------
@lru_cache(None)
def _fewest(n, s):
    """The fewest step re-runs that reverse n steps holding s states (a search over every split)."""
    if n <= 1:
        return 0
    if s == 1:
        return n * (n - 1) // 2
    return min(m + _fewest(n - m, s - 1) + _fewest(m, s) for m in range(1, n))


def _griewank(n, s):
    """Griewank's formula: r*n - C(s + r, s + 1), r the least with C(s + r, s) >= n."""
    if n <= 1:
        return 0
    r = 0
    while comb(s + r, s) < n:
        r += 1
    return r * n - comb(s + r, s + 1)


@pytest.mark.parametrize("n, k", [(1, 1), (2, 1), (9, 1), (9, 2), (23, 3), (40, 4), (57, 5), (60, 60)])
def test_recomputations_equal_the_binomial_schedule(n, k):
    srcad.grad(sim, checkpoint=k)(X, W, n)
    sched = rv.last_schedule
    assert sched["steps"] == n and sched["snapshots"] == k
    assert sched["recomputations"] == _fewest(n, k) == _griewank(n, k)
    assert sched["most_held"] <= k


def test_schedule_formula_for_long_loops():
    for n, s in [(1000, 5), (10_000, 10), (5000, 10)]:
        assert rv.recomputations(n, s) == _griewank(n, s)
    calls = []

    def step(i, x):
        calls.append(i)
        return (x * 1.0001 + 1e-3,)

    def step_vjp(i, x, xb):
        return (xb * 1.0001,)
    out = rv.revolve(step, step_vjp, range(2000), (1.0,), (1.0,), 6)
    assert len(calls) == _griewank(2000, 6) and rv.last_schedule["most_held"] <= 6
    assert out[0] == 1.0001 ** 2000 or abs(out[0] - 1.0001 ** 2000) < 1e-9


def test_peak_memory_of_long_loop():
    n, m = 2000, 1000      # a tape of 16 MB without checkpointing
    x = np.linspace(0.0, 1.0, m)
    w = np.full(m, 0.5)

    def peak(k):
        g = srcad.grad(sim, checkpoint=k)
        g(x, w, 3)      # generate and load the code outside the measurement
        tracemalloc.start()
        try:
            out = g(x, w, n)
            return tracemalloc.get_traced_memory()[1], out
        finally:
            tracemalloc.stop()
    full, g0 = peak(None)
    ckpt, g1 = peak(10)
    assert np.array_equal(g0, g1)
    assert full > n * m * 8        # the tape holds every iteration's state
    assert ckpt < full / 20, (ckpt, full)


def same_entry(x, n):
    y = np.zeros(3)
    y[0] = 1.0
    for i in range(n):
        y[0] = y[0] * 1.5 + np.sum(np.sin(x * y[0]))
        y[1] = y[1] + y[0]
    return y[1] * np.sum(x)


def grows(x, n):
    xs = []
    for i in range(n):
        x = np.sin(x) + 0.1 * i
        xs.append(x)
    return np.sum(np.stack(xs) ** 2)


@pytest.mark.parametrize("f, args", [(same_entry, (X, 9)), (grows, (X, 8))])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_state_written_in_place(f, args, k):
    """An array (or list) the loop writes into in place is part of the loop's state."""
    want = srcad.grad(f)(*args)
    got = srcad.grad(f, checkpoint=k)(*args)
    assert np.array_equal(got, want)
    np.testing.assert_allclose(got, numerical_grad(f, args, 0), rtol=1e-6, atol=1e-7)


@pytest.mark.slow        # (starts processes: the benchmark's children)
def test_benchmark_script_runs(tmp_path):
    """benchmarks/checkpoint_memory.py end to end on a tiny loop (no timing asserted)."""
    import importlib.util
    import json
    import os
    script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks",
                          "checkpoint_memory.py")
    if not os.path.exists(script):
        pytest.skip("the benchmarks directory is not shipped with an installed srcad")
    # its main() in this process (the measurements run in children it starts, with this srcad)
    spec = importlib.util.spec_from_file_location("checkpoint_memory_script", script)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = tmp_path / "cm.json"
    bench.main(["--n", "40", "--m", "16", "--k", "3", "--no-peers", "--json", str(out)])
    rows = json.loads(out.read_text())["rows"]
    assert not [r for r in rows if "error" in r], rows
    assert [r["k"] for r in rows] == [None, 3]
    assert rows[1]["recomputations"] == rows[1]["bound_recomputations"] == _griewank(40, 3)


def relax(v, c, m):
    for j in range(m):
        v = v - c * np.sin(v)
    return v


def calls_looping(x, c, n):
    for i in range(n):
        x = relax(x, c, 3) * 1.01
    return np.sum(np.cos(x))


@pytest.mark.parametrize("k", [1, 3])
def test_callee_with_its_own_loop(k):
    want = srcad.grad(calls_looping, wrt=(0, 1))(X, 0.4, 6)
    got = srcad.grad(calls_looping, wrt=(0, 1), checkpoint=k)(X, 0.4, 6)
    assert all(np.array_equal(a, b) for a, b in zip(got, want))
    np.testing.assert_allclose(got[0], numerical_grad(calls_looping, (X, 0.4, 6), 0), rtol=1e-6, atol=1e-7)
    text = srcad.emit(calls_looping, checkpoint=k)
    assert text.count("rt.revolve(") == 2      # the callee's loop is checkpointed too


# -- the bugs of issue 28: each against checkpoint=None (bits) and finite differences ---------------
def divides(x, e, n):
    v = x * 2.0
    for i in range(n):
        v += np.sin(x) * 0.1
        v /= e
        v /= 1.5
    return np.sum(v * v)


def in_place_ops(x, n):
    v = x * 1.0
    s = np.sum(x)
    for i in range(n):
        v *= 1.1
        v -= np.cos(v) * 0.2
        s /= 2.0 + np.sin(s)
        s -= 0.1 * np.sum(v)
    return np.sum(v * v) * s


def view_read_before(x, n):
    y = np.outer(x, x) * 1.0
    a = y[0]                    # a view of y's first row, read before the loop overwrites it
    s = np.sum(np.sin(a))
    for i in range(n):
        y[i] = y[i] * 1.5 + np.cos(y[i + 1])
    return np.sum(y * y) * s


def item_read_before(x, n):
    y = x * 1.0
    a = y[0] * 1.0
    b = np.sin(y[1]) * y[2]
    for i in range(n):
        y[i] = y[i] * a + np.sin(y[i + 1]) * b
    return np.sum(y * y) + a * b


def over_zip(x, ys):
    s = 0.0
    for xi, yi in zip(x, ys):
        s = s + np.sin(xi) * yi
    return s


def over_items(x, d):
    s = 0.0
    for key, v in d.items():
        s = s + np.sum(np.sin(x) * v)
    return s


def swaps(x, n):
    a = x[0] * 1.0
    b = x[1] * 1.0
    for i in range(n):
        a, b = b, a + np.sin(b) * 0.5
    return a * b


def constants(x, n):
    for i in range(n):
        x = x * (2.0 * 3.0) / (1.0 + 5.0) * 0.9 + np.sin(x) * (1.0 - 0.5)
    return np.sum(x)


def dict_state(x, n):
    d = {"u": x * 1.0, "v": 0.5}
    for i in range(n):
        d["u"] = np.sin(d["u"]) * 1.1
        d["v"] = d["v"] + np.sum(d["u"]) * 0.1
    return np.sum(d["u"]) * d["v"]


def alias_state(x, n):
    y = x * 1.0
    z = y                       # one object, two names: the loop writes through z, reads y
    for i in range(n):
        z[i + 1] = np.sin(y[i]) * 2.0
    return np.sum(y * y)


Y5 = np.array([0.3, 0.7, -0.4, 1.1, 0.2])


@pytest.mark.parametrize("f, args", [
    (divides, (Y5, 1.3, 5)), (in_place_ops, (Y5, 4)), (view_read_before, (Y5, 3)),
    (item_read_before, (Y5, 4)), (over_zip, (Y5, [1.0, 2.0, 0.5, -1.0, 3.0])),
    (over_items, (Y5, {"p": 1.0, "q": -2.0, "r": 0.5})), (swaps, (Y5, 6)), (constants, (Y5, 4)),
    (dict_state, (Y5, 3)), (alias_state, (Y5, 3)),
])
@pytest.mark.parametrize("k", [1, 2, 10])
def test_issue_28_checkpoint_bugs(f, args, k):
    """In-place division (once the pre-loop value was returned), reads before the loop of what it
    overwrites, zip/items loops, tuple swaps, constant sub-expressions, dict and aliased state."""
    fresh = lambda: [a.copy() if isinstance(a, np.ndarray) else a for a in args]      # noqa: E731
    value = f(*fresh())
    want = srcad.grad(f)(*fresh())
    v, got = srcad.value_and_grad(f, checkpoint=k)(*fresh())
    assert v == value and np.array_equal(got, want)
    fd = numerical_grad(lambda *a: f(*[b.copy() if isinstance(b, np.ndarray) else b for b in a]), fresh(), 0)
    np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-7)


def test_entry_and_exit_state():
    """Snapshots copy what a step may write into (one copy for two names of one object); the exit
    gives back the entry objects, with the contents of those written in place restored in place."""
    y = np.arange(3.0)
    view = y[1:]
    xs, d = [1.0], {"u": 2.0}
    entry = rv.entry_state((y, y, xs, d, 5.0))
    assert entry[0] is entry[1] and entry[0] is not y and entry[2] is not xs and entry[3] is not d
    y[:] = -1.0
    xs.append(3.0)
    d["u"] = 7.0
    out = rv.exit_state(entry, (True, False, True, True, False))
    assert out[0] is y and out[2] is xs and out[3] is d and out[4] == 5.0
    assert np.array_equal(view, [1.0, 2.0]) and xs == [1.0] and d == {"u": 2.0}
