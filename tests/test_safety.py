"""Safety: caches that must never serve stale facts, line numbering of sources with unusual line
separators, file names in the cache directory, kernel errors as named errors, and fork safety.
Every derivative is checked against an analytic formula or a dense/numpy reference."""
import importlib.util
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp

import srcad
from srcad.errors import InputError


def _load(tmp_path, name, source):
    path = tmp_path / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ---- line separators: Python numbers lines at \n, \r\n, \r only -------------------------------------
# str.splitlines also cuts at these; each sits in a comment or a string of the user's function
ODD_SEPARATORS = ["\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


@pytest.mark.parametrize("sep", ODD_SEPARATORS + ["".join(ODD_SEPARATORS)])
def test_odd_line_separators_in_comments_and_strings(tmp_path, sep):
    source = textwrap.dedent(f'''\
        import numpy as np


        def f(x):
            a = np.sin(x)  # a comment {sep} holding a separator
            b = a * x
            s = "a string {sep} too"
            c = np.exp(b) + x ** 3  # {sep}{sep}
            return np.sum(c) + 0.0 * len(s)
        ''')
    mod = _load(tmp_path, f"odd_sep_{ord(sep[0])}_{len(sep)}", source)
    x = np.array([0.3, -0.7, 1.1])

    a, b = np.sin(x), np.sin(x) * x
    db = np.cos(x) * x + a                                  # d b / d x (elementwise)
    grad = np.exp(b) * db + 3 * x ** 2
    d2b = -np.sin(x) * x + 2 * np.cos(x)
    hess = np.diag(np.exp(b) * (db ** 2 + d2b) + 6 * x)

    np.testing.assert_allclose(srcad.grad(mod.f)(x), grad, rtol=1e-12)
    np.testing.assert_allclose(srcad.hessian(mod.f)(x), hess, rtol=1e-11, atol=1e-13)
    v = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(srcad.hvp(mod.f)(x, v), hess @ v, rtol=1e-11, atol=1e-13)


def test_source_lines_match_python_numbering():
    from srcad.transform.compile import source_lines
    text = "a = 1  # \f\u2028\x85\nb = 2\r\nc = 3\rd = 4"
    lines = source_lines(text)
    assert "".join(lines) == text
    assert len(lines) == 4
    code = compile(text, "<t>", "exec")
    assert sorted({ins.positions.lineno for ins in __import__("dis").get_instructions(code)
                   if ins.positions.lineno}) == [1, 2, 3, 4]
    assert source_lines(text, False) == ["a = 1  # \f\u2028\x85", "b = 2", "c = 3", "d = 4"]
