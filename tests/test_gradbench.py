"""GradBench's problems (benchmarks/gradbench) at tiny sizes: srcad's derivative against central
finite differences (or the problem's known answer) and against HIPS autograd where it runs."""
import importlib
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.append(ROOT)          # plain `pytest` does not put the repository root on sys.path

from benchmarks.gradbench import PROBLEMS  # noqa: E402


def flat(d):
    d = d if isinstance(d, tuple) else (d,)
    return np.concatenate([np.ravel(x.toarray() if hasattr(x, "toarray") else np.asarray(x)) for x in d])


@pytest.mark.parametrize("name", PROBLEMS)
def test_problem_tiny(name):
    mod = importlib.import_module(f"benchmarks.gradbench.{name}")
    args = mod.data(mod.SIZES["tiny"])
    d = mod.srcad_derivative()(*args)
    assert mod.fd_check(args, d) < 1e-5, f"{name}: srcad's derivative vs finite differences"
    ag = mod.autograd_derivative()
    if ag is not None:
        want = ag(*args)
        np.testing.assert_allclose(flat(d), flat(want), rtol=1e-7, atol=1e-9, err_msg=f"{name}: vs autograd")


def test_particle_reverse_over_reverse():
    """particle's tiny size is the rr variant (srcad.grad of a simulation calling srcad.grad)."""
    from benchmarks.gradbench import particle
    assert particle.SIZES["tiny"] == "rr"


def test_saddle_reverse_over_reverse():
    """saddle's tiny size is the rr variant: one module-level function differentiated with respect
    to different arguments inside and outside a srcad.grad (its generated `objective_vjp` and the
    outer derivative's were once two functions of one name)."""
    from benchmarks.gradbench import saddle
    assert saddle.SIZES["tiny"] == "rr"


def test_without_jax(monkeypatch):
    """With JAX absent (`import jax` fails), every problem's JAX reference is None and the table shows
    "-" in JAX's columns; the geometric means cover the peers that ran."""
    from benchmarks.gradbench import common
    monkeypatch.setitem(sys.modules, "jax", None)          # `import jax` raises ImportError
    monkeypatch.setattr(common, "_JAX", [])
    assert common.jax_module(threads=1) is None and common.jax_threads() is None
    for name in PROBLEMS:
        assert importlib.import_module(f"benchmarks.gradbench.{name}").jax_derivative() is None, name
    from benchmarks.gradbench.tables import geomeans, table
    row = {"problem": "lse", "size": "n=20", "threads": 1, "primal_s": 1e-4, "first_s": {"srcad": 0.1},
           "times_s": {"srcad": 2e-4, "torch": 8e-4}, "check": "fd ok", "notes": ""}
    line = table([row]).splitlines()[2].split()
    assert line[8:13] == ["-", "-", "-", "4.00x", "-"]       # jax d/p, jax 1st, vs autograd, vs torch, vs jax
    assert geomeans([row]) == ["srcad vs torch, 1 thr: geometric mean 4.00x over 1 rows; behind: none"]


def test_sparse_difference():
    """Peers' sparse Jacobians (ba) are compared without densifying: the max entry difference over the
    largest entry, entries stored in one matrix only included."""
    import scipy.sparse as sp
    from benchmarks.gradbench.tables import differs
    a = sp.csr_array(np.array([[0.0, 4.0], [2.0, 0.0]]))
    b = sp.csr_array(np.array([[0.0, 4.0], [2.0, 1e-3]]))
    assert differs(a, a) == 0.0
    assert differs(a, b) == pytest.approx(1e-3 / 4.0)
