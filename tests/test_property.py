"""Property test: random programs, differentiated by srcad, against central finite differences.

A hypothesis strategy writes the *source text* of a function

    def prog(x, y):          # x, y: float64 arrays of shape (4,)
        ...
        return np.sum(...)

from straight-line assignments of numpy operations, overwrites of existing variables
(`v1 = np.cos(v1) + y`), augmented assignments, subscript writes into arrays that are fresh
copies (`v2 = x.copy()`, `np.zeros(4)`), `if`/`else` on data-dependent conditions, `for` loops
over `range`, over an array, `enumerate` and `zip`, `while` loops, `break`/`continue`, early
`return`, and dicts (displays with constant keys, item writes, reads, `.get`, loops over the dict
and its `.items()`, and a dict passed to a helper function that loops over its argument). Each
program is written to a temporary .py file and imported, so that srcad can read it with
`inspect.getsource`; `srcad.grad(prog, wrt=(0, 1))` is then compared with central differences.

Finite differences are only a sound reference away from kinks, so every program is also rendered
in an *instrumented* form, where each kink site (a branch or `np.where` condition, `np.maximum`,
`np.minimum`, `np.abs`, `np.clip`, `np.max`/`np.min` of an array) records how far its operands
are from the kink. Inputs are drawn until every such distance is at least `MARGIN`; as a
backstop, FD with two step sizes must agree. Programs that cannot be made well conditioned are
rejected with `assume`.

The statement kinds in use are listed in `FEATURES`; remove one while srcad does not support it
yet. On failure the message shows the program, its inputs and both gradients. The generator is
in tests/fuzzgen.py; tests/test_property_hunt.py runs its extended constructs (the fuzzer's).
"""
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, assume, event, given, note, settings
from hypothesis import strategies as st

import srcad
from fdcheck import numerical_grad
# the generator lives in tests/fuzzgen.py (shared with the fuzzer, benchmarks/fuzz.py)
from fuzzgen import (FEATURES, MARGIN, MAX_MAGNITUDE, N, Program, _Kinks, find_inputs,  # noqa: F401
                     import_program, programs)


def _describe(program, x, y, fd=None, got=None):
    parts = ["program:", program.source,
             f"x = np.array({x.tolist()!r})", f"y = np.array({y.tolist()!r})"]
    if fd is not None:
        parts.append(f"finite differences: {[g.tolist() for g in fd]}")
    if got is not None:
        shown = [g.tolist() if isinstance(g, np.ndarray) else g for g in got] \
            if isinstance(got, tuple) else got
        parts.append(f"srcad.grad:         {shown!r}")
    return "\n".join(parts)


# =============================================================================================
# The property
# =============================================================================================

def _check_refused(program, prog_dir):
    """A program that writes through a view and reads the viewed array again is either made
    exact (a slice of one array: the slice is written back; then it is checked against finite
    differences like any program, and this returns False) or refused in both modes, naming the
    write through the view, before any code runs (never a number)."""
    module = import_program(program.source, prog_dir)
    try:
        x, y = np.linspace(-1.0, 1.0, N), np.linspace(0.5, -0.5, N)
        try:
            srcad.emit(module.prog, wrt=(0, 1))
        except srcad.UnsupportedSyntaxError:
            event("view write: refused")
        else:
            event("view write: made exact")
            return False
        for run in (lambda: srcad.grad(module.prog, wrt=(0, 1))(x, y),
                    lambda: srcad.jvp(module.prog, (x, y), (x, y))):
            with pytest.raises(srcad.UnsupportedSyntaxError) as info:
                run()
            msg = str(info.value)
            assert info.value.lineno == program.reject_line, msg + "\n" + program.source
            assert "a view of" in msg and "is read again" in msg, msg       # the write and the alias
            assert "instead" in msg or ".copy()" in msg, msg                  # the fix
    finally:
        sys.modules.pop(module.__name__, None)
    return True


@pytest.fixture(scope="module")
def prog_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("srcad_property_programs")


# 150 programs in CI: each is a reverse and a forward build, nearly all of the time; the same generator
# runs in tests/test_property_hunt.py (180 programs, its extended constructs) and python -m benchmarks.fuzz
@settings(max_examples=150, deadline=None, derandomize=True,
          phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                 HealthCheck.data_too_large, HealthCheck.large_base_example])
@given(program=programs(rejecting=True, sparse=True, extended=True), seed=st.integers(0, 2 ** 32 - 1))
def test_random_program_gradient(program, seed, prog_dir):
    """Reverse mode (srcad.grad) and forward mode (srcad.jvp) of a random program against FD; a
    program that writes through a view and reads the viewed array again is made exact or refused."""
    note(program.source)
    for feature in sorted(program.features):
        event(f"feature: {feature}")
    if program.reject_line is not None and _check_refused(program, prog_dir):
        return

    inputs = find_inputs(program, seed)
    assume(inputs is not None)
    x, y, value = inputs

    module = import_program(program.source, prog_dir)
    try:
        prog = module.prog
        assert prog(x.copy(), y.copy()) == value, "generator bug: instrumented copy differs"
        fd = [numerical_grad(prog, (x, y), k, eps=1e-6) for k in (0, 1)]
        # Backstop against kinks the instrumentation missed: a second, larger step must agree.
        fd_large = [numerical_grad(prog, (x, y), k, eps=1e-4) for k in (0, 1)]
        scale = max(1.0, *(float(np.max(np.abs(g))) for g in fd))
        assume(scale < MAX_MAGNITUDE)
        assume(all(np.allclose(a, b, rtol=1e-4, atol=1e-5 * scale) for a, b in zip(fd, fd_large)))

        x_in, y_in = x.copy(), y.copy()
        try:
            got = srcad.grad(prog, wrt=(0, 1))(x_in, y_in)
        except Exception as exc:
            raise AssertionError(
                f"srcad.grad raised {type(exc).__name__}: {exc}\n" + _describe(program, x, y)
            ) from exc

        msg = _describe(program, x, y, fd, got)
        assert np.array_equal(x_in, x) and np.array_equal(y_in, y), (
            "srcad.grad modified its input arrays\n" + msg)
        assert isinstance(got, tuple) and len(got) == 2, "wrt=(0, 1) must give a 2-tuple\n" + msg
        for g, want in zip(got, fd):
            assert isinstance(g, np.ndarray) and g.shape == (N,) and g.dtype == np.float64, (
                f"gradient should be a float64 array of shape ({N},), got {g!r}\n" + msg)
            np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6 * scale, err_msg=msg)

        # forward mode (generated tangent code) along a random direction, against the same FD
        rng = np.random.default_rng(seed)
        u, v = rng.normal(size=N), rng.normal(size=N)
        try:
            _, y_dot = srcad.jvp(prog, (x.copy(), y.copy()), (u, v))
        except Exception as exc:
            raise AssertionError(
                f"srcad.jvp raised {type(exc).__name__}: {exc}\n" + _describe(program, x, y)) from exc
        np.testing.assert_allclose(float(y_dot), float(fd[0] @ u + fd[1] @ v), rtol=1e-5,
                                   atol=1e-6 * scale * N, err_msg="forward mode\n" + msg)
    finally:
        sys.modules.pop(module.__name__, None)

