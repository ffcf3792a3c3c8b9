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
