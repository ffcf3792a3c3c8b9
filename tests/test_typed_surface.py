"""srcad's typed surface: the declarations in srcad/_typed.pyi (what mypy reads for `import
srcad`) say the implementation's parameters, by name, kind and order; tests/typecheck_surface.py
(the program `mypy --strict` checks) runs and computes right; srcad.emit returns a str that
Jupyter renders as Python."""
import ast
import inspect
import os
import sys

import numpy as np

import srcad

HERE = os.path.dirname(__file__)
STUB = os.path.join(os.path.dirname(srcad.__file__), "_typed.pyi")
KINDS = {"posonlyargs": inspect.Parameter.POSITIONAL_ONLY, "args": inspect.Parameter.POSITIONAL_OR_KEYWORD,
         "vararg": inspect.Parameter.VAR_POSITIONAL, "kwonlyargs": inspect.Parameter.KEYWORD_ONLY,
         "kwarg": inspect.Parameter.VAR_KEYWORD}


def _declared(fn):
    out = []
    for field, kind in KINDS.items():
        a = getattr(fn.args, field)
        for arg in (a if isinstance(a, list) else [a] if a else []):
            out.append((arg.arg, kind))
    return out


def _stub():
    """{name: [(param, kind)]} for the stub's functions (an overloaded one: its first variant) and
    the methods of its classes (as 'Class.method')."""
    found = {}
    for node in ast.parse(open(STUB).read()).body:
        if isinstance(node, ast.FunctionDef):
            found.setdefault(node.name, _declared(node))
        elif isinstance(node, ast.ClassDef):
            found[node.name] = None
            for m in node.body:
                if isinstance(m, ast.FunctionDef):
                    found[f"{node.name}.{m.name}"] = _declared(m)[1:]      # less self
    return found


def test_the_declared_parameters_are_the_implementations():
    stub = _stub()
    assert {"grad", "value_and_grad", "vjp", "jvp", "jacobian", "hessian", "hvp", "emit", "check_grad"} <= set(stub)
    for name, params in stub.items():
        obj = srcad
        for part in name.split("."):
            obj = getattr(obj, part)
        if params is None:
            assert inspect.isclass(obj), name
            continue
        if name.endswith("._repr_html_") or name.endswith("._repr_markdown_"):
            continue
        actual = [(p.name, p.kind) for p in inspect.signature(obj).parameters.values()]
        if "." in name and actual and actual[0][0] == "self":
            actual = actual[1:]
        assert actual == params, f"srcad/_typed.pyi declares {name}{params}, the implementation takes {actual}"


def test_every_public_function_is_typed():
    stub = _stub()
    for name in srcad.__all__:
        obj = getattr(srcad, name)
        if inspect.ismodule(obj) or (inspect.isclass(obj) and issubclass(obj, (BaseException, Warning))):
            continue
        if getattr(obj, "__module__", None) == "srcad":       # defined (and annotated) in srcad/__init__.py
            assert inspect.signature(obj).return_annotation is not inspect.Signature.empty, name
            continue
        assert name in stub or name in ("RowSparse", "__version__"), f"{name} has no declaration in _typed.pyi"


def test_the_surface_program_runs_and_computes_right():
    sys.path.insert(0, HERE)
    try:
        import typecheck_surface as prog
    finally:
        sys.path.remove(HERE)
    r = prog.run()
    rng = np.random.default_rng(0)
    X, y, w = rng.normal(size=(20, 3)), (rng.random(20) > 0.5).astype(float), np.zeros(3)
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    by_hand = X.T @ (p - y) / len(y)                 # the logistic loss' gradient
    np.testing.assert_allclose(r["g"], by_hand, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(r["gw"], by_hand, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(r["ct"], 3.0 * np.ones(3))
    np.testing.assert_allclose(r["t3"], 3.0 * np.ones(3))
    np.testing.assert_allclose(r["J"], np.diag(3.0 * np.arange(3.0) ** 2))
    np.testing.assert_allclose(r["H"], 12.0 * np.eye(2))
    np.testing.assert_allclose(r["sg"], 2.0 * np.arange(3.0))
    assert r["err"] < 1e-6 and "def loss_vjp" in r["text"] and r["version"] == srcad.__version__


def test_emit_returns_a_str_that_renders_as_python():
    code = srcad.emit(lambda x: np.sum(x * x))
    assert isinstance(code, str) and isinstance(code, srcad.GeneratedCode)
    md = code._repr_markdown_()
    assert md.startswith("```python\n") and md.endswith("\n```") and str(code).rstrip() in md
    assert str(code) == code and print(code) is None               # plain text elsewhere
    html = code._repr_html_()
    try:
        import pygments  # noqa: F401
    except ImportError:
        assert html is None                        # Jupyter falls back to the markdown
    else:
        assert "<span" in html
