"""The systematic test: every rule of the registry, in both modes and to second order.

In the spirit of HIPS autograd's `test_systematic` and JAX's `lax_autodiff_test`, generated from
the rule table rather than written per rule. The cases are those of the rule sweep
(tests/test_rules_sweep.py's `CASES`), of every tests/sweep_cases_*.py (`CASES`, same `Case`
machinery) and of tests/systematic_cases.py (sparse arguments, programs that reach the rules of
srcad's runtime helpers). Each case is a small user function ending in `np.sum(op(...) * w)`, w
a fixed random weight, so every output entry of `op` gets its own cotangent.

For every case, computed once (`check_case`):
  - reverse mode (`srcad.vjp`'s adjoint of every differentiable argument) against central
    differences (float64), with the shape and type of each argument;
  - forward mode (`srcad.jvp`, generated tangent code, all differentiable arguments moving at
    once) against the same differences;
  - reverse against forward: u * (J v) == (J^T u) . v with `srcad.vjp`'s pullback;
  - second order for each `wrt`: `srcad.hvp` against central differences of the gradient along
    v, backed by v.Hv against second differences of f itself (independent of srcad); with two
    `wrt` arguments, the mixed second derivatives too (the adjoint of one in forward mode along
    the other);
    `srcad.hessian` (small arguments) against H v and symmetry; and forward mode over the
    generated tangent code (w.Hv), which reaches the rules of the forward-mode helpers;
  - the same gradient and tangent from float32 inputs: float32 results close to the float64
    references.
Second order that srcad does not do yet is listed in SECOND_ORDER_GAPS: those cases must raise
MissingRuleError there (a named refusal, never a number), and fail once the gap closes.
Broadcasting and keyword forms are cases of their own in the tables (shape pairs, axis=,
keepdims=, positional and keyword axes); tie and kink points are checked by hand in
tests/test_rules_sweep.py (`test_tie_split`).

Coverage (`test_every_rule_has_a_case`): the test enumerates the registry and fails for any rule
with no case. Which rules a case exercises is recorded, not listed by hand: every case's function
is transformed (reverse, forward, and forward over its generated adjoint, the way hessian/hvp
run) inside `registry.recording()`, which collects the key of every rule looked up. Rules
declared non-differentiable are walked by tests/test_rules_coverage.py instead (their outputs
must be piecewise constant); a rule of a runtime helper that no generated code calls (neither
the transformer nor another rule's template names it) cannot be reached by any program and is
not required.

That the harness bites is tested too (`test_wrong_rule_is_caught`): a deliberately wrong rule,
swapped into the table for one test, makes `check_case` fail in the mode it breaks.
"""
import ast
import glob
import inspect
import importlib
import os
import re
import zlib

import numpy as np
import pytest
import scipy.sparse as sp

import srcad
import srcad.transform
import test_rules_sweep
from fdcheck import grad_values, numerical_grad
from srcad import api
from srcad.rules import registry
from srcad.rules.listing import key_name
from srcad.tree import is_node, tree_flatten, tree_leaves, tree_map, tree_unflatten
from srcad.transform.pipeline import derivative
from systematic_cases import ForwardOnly, ReverseOnly, S
from test_rules_sweep import Case

HERE = os.path.dirname(os.path.abspath(__file__))


# =============================================================================================
# The cases
# =============================================================================================

def _load_cases():
    """(group, case) for every case: the sweep's tables, tests/sweep_cases_*.py, systematic_cases."""
    out = [("sweep", c) for c in test_rules_sweep.CASES]
    names = sorted(os.path.splitext(os.path.basename(p))[0]
                   for p in glob.glob(os.path.join(HERE, "sweep_cases_*.py")))
    for name in names + ["systematic_cases"]:
        mod = importlib.import_module(name)
        group = name[len("sweep_cases_"):] if name.startswith("sweep_cases_") else "systematic"
        out += [(group, c) for c in mod.CASES]
    return out


ALL_CASES = _load_cases()


def build(case, dtype=np.float64):
    """The case's arguments (test_rules_sweep.build_args), with the sparse ones (`S`) drawn here."""
    rng = np.random.default_rng(zlib.crc32(("sparse:" + case.name).encode()))
    sparse = {k: s.draw(rng, dtype) for k, s in enumerate(case.specs) if hasattr(s, "draw")}
    f = case.f
    if sparse:
        def f(*a):      # build_args calls f once to find the weight's shape: sparse arguments in place
            return case.f(*[sparse.get(k, v) for k, v in enumerate(a)])
    plain = Case(case.name, f, tuple(None if hasattr(s, "draw") else s for s in case.specs), case.wrt)
    args = test_rules_sweep.build_args(plain, dtype)
    for k, v in sparse.items():
        args[k] = v
    if case.name == "prod-with-a-zero":     # as in the sweep: one entry exactly zero
        args[0][0, 1] = 0.0
    return args


def _differentiable(a):
    return api._differentiable_arg(a)


def _random_like(a, rng):
    """A random direction shaped like argument a (a sparse one: its pattern; a pytree: its leaves)."""
    if is_node(a):
        return tree_map(lambda leaf: _random_like(leaf, rng), a)
    if sp.issparse(a):
        d = a.copy().astype(np.float64)
        d.data = rng.normal(size=a.data.shape)
        return d
    if isinstance(a, float):
        return float(rng.normal())
    return rng.normal(size=np.shape(a))


def _zero_like(a):
    if is_node(a):
        return tree_map(_zero_like, a)
    if sp.issparse(a):
        d = a.copy().astype(np.float64)
        d.data = np.zeros_like(d.data)
        return d
    return 0.0 if isinstance(a, float) else np.zeros(np.shape(a))


def _vals(a):
    if is_node(a):
        return np.concatenate([_vals(leaf) for leaf in tree_leaves(a)])
    return grad_values(a)


def _fd_grad(f, args, k):
    """Central differences w.r.t. args[k] (a pytree: every leaf, in tree_leaves order)."""
    if not is_node(args[k]):
        return numerical_grad(f, args, k)
    leaves, treedef = tree_flatten(args[k])

    def of_leaf(j):
        def g(leaf, *rest):
            a = list(rest)
            a[k] = tree_unflatten(treedef, leaves[:j] + [leaf] + leaves[j + 1:])
            return f(*a)
        return numerical_grad(g, [leaves[j]] + list(args), 0)
    return np.concatenate([of_leaf(j) for j in range(len(leaves))])


def _cast(a, dtype):
    if is_node(a):
        return tree_map(lambda leaf: _cast(leaf, dtype), a)
    if sp.issparse(a):
        return a.astype(dtype)
    return a.astype(dtype) if isinstance(a, np.ndarray) and np.issubdtype(a.dtype, np.floating) else a


def _shifted(args, k, v, eps):
    a = list(args)
    x = a[k]
    if is_node(x):
        a[k] = tree_map(lambda leaf, d: _shifted([leaf], 0, d, eps)[0], x, v)
    elif sp.issparse(x):
        y = x.copy()
        y.data = x.data + eps * v.data
        a[k] = y
    elif isinstance(x, float):
        a[k] = x + eps * v
    else:
        a[k] = x + eps * v
    return a


def _close(have, want, what, rtol=1e-5, atol=1e-6, scale=None):
    have = np.asarray(have, dtype=np.float64).ravel()
    want = np.asarray(want, dtype=np.float64).ravel()
    scale = max(1.0, float(np.max(np.abs(want), initial=0.0))) if scale is None else scale
    assert have.shape == want.shape, f"{what}: {have.size} values, expected {want.size}"
    if not np.allclose(have, want, rtol=rtol, atol=atol * scale):
        raise AssertionError(f"{what}:\n  srcad     {have}\n  reference {want}")


def _check_like(g, arg, dtype, what):
    if is_node(arg):
        assert type(g) is type(arg), f"{what}: gradient of a {type(arg).__name__} is a {type(g).__name__}"
        for gl, al in zip(tree_leaves(g), tree_leaves(arg)):
            _check_like(gl, al, dtype, what)
    elif sp.issparse(arg):
        assert sp.issparse(g) and type(g) is type(arg), f"{what}: gradient of a sparse argument is {type(g)}"
        assert g.nnz == arg.nnz, f"{what}: gradient has {g.nnz} stored entries, argument {arg.nnz}"
    elif isinstance(arg, np.ndarray):
        assert isinstance(g, np.ndarray) and g.shape == arg.shape, (
            f"{what}: gradient {type(g).__name__} {np.shape(g)}, argument shape {arg.shape}")
        assert g.dtype == dtype, f"{what}: gradient dtype {g.dtype}, argument dtype {np.dtype(dtype)}"
    elif isinstance(arg, float):
        assert isinstance(g, float), f"{what}: gradient of a Python float is {type(g).__name__}"


# =============================================================================================
# The check: every mode of one case, each derivative computed once
# =============================================================================================

HESSIAN_MAX = 12        # srcad.hessian for arguments of at most this many entries

# Cases whose second order srcad does not do yet and refuses with MissingRuleError (checked: a
# wrong number or another error fails the case, and so does the gap closing: remove it here then).
SECOND_ORDER_GAPS = {}


def check_case(case):
    f = case.f
    args = build(case)
    wrt = tuple(case.wrt)
    rng = np.random.default_rng(zlib.crc32(case.name.encode()) + 7)
    fd = {k: _fd_grad(f, args, k) for k in wrt}
    scale = max([1.0] + [float(np.max(np.abs(g), initial=0.0)) for g in fd.values()])

    if isinstance(case, ForwardOnly):
        return check_forward_only(case, f, args, wrt, rng, fd, scale)

    # reverse mode against central differences (srcad.vjp: the adjoint of every differentiable
    # argument, one module shared by every reverse-mode check of the case)
    grads = reverse_grads(f, args, wrt)
    assert isinstance(grads, tuple) and len(grads) == len(wrt)
    for k, g in zip(wrt, grads):
        _check_like(g, args[k], np.float64, f"reverse mode, argument {k}")
        _close(_vals(g), fd[k], f"reverse mode (srcad.grad) vs central differences, argument {k}", scale=scale)
    if isinstance(case, ReverseOnly):
        for j, k in enumerate(wrt):     # forward over reverse: hvp against differences of the gradient
            d = _random_like(args[k], rng)
            hv = srcad.hvp(f, wrt=k)(*args, d)
            gp = reverse_grads(f, _shifted(args, k, d, 1e-5), wrt)[j]
            gm = reverse_grads(f, _shifted(args, k, d, -1e-5), wrt)[j]
            want_hv = (_vals(gp) - _vals(gm)) / 2e-5
            _close(_vals(hv), want_hv, f"second order (srcad.hvp) vs differences of the gradient, argument {k}",
                   scale=max(1.0, float(np.max(np.abs(want_hv), initial=0.0))))
        return

    # forward mode against central differences: every differentiable argument moves at once
    diff = [k for k, a in enumerate(args) if _differentiable(a)]
    v = {k: _random_like(args[k], rng) for k in diff}
    tangents = [v[k] if k in wrt else (_zero_like(a) if k in diff else None) for k, a in enumerate(args)]
    y, y_dot = srcad.jvp(f, args, tangents)
    _close(y, f(*args), "forward mode: the primal value", rtol=1e-12, atol=1e-12)
    want_dot = sum(float(fd[k] @ _vals(v[k])) for k in wrt)
    _close(y_dot, want_dot, "forward mode (srcad.jvp) vs central differences", scale=scale * len(wrt))

    # reverse against forward: u (J v) == (J^T u) . v
    u = float(rng.normal())
    _, pullback = srcad.vjp(f, *args)
    cts = pullback(u)
    back = sum(float(_vals(cts[k]) @ _vals(v[k])) for k in wrt)
    _close(u * float(y_dot), back, "u * (J v) [srcad.jvp] vs (J^T u) . v [srcad.vjp]", rtol=1e-9, atol=1e-12)

    if case.name in SECOND_ORDER_GAPS:
        # a known gap: srcad must refuse by name (never a wrong number), until the gap is closed
        for k in wrt:
            with pytest.raises(srcad.MissingRuleError):
                srcad.hvp(f, wrt=k)(*args, v[k])
        check_float32(case, f, wrt, tangents, fd, want_dot, scale)
        return

    # second order: hvp against differences of the gradient, v.Hv against second differences of f
    for j, k in enumerate(wrt):
        hv = srcad.hvp(f, wrt=k)(*args, v[k])
        eps = 1e-5
        gp = reverse_grads(f, _shifted(args, k, v[k], eps), wrt)[j]
        gm = reverse_grads(f, _shifted(args, k, v[k], -eps), wrt)[j]
        want_hv = (_vals(gp) - _vals(gm)) / (2 * eps)
        hscale = max(1.0, float(np.max(np.abs(want_hv), initial=0.0)))
        _close(_vals(hv), want_hv, f"second order (srcad.hvp) vs differences of the gradient, argument {k}",
               scale=hscale)
        f0 = float(f(*args))
        _close(float(_vals(hv) @ _vals(v[k])), second_difference(f, args, k, v[k]),
               f"second order: v.Hv vs second differences of f, argument {k}", rtol=1e-4, atol=1e-5,
               scale=max(1.0, abs(f0) * 1e2, hscale))
        # forward over forward: the tangent code transformed again gives w.Hv. No user-facing
        # operator runs it, so a named refusal (a forward helper without rules) is allowed here;
        # a wrong value is not
        w = _random_like(args[k], rng)
        try:
            wHv = tangent_of_tangent(f, args, k, v[k], w)
        except (srcad.MissingRuleError, srcad.UnsupportedSyntaxError):
            wHv = None
        if wHv is not None:
            _close(wHv, float(want_hv @ _vals(w)),
                   f"second order: forward over forward (w.Hv) vs differences of the gradient, argument {k}",
                   scale=hscale * np.sqrt(np.size(want_hv)))
        # mixed second derivatives: the adjoint w.r.t. argument k, in forward mode along argument j
        for i, j in enumerate(wrt):
            if j != k:
                gj_p = reverse_grads(f, _shifted(args, j, v[j], eps), wrt)[j_pos := wrt.index(k)]
                gj_m = reverse_grads(f, _shifted(args, j, v[j], -eps), wrt)[j_pos]
                want = (_vals(gj_p) - _vals(gj_m)) / (2 * eps)
                _close(_vals(mixed_second_order(f, args, k, j, v[j])), want,
                       f"second order: mixed derivative (the adjoint of argument {k} along argument {j}) vs "
                       f"differences of the gradient", scale=max(1.0, float(np.max(np.abs(want), initial=0.0))))
        x = args[k]
        if isinstance(x, (np.ndarray, float)) and np.size(x) <= HESSIAN_MAX:
            H = srcad.hessian(f, wrt=k)(*args)
            n = int(np.size(x))
            assert np.shape(H) == np.shape(x) + np.shape(x), f"hessian shape {np.shape(H)}"
            Hm = np.reshape(H, (n, n))
            _close(Hm @ _vals(v[k]), want_hv, f"srcad.hessian @ v vs differences of the gradient, argument {k}",
                   scale=hscale)
            _close(Hm, Hm.T, f"srcad.hessian is symmetric, argument {k}", rtol=1e-7, atol=1e-9, scale=hscale)

    check_float32(case, f, wrt, tangents, fd, want_dot, scale)


def check_float32(case, f, wrt, tangents, fd, want_dot, scale):
    """The same derivatives from float32 inputs: float32 results near the float64 references."""
    args32 = [_cast(a, np.float32) for a in build(case, np.float32)]
    grads32 = reverse_grads(f, args32, wrt)
    for k, g in zip(wrt, grads32):
        _check_like(g, args32[k], np.float32, f"float32 reverse mode, argument {k}")
        _close(_vals(g), fd[k], f"float32 reverse mode vs float64 differences, argument {k}",
               rtol=2e-3, atol=2e-4, scale=scale)
    tangents32 = [_cast(t, np.float32) if t is not None and not isinstance(t, float) else t for t in tangents]
    _, y_dot32 = srcad.jvp(f, args32, tangents32)
    _close(y_dot32, want_dot, "float32 forward mode vs float64 differences", rtol=2e-3, atol=2e-4,
           scale=scale * len(wrt))


def second_difference(f, args, k, v):
    """v.Hv from values of f alone: second central differences along v, Richardson-extrapolated
    from steps 2h and h (error O(h^4))."""
    def d2(h):
        fp, f0, fm = (float(f(*_shifted(args, k, v, s))) for s in (h, 0.0, -h))
        return (fp - 2 * f0 + fm) / h ** 2
    return (4 * d2(1e-3) - d2(2e-3)) / 3


def mixed_second_order(f, args, k, j, vj):
    """d/dt grad_k f(args with argument j moved by t vj): forward mode over the adjoint of argument
    k, w.r.t. argument j (what hvp does for j == k)."""
    adjoint = api._vjp_function(f, k)
    mod = api._module(adjoint, "forward", j)
    name = api._params(f)[j]
    return api._call_jvp(getattr(mod, mod.srcad_main), tuple(args), {name + "_dot": vj})[1]


def _diff_indices(args):
    return tuple(j for j, a in enumerate(args) if _differentiable(a))


def _tangent_function(f, args):
    """The generated tangent code srcad.jvp runs for these arguments, as a function."""
    mod = api._module(f, "forward", _diff_indices(args))
    return getattr(mod, mod.srcad_main)


def tangent_of_tangent(f, args, k, v, w):
    """w.H v from forward mode (w.r.t. argument k) applied to f's generated tangent code (the one
    srcad.jvp runs: every differentiable argument has a tangent; v for argument k, zeros else)."""
    jfn = _tangent_function(f, args)
    mod = api._module(jfn, "forward", k)
    fn = getattr(mod, mod.srcad_main)
    dots = [v if j == k else _zero_like(args[j]) for j in _diff_indices(args)]
    values = list(args) + dots + [w]
    _, (_, d2) = fn(**{p: val for p, val in zip(inspect.signature(fn).parameters, values)})
    return float(d2)


def reverse_grads(f, args, wrt):
    """The cotangents of args[k], k in wrt, for the output cotangent 1.0 (srcad.vjp)."""
    cts = srcad.vjp(f, *args)[1](1.0)
    return tuple(cts[k] for k in wrt)


def check_forward_only(case, f, args, wrt, rng, fd, scale):
    """A helper with tangent rules only: forward mode against central differences, and forward
    over forward (w.Hv) against second differences of f."""
    diff = [k for k, a in enumerate(args) if _differentiable(a)]
    for k in wrt:
        v = _random_like(args[k], rng)
        tangents = [v if j == k else (_zero_like(a) if j in diff else None) for j, a in enumerate(args)]
        _, y_dot = srcad.jvp(f, args, tangents)
        _close(y_dot, float(fd[k] @ _vals(v)), f"forward mode (srcad.jvp) vs central differences, argument {k}",
               scale=scale)
        w = _random_like(args[k], rng)
        h = 1e-4
        second = [float(f(*_shifted(_shifted(args, k, v, a * h), k, w, b * h))) for a, b in
                  ((1, 1), (1, -1), (-1, 1), (-1, -1))]
        want = (second[0] - second[1] - second[2] + second[3]) / (4 * h * h)
        _close(tangent_of_tangent(f, args, k, v, w), want,
               f"second order: forward over forward (w.Hv) vs second differences of f, argument {k}",
               rtol=1e-4, atol=1e-5, scale=scale)


PARAMS = [pytest.param(c, id=f"{group}-{c.name}") for group, c in ALL_CASES]


COVERED = {}    # case name -> the keys of the rules its check looked up (filled by test_case)


@pytest.fixture(scope="module", autouse=True)
def fresh_generation():
    """Code generated by earlier test modules is not reused here, so every rule a case reaches is
    looked up (and recorded) while its check runs."""
    registry.generation[0] += 1
    yield


@pytest.mark.parametrize("case", PARAMS)
def test_case(case):
    with registry.recording() as seen:
        try:
            check_case(case)
        finally:
            COVERED[case.name] = seen


# =============================================================================================
# Coverage: every rule of the registry has a case
# =============================================================================================

def rules_exercised(cases):
    """The keys of the built-in rules the cases' transformations look up: reverse mode, forward
    mode, forward mode over the generated adjoint (what hessian/hvp run) and over the generated
    tangent code."""
    done = set()
    with registry.recording() as seen:
        for case in cases:
            wrt = tuple(case.wrt)
            if (case.f, wrt) in done:
                continue
            done.add((case.f, wrt))
            steps = [lambda: derivative(case.f, "reverse", wrt), lambda: derivative(case.f, "forward", wrt)]
            for k in wrt:
                steps += [lambda k=k, j=j: derivative(api._vjp_function(case.f, k), "forward", j) for j in wrt]
                steps.append(lambda k=k: derivative(_tangent_function(case.f, build(case)), "forward", k))
            for step in steps:
                try:    # a case that srcad cannot transform fails in test_case, with its reason
                    step()
                except srcad.SrcadError:
                    pass
    return seen


def _helpers_named(tree):
    """The srcad runtime helpers an expression template names (rt.x, rt.sparse.x, ...)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            try:
                obj = eval(compile(ast.Expression(node), "<template>", "eval"), {"rt": srcad.runtime})
            except Exception:
                continue
            if callable(obj):
                out.add(obj)
    return out


def generated_code_helpers(table=None):
    """The runtime helpers generated code can call: those the transformer emits itself, and those
    another rule's template names (a rule naming only its own helper does not make it reachable)."""
    table = registry._TABLE if table is None else table
    out = set()
    for path in glob.glob(os.path.join(os.path.dirname(srcad.transform.__file__), "*.py")):
        for name in re.findall(r'\brt\("(\w+)"', open(path).read()):
            out.add(getattr(srcad.runtime, name))
    for key, rule in table.items():
        templates = list(rule.vjp.values()) + list(rule.jvp.values()) + [rule.primal, rule.accumulate]
        for t in templates:
            if t is not None:
                out |= {h for h in _helpers_named(t) if h is not key}
    return out


def _is_helper(key):
    return (getattr(key, "__module__", "") or "").startswith("srcad.runtime")


def rules_without_case(seen, table=None):
    """The rules of the table (names as `srcad rules` prints them) whose key is not in `seen`.

    Not required: rules with no template (an active use raises MissingRuleError: nothing to
    check), and rules of runtime helpers that no generated code calls (no program reaches them;
    a helper that dispatches to another calls it as plain Python)."""
    table = registry._TABLE if table is None else table
    reachable = generated_code_helpers(table)
    return sorted(key_name(k) for k, rule in table.items()
                  if not rule.nondiff and (rule.vjp or rule.jvp) and k not in seen
                  and not (_is_helper(k) and k not in reachable))


def test_every_rule_has_a_case():
    cases = [c for _, c in ALL_CASES]
    seen = set().union(*(COVERED[c.name] for c in cases if c.name in COVERED))
    # cases whose check did not run in this session (test selection): transform them here
    seen |= rules_exercised([c for c in cases if c.name not in COVERED])
    missing = rules_without_case(seen)
    assert not missing, (
        f"{len(missing)} rules of srcad/rules/ have no case in the systematic test (add one to "
        f"tests/sweep_cases_*.py, or tests/systematic_cases.py for sparse, pytree and runtime-helper "
        f"cases):\n  " + "\n  ".join(missing))


def test_coverage_sees_a_new_rule():
    """A rule added to the table without a case is reported; one that a case reaches is not."""
    def brand_new(x):
        return x * 2.0

    table = dict(registry._TABLE)
    registry.defrule(brand_new, "x", "2.0 * g", "2.0 * x_dot")
    try:
        table[brand_new] = registry._TABLE.pop(brand_new)
    finally:
        registry._TABLE.pop(brand_new, None)
    seen = rules_exercised([_case("sin-2x3")])
    missing = rules_without_case(seen, table)
    assert key_name(brand_new) in missing
    assert key_name(np.sin) not in missing and key_name(np.cos) not in missing    # cos: in sin's Hessian


# =============================================================================================
# The harness bites: a wrong rule fails it
# =============================================================================================

def _case(name):
    return next(c for _, c in ALL_CASES if c.name == name)


WRONG = [
    # (case, rule key, params, wrong vjp, wrong jvp, the mode that must fail)
    ("sin-2x3", np.sin, "x", "g * np.cos(x) * 1.001", "x_dot * np.cos(x)", "reverse mode"),
    ("sin-2x3", np.sin, "x", "g * np.cos(x)", "x_dot * np.sin(x)", "forward mode"),
    ("exp-3", np.exp, "x", "g * np.exp(x)", "x_dot * np.exp(x)", None),   # right: must pass
]


@pytest.mark.parametrize("name, key, params, vjp, jvp, fails", WRONG,
                         ids=[f"{w[0]}-{w[5] or 'correct'}" for w in WRONG])
def test_wrong_rule_is_caught(name, key, params, vjp, jvp, fails, monkeypatch):
    saved = registry._TABLE[key]
    registry.defrule(key, params, vjp, jvp)
    registry.generation[0] += 1       # code generated with the right rule is not reused
    try:
        if fails is None:
            check_case(_case(name))
        else:
            with pytest.raises(AssertionError, match=fails):
                check_case(_case(name))
    finally:
        registry._TABLE[key] = saved
        registry.generation[0] += 1


def test_wrong_second_order_rule_is_caught():
    """A runtime helper's rule (used only by hessian/hvp over generated code) that is wrong."""
    key = srcad.runtime.log_or_zero
    saved = registry._TABLE[key]
    registry.defrule(key, "x", None, "x_dot / np.where(x == 0, 1.0, 2.0 * x)")
    registry.generation[0] += 1
    try:
        with pytest.raises(AssertionError, match="second order"):
            check_case(_case("pow-3-3"))
    finally:
        registry._TABLE[key] = saved
        registry.generation[0] += 1
