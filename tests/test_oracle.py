"""The oracle layer in CI: srcad against HIPS autograd on the project's own test functions.

tests/oracle.py re-executes each function's code with autograd's numpy/scipy bound in place of
numpy's and compares srcad's reverse mode, forward mode and Hessian with autograd's, at float64
tolerances (a disagreement is arbitrated by central differences: autograd has bugs of its own).
Every case is a test: it fails on a wrong number or a raw exception from srcad. Where autograd
cannot run the code the case is "not covered" (counted, never failed); `test_oracle_coverage`
prints the counts and fails if coverage falls (a translation bug would make everything "not
covered" and hide every disagreement).

KNOWN lists the cases that disagree because of a bug filed in issue 28 and being fixed elsewhere;
an entry is strict: once its bug is fixed the case agrees and the test fails until the entry is
removed.
"""
import json
import os

import pytest

import oracle

# case name -> the bug it shows (issue 28); the case must still be bad while listed
KNOWN = {}

MIN_COVERED = 500        # cases where autograd runs at least one mode (750 gathered, 568 covered at writing)
MIN_AGREE = {"reverse": 500, "forward": 480, "second": 80}

CASES = oracle.gather()
_RESULTS = {}


def _result(case):
    if case.name not in _RESULTS:
        _RESULTS[case.name] = oracle.check(case)
    return _RESULTS[case.name]


def test_case_names_are_unique():
    names = [c.name for c in CASES]
    assert len(names) == len(set(names))
    assert set(KNOWN) <= set(names), f"KNOWN names no case: {sorted(set(KNOWN) - set(names))}"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_agrees_with_autograd(case):
    out = _result(case)
    bad = out.bad()
    if case.name in KNOWN:
        assert bad, f"{case.name} now agrees with autograd: remove it from KNOWN ({KNOWN[case.name]})"
        return
    assert not bad, "\n".join(f"{case.name}, {mode} mode: {out.modes[mode]}\n{note}" for mode, note in bad.items())


def test_oracle_coverage(record_property):
    """Counts per mode; coverage must not fall (every case is computed once, shared with the tests above)."""
    outcomes = [_result(c) for c in CASES]
    s = oracle.summary(outcomes)
    print("\noracle coverage:", json.dumps(s, indent=1))
    record_property("oracle_summary", json.dumps(s))
    out = os.environ.get("SRCAD_ORACLE_SUMMARY")
    if out:
        with open(out, "w") as fh:
            json.dump(s, fh, indent=1)
    assert s["covered"] >= MIN_COVERED, s
    for mode, floor in MIN_AGREE.items():
        assert s["modes"][mode].get("agree", 0) >= floor, (mode, s)


def test_translation_reaches_helpers_and_closures():
    """The translator rebinds numpy in the function, in the user helpers it calls (another module's
    too), in closure cells and in defaults: autograd then differentiates through all of them."""
    import numpy as np
    import autograd
    import corpus_helpers_mod as h

    scale = 3.0

    def inner(x, act=np.tanh):
        return act(x) * scale

    def outer(x):
        return np.sum(inner(x)) + h.smooth_l1(x)

    g = oracle.translate(outer)
    x = np.array([0.3, -0.7, 1.1])
    want = 3.0 * (1 - np.tanh(x) ** 2) + x / np.sqrt(1 + x * x)
    np.testing.assert_allclose(autograd.grad(g)(x), want, rtol=1e-12)
    np.testing.assert_allclose(g(x), outer(x), rtol=1e-15)


def test_oracle_catches_a_wrong_derivative():
    """The harness bites: a function whose srcad derivative is made wrong (a registered rule that
    doubles the cotangent) is reported wrong, not agreed with."""
    import numpy as np
    import srcad

    def doubled_sin(x):
        return np.sin(x)

    def user(x):
        return np.sum(doubled_sin(x) * x)

    srcad.register_vjp(doubled_sin, lambda x: (np.sin(x), lambda dy: (2.0 * dy * np.cos(x),)))
    case = oracle.OracleCase("bites", user, [np.array([0.1, 0.5, -0.3])], (0,))
    out = oracle.check(case, modes=("reverse",))
    assert out.modes["reverse"] == "wrong", out
