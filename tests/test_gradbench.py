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


# Known bug (for the lead; remove this test and set saddle's tiny size to "rr" when it is fixed):
# reverse over reverse where one module-level function is needed with respect to different
# arguments (objective wrt p2 inside a srcad.grad, wrt p1 and p2 outside) emits two
# `def objective_vjp` in one generated module; the second shadows the first and the gradient
# crashes in rt.finalize (ValueError from np.broadcast_to). Repro: see PROFILE.md.
def test_known_bug_callee_vjp_name_collision():
    import srcad

    from benchmarks.gradbench import saddle
    start = np.array([1.0, 1.0])
    with pytest.raises(ValueError, match="axis remapping"):
        srcad.grad(saddle.inner_max)(start, start)
