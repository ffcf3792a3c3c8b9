"""custom_vjp/custom_jvp, check_numerics, check_grad, the CLI and emitted-code properties."""
import subprocess
import sys

import numpy as np
import pytest

import srcad
import api_cases as ac
from fdcheck import numerical_grad


def test_custom_vjp_rule_is_used():
    x = np.array([0.1, -0.5, 0.2])
    g = srcad.grad(ac.uses_clipped)(x)
    # hand-written: y = 3x, loss = sum(y^2), dy = 2y clipped to [-1, 1], dx = 3 * clipped
    np.testing.assert_allclose(g, 3.0 * np.clip(2 * 3.0 * x, -1.0, 1.0))


def test_custom_jvp_rule_is_used():
    x = np.array([0.3, -1.2, 2.0])
    v = np.array([1.0, 0.5, -2.0])
    y, y_dot = srcad.jvp(ac.uses_softplus, (x,), (v,))
    want = numerical_grad(ac.uses_softplus, (x,)) @ v
    np.testing.assert_allclose(y_dot, want, rtol=1e-6)


def test_check_numerics_names_the_line():
    x = np.array([1.0, 0.0, 4.0])
    assert np.isinf(srcad.grad(ac.sqrt_sum)(x)).any()             # unchecked: Inf flows out
    with pytest.raises(srcad.NumericsError) as info:
        srcad.grad(ac.sqrt_sum, check_numerics=True)(x)
    msg = str(info.value)
    assert "api_cases.py:" in msg and "r = np.sqrt(y)" in msg and "Inf" in msg


def test_check_grad_passes_and_fails():
    x = np.array([0.3, 1.2, -0.7])
    assert srcad.check_grad(ac.wrong_on_purpose, x) < 1e-6
    srcad.register_vjp(ac.fake_rule_target, lambda x: (x ** 2, lambda dy: (3.0 * x * dy,)))
    try:
        with pytest.raises(srcad.GradientCheckError) as info:
            srcad.check_grad(ac.wrong_on_purpose, x)
        assert "finite differences" in str(info.value) and "entry" in str(info.value)
    finally:
        from srcad.rules import registry
        registry._USER.pop(ac.fake_rule_target, None)


def test_cli_emit_prints_the_same_text_as_emit(tmp_path):
    import os
    here = os.path.dirname(__file__)
    out = tmp_path / "g.py"
    cmd = [sys.executable, "-m", "srcad.cli", "emit", os.path.join(here, "examples_for_tests.py") + ":logistic",
           "--wrt", "0", "-o", str(out)]
    subprocess.run(cmd, check=True, cwd=tmp_path)
    from examples_for_tests import logistic
    assert out.read_text() == srcad.emit(logistic)
    ns = {}
    exec(compile(out.read_text(), str(out), "exec"), ns)
    rng = np.random.default_rng(0)
    w, X, y = rng.normal(size=3), rng.normal(size=(5, 3)), (rng.random(5) > 0.5) * 1.0
    np.testing.assert_allclose(ns["logistic_vjp"](w, X, y), numerical_grad(logistic, (w, X, y)), rtol=1e-6, atol=1e-8)


def test_emitted_code_has_a_comment_per_user_line():
    from examples_for_tests import logistic
    text = srcad.emit(logistic)
    for line in ("# L6: z = X @ w", "# L7: p = 1.0 / (1.0 + np.exp(-z))", "# adjoint of L6: z = X @ w"):
        assert line in text
    imports = [ln for ln in text.splitlines() if ln.startswith(("import ", "from "))]
    assert all(ln.split()[1].split(".")[0] in ("numpy", "scipy", "srcad") for ln in imports)


def test_traceback_shows_the_generated_line():
    x = np.array([1.0, 2.0])
    try:
        srcad.grad(ac.sqrt_sum)(np.array(["a", "b"]))
    except Exception as exc:
        import traceback
        text = "".join(traceback.format_exception(exc))
        assert "sqrt_sum_value_and_vjp" in text and "y = x * 2.0" in text
    else:
        raise AssertionError("expected an error for string input")
    assert srcad.grad(ac.sqrt_sum)(x).shape == (2,)


def test_row_gather_gradient_million_rows_matches_add_at_and_is_thread_deterministic():
    rng = np.random.default_rng(0)
    E = rng.normal(size=(1_000_000, 4))
    idx = rng.integers(0, 1_000_000, size=300_000)
    idx[:1000] = 7                                       # many repeats of one row
    W = rng.normal(size=(300_000, 4))
    want = np.zeros_like(E)
    np.add.at(want, idx, W)                              # the reference: d sum(E[idx] * W) / dE
    g = srcad.grad(ac.embedding_loss)
    try:
        srcad.set_num_threads(1)
        g1 = g(E, idx, W)
        srcad.set_num_threads(2)
        g2 = g(E, idx, W)
    finally:
        srcad.set_num_threads(2)
    np.testing.assert_array_equal(g1, want)
    assert g1.tobytes() == g2.tobytes()
    rs = srcad.grad(ac.embedding_loss, row_sparse=True)(E, idx, W)
    assert isinstance(rs, srcad.RowSparse) and rs.shape == E.shape
    np.testing.assert_array_equal(rs.todense(), want)


def test_decorator_forms():
    x, y = np.array([0.3, -1.1, 2.0]), np.array([0.5, 0.1, -0.4])
    np.testing.assert_allclose(ac.decorated_bare(x), np.cos(x) * x + np.sin(x), rtol=1e-12)  # analytic
    gx, gy = ac.decorated_with_args(x, y)
    np.testing.assert_allclose(gx, np.exp(y), rtol=1e-12)
    np.testing.assert_allclose(gy, x * np.exp(y), rtol=1e-12)
    value, g = ac.decorated_value_and_grad(x, y)
    assert np.isclose(value, np.sum(x ** 2 * y))
    np.testing.assert_allclose(g, x ** 2, rtol=1e-12)


def test_rebinding_a_global_regenerates_the_code():
    x = np.array([0.3, -1.0, 2.0])
    g = srcad.grad(ac.uses_globals)
    np.testing.assert_allclose(g(x), 2.0 * ac.WEIGHTS * 2 * x)          # analytic
    old_scale, old_w = ac.SCALE, ac.WEIGHTS
    try:
        ac.SCALE, ac.WEIGHTS = 5.0, np.array([0.1, 0.2, 0.3])
        np.testing.assert_allclose(g(x), 5.0 * ac.WEIGHTS * 2 * x)      # not the code made for 2.0
        assert "SCALE = 5.0" in srcad.emit(ac.uses_globals)
    finally:
        ac.SCALE, ac.WEIGHTS = old_scale, old_w


def test_globals_a_function_shadows_are_not_its_inputs():
    """A module global named like a parameter or a local is not read by the function: rebinding
    it keeps the generated code (no regeneration per call), and the module does not carry it."""
    from srcad import cache
    v = np.array([0.5, -1.5])
    g = srcad.grad(ac.shadows_globals)
    np.testing.assert_allclose(g(v), 2 * ac.SCALE ** 2 * v)            # analytic
    mods = set(map(id, cache._MODULES.values()))
    old = ac.x, ac.hidden
    try:
        ac.x, ac.hidden = np.ones(2), np.zeros(2)
        np.testing.assert_allclose(g(v), 2 * ac.SCALE ** 2 * v)
        assert set(map(id, cache._MODULES.values())) == mods
    finally:
        ac.x, ac.hidden = old
    text = srcad.emit(ac.shadows_globals)
    assert "hidden = 3.0" not in text and "x = 7.0" not in text and "SCALE = 2.0" in text


def test_cli_module_form_and_forward_mode(tmp_path, capsys):
    import os
    from srcad import cli
    here = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run([sys.executable, "-m", "srcad.cli", "emit", "examples_for_tests:logistic", "--mode", "forward"],
                         check=True, cwd=here, capture_output=True, text=True).stdout
    from examples_for_tests import logistic
    # the same text as srcad.emit, whose forward module test_forward checks against FD
    assert out == srcad.emit(logistic, mode="forward")
    # the error of the module form: the same main(), in this process (a process costs an import of srcad)
    assert cli.main(["emit", "examples_for_tests:nope"]) == 2
    assert "has no function 'nope'" in capsys.readouterr().err


def test_hessian_wrt_sparse_points_to_hvp():
    import scipy.sparse as sp
    A = sp.random_array((5, 4), density=0.5, random_state=0, format="csr")
    with pytest.raises(srcad.SrcadError, match="srcad.hvp"):
        srcad.hessian(ac.sparse_quad, wrt=0)(A, np.ones(4))
    H = srcad.hessian(ac.sparse_quad, wrt=1)(A, np.ones(4))
    np.testing.assert_allclose(H, 2 * (A.T @ A).toarray(), rtol=1e-12)   # analytic: 2 A^T A
