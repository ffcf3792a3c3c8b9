"""The registry holds every fact the passes ask about an operation, and an operation with no entry
is refused (deny by default).

(a) Every NumPy callable, method name, operator key and runtime helper that a pass module names
    has a registry entry: scanned from the passes' syntax trees, so a table added to a pass
    instead of the registry fails here.
(b) A method, attribute, call or operator on a value that carries a derivative with no rule is a
    MissingRuleError naming the user's line, never an identity or a zero; an entry of facts only
    (np.put: writes in place) gives no derivative.
"""
import ast
import builtins
import pathlib

import numpy as np
import pytest

import srcad
from srcad import runtime as rt
from srcad.rules import registry
from srcad.rules.fact_values import Alias, ResultKind
from srcad.rules.registry import facts, lookup

ROOT = pathlib.Path(srcad.__file__).parent
PASSES = sorted((ROOT / "frontend").rglob("*.py")) + sorted((ROOT / "transform").rglob("*.py"))   # packages too
X = np.array([0.3, 1.2, -0.7])


def _special_cased():
    """(module, line, what, key) of every operation a pass module names."""
    out = []
    for path in PASSES:
        tree = ast.parse(path.read_text())
        for n in ast.walk(tree):
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "np":
                obj = getattr(np, n.attr, None)
                if obj is not None and not isinstance(obj, type) and type(obj).__name__ != "module":
                    out.append((path.name, n.lineno, f"np.{n.attr}", obj))
            elif isinstance(n, ast.Constant) and isinstance(n.value, str) and len(n.value) > 3 and (
                    n.value.startswith("op:") or n.value.startswith(".") and n.value[1:].isidentifier()):
                out.append((path.name, n.lineno, repr(n.value), n.value))
            elif isinstance(n, ast.Compare) and any(isinstance(s, ast.Attribute) and s.attr == "attr"
                                                    for s in [n.left] + n.comparators):
                # `f.attr == "append"`, `f.attr in ("append", "pop")`: a method name
                for s in [n.left] + n.comparators:
                    elts = [s] if isinstance(s, ast.Constant) else getattr(s, "elts", [])
                    out += [(path.name, n.lineno, f"method {e.value}", "." + e.value) for e in elts
                            if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            elif isinstance(n, ast.Call) and n.args and isinstance(n.args[0], ast.Constant) and \
                    isinstance(n.args[0].value, str) and (
                        isinstance(n.func, ast.Name) and n.func.id == "rt" or
                        isinstance(n.func, ast.Attribute) and n.func.attr == "runtime_helper"):
                # rt("zeros_like", ...) / self.runtime_helper("concat"): a runtime helper emitted
                out.append((path.name, n.lineno, f"rt.{n.args[0].value}", getattr(rt, n.args[0].value, None)))
    return out


def test_the_scan_sees_the_passes_special_cases():
    seen = {what for _, _, what, _ in _special_cased()}
    # a few the passes are known to name (if these vanish, the scan is broken, not the passes fixed)
    assert {"'.pop'", "method append", "rt.zeros_like", "rt.concat"} <= seen


def test_every_operation_a_pass_special_cases_has_a_registry_entry():
    missing = [f"{mod}:{line}: {what}" for mod, line, what, key in _special_cased() if facts(key) is None]
    assert not missing, "operations named in a pass with no registry entry:\n" + "\n".join(missing)


def _operation_names(node):
    """The operations a literal collection names: np.<f> references, and strings that are method
    keys (".sum"), method names ("append") or numpy function names, also inside a `"..." .split()`."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("frozenset", "set") \
            and node.args:
        node = node.args[0]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "split" and \
            isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str):
        items = [ast.Constant(w) for w in node.func.value.value.split()]
    elif isinstance(node, ast.Dict):
        items = [e for k in node.keys if k is not None for e in (k.elts if isinstance(k, ast.Tuple) else [k])]
    else:
        items = getattr(node, "elts", None) or []
    out = []
    for e in items:
        if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id == "np":
            if not isinstance(getattr(np, e.attr, None), type):     # np.ndarray in isinstance: a type
                out.append(ast.unparse(e))
        elif isinstance(e, ast.Constant) and isinstance(e.value, str) and (
                facts(e.value) is not None or facts("." + e.value) is not None
                or facts(getattr(np, e.value, None)) is not None or facts(getattr(rt, e.value, None)) is not None):
            out.append(e.value)
    return out


def test_the_passes_hold_no_tables_of_operations():
    """No set, frozenset, dict, list or tuple naming two or more operations in a pass module (at
    module level or inline in a test such as `key in (np.sum, ".sum")`): such facts are declared in
    the registry. (Tuple-unpacking constants, `WHOLE, VIEW = "whole", "view"`, are not tables.)"""
    offenders = []
    for path in PASSES:
        tree = ast.parse(path.read_text())
        unpacked = {id(st.value) for st in ast.walk(tree) if isinstance(st, ast.Assign)
                    and isinstance(st.targets[0], ast.Tuple)}
        for node in ast.walk(tree):
            if id(node) in unpacked or not isinstance(node, (ast.Set, ast.Dict, ast.List, ast.Tuple, ast.Call)):
                continue
            named = _operation_names(node)
            if len(named) >= 2:
                offenders.append(f"{path.name}:{node.lineno}: {', '.join(named[:6])}")
    assert not offenders, "tables of operations in pass modules (declare them in the registry):\n" + \
        "\n".join(offenders)


# ---- the facts, read back as the passes read them ------------------------------------------------
def test_memory_facts_read_by_the_alias_analysis():
    from srcad.frontend import aliases
    assert np.reshape in aliases._VIEW_FUNCS and builtins.zip in aliases._VIEW_FUNCS
    assert np.exp not in aliases._VIEW_FUNCS
    assert "reshape" in aliases._VIEW_METHODS and "copy" not in aliases._VIEW_METHODS
    assert {"append", "fill", "sort", "pop", "sum_duplicates"} <= set(aliases._INPLACE_METHODS)
    assert "append" in aliases._ADDS_ITEMS and "fill" not in aliases._ADDS_ITEMS
    assert aliases.is_inplace_func(np.copyto) and aliases.is_inplace_func(np.add.at)
    assert not aliases.is_inplace_func(np.add)
    assert "shape" in aliases._PLAIN_ATTRS and "T" not in aliases._PLAIN_ATTRS


def test_purity_facts_read_by_the_cleanup_pass():
    from srcad.transform.cleanup import _CONSUMING, _pure_call

    def pure(text):
        return _pure_call(ast.parse(text, mode="eval").body, set())
    assert "add" in _CONSUMING and "sum_vjp" not in _CONSUMING
    assert pure("rt.sum_vjp(g, x)") and pure("rt.shapes.tile_vjp(g, a, r)") and pure("np.sin(x)")
    assert pure("len(x)") and pure("scipy.special.gamma(x)")
    assert not pure("rt.add(a, b)") and not pure("rt.linalg.lstsq_check(a)")
    assert not pure("np.random.normal(0.0)") and not pure("np.add.at(x, i, v)") and not pure("print(x)")
    assert not pure("np.sin(x, out=y)")


def test_runtime_helpers_are_filed_by_the_name_generated_code_calls():
    # HelperFacts reads `rt.<name>` through the names runtime_rules.py filed (the registry imports no
    # runtime): each helper with an entry is found by its name, with the entry of the helper itself
    consuming = registry.HelperFacts("consumes")
    with_entry = {n for n, f in vars(rt).items() if callable(f) and not n.startswith("__") and facts(f) is not None}
    assert len(with_entry) > 50
    assert {n for n in with_entry if n in consuming} == {"add", "add_at", "zero_at"}
    assert all((n in registry.HelperFacts("pure")) == bool(facts(getattr(rt, n)).pure) for n in with_entry)
    assert "no_such_helper" not in consuming and None not in consuming


def test_fusions_and_kinds_are_declared_on_their_entries():
    from srcad.transform.fuse import fusion
    from srcad.transform.kinds import _kind_fact
    assert fusion("getitem", "matmul", 0) == ("getitem_matmul", ())
    assert fusion("matmul_vjp_x", "index_vjp", 0) == ("index_matmul_vjp", (1,))
    assert fusion("getitem", "matmul", 1) is None and fusion("sin", "matmul", 0) is None
    assert _kind_fact(".max") is ResultKind.REDUCTION and _kind_fact(np.sum) is ResultKind.REDUCTION_SUM
    assert _kind_fact(np.stack) is ResultKind.STACKED and _kind_fact(np.dot) is ResultKind.MATMUL
    assert _kind_fact(np.zeros_like) is ResultKind.SAME and _kind_fact(len) is ResultKind.INT


def test_facts_survive_a_rule_defined_after_them_and_give_no_derivative():
    key = object()
    try:
        registry.declare(key, pure=True, alias=Alias.VIEW)
        assert facts(key).pure is True and lookup(key) is None      # facts only: no derivative
        registry.defrule(key, "x", "g", "x_dot")
        assert lookup(key) is not None and facts(key).pure is True and facts(key).alias is Alias.VIEW
    finally:
        registry._TABLE.pop(key, None)
        registry._FACTS_ONLY.pop(key, None)
    with pytest.raises(ValueError, match="unknown operation facts"):
        registry.declare(np.sin, viewish=True)


def test_an_in_place_function_has_facts_but_no_derivative():
    assert facts(np.put).inplace and lookup(np.put) is None


# ---- (b) deny by default -----------------------------------------------------------------------
def unknown_method(x):
    return np.sum(x.foo(2))


def unknown_attribute(x):
    return np.sum(x.mT + x)


def unregistered_c_function(x):
    return np.sum(np.frexp(x)[1] * x + np.frexp(x)[0])


def unregistered_builtin(x):
    return divmod(x[0], 0.25)[1]


def unregistered_operator(x):
    m = x > 0
    return np.sum(np.where(m | (x > 1.0), x, 0.0) + np.bitwise_or(x.view(np.int64), 1).view(np.float64))


def no_rule_numpy(x):
    return np.sum(np.ediff1d(x ** 2))


DENIED = [(unknown_method, "x.foo"), (unknown_attribute, "x.mT"), (unregistered_c_function, "np.frexp"),
          (unregistered_builtin, "divmod"), (unregistered_operator, "x.view"), (no_rule_numpy, "np.ediff1d")]


@pytest.mark.parametrize("f, construct", DENIED, ids=lambda v: getattr(v, "__name__", str(v)))
@pytest.mark.parametrize("how", ["grad", "jvp", "hessian"])
def test_an_operation_with_no_entry_is_a_missing_rule_error_at_the_user_line(f, construct, how):
    with pytest.raises(srcad.MissingRuleError) as err:
        if how == "grad":
            srcad.grad(f)(X)
        elif how == "jvp":
            srcad.jvp(f, (X,), (np.ones_like(X),))
        else:
            srcad.hessian(f)(X)
    msg = str(err.value)
    assert construct in msg, msg
    assert f"test_registry_facts.py:{f.__code__.co_firstlineno + 1 + (f is unregistered_operator)}:" in msg, msg


def test_a_declared_non_differentiable_result_is_a_constant_not_a_refusal():
    def f(x):
        return np.sum(np.floor(x) * x) + np.sum(np.argsort(x) * x) + np.sum((x // 0.5) * x)
    got = srcad.grad(f)(X)
    want = np.floor(X) + np.argsort(X) + X // 0.5        # analytic: the declared parts are constants
    np.testing.assert_allclose(got, want)
