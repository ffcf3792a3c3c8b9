"""Every error path srcad has, rendered once, and checked for the three parts of its message:

    file.py:line:col: the construct ...; the fix.

The place must be the user's file and line (never a generated cache file, never `<unknown>:0:0`),
the message must name the construct, and it must end with a sentence that says what to do.

The error paths are found by reading srcad's source: every `raise` of a srcad error (or of a
helper that builds one) and every `self.fail(...)` of the frontend. Each case below reaches one of
them; which one is read from the traceback, so the last test knows which paths no case reaches
and fails with their list (add a case for a new error path, in tests/error_paths_cases.py).
"""
import ast
import importlib
import inspect
import os
import re
import subprocess
import sys
import textwrap
import traceback
from dataclasses import dataclass

import numpy as np
import pytest
import scipy.linalg
import scipy.stats
import scipy.sparse as sp

import srcad
import srcad.distributed
import error_paths_cases as c

HERE = os.path.dirname(os.path.abspath(__file__))
# the srcad under test (an installed one in CI, where the repo's unbuilt tree is not imported)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(srcad.__file__)))
CASES_FILE = os.path.abspath(c.__file__)
THIS_FILE = os.path.abspath(__file__)
_ERRORS = {"SrcadError", "UnsupportedSyntaxError", "MissingRuleError", "NonScalarOutputError",
           "GradientCheckError", "NumericsError", "InputError", "StaleSourceError", "RuleError",
           "_missing", "sparse_format_error", "_bounds_error"}


# --- the error paths, read from srcad's source --------------------------------------------------

@dataclass(frozen=True)
class Site:
    path: str
    func: str
    first: int
    last: int
    text: str

    @property
    def key(self):
        return f"{self.path}:{self.func}:{self.text[:40]}"


def _literal(call):
    for a in list(call.args) + [k.value for k in call.keywords]:
        if isinstance(a, ast.Constant) and isinstance(a.value, str):
            return a.value
        if isinstance(a, ast.JoinedStr):
            return next((v.value for v in a.values if isinstance(v, ast.Constant) and v.value.strip()), "")
    return ""


def _sites():
    out = []

    class V(ast.NodeVisitor):
        def __init__(self, path):
            self.path, self.func = path, "<module>"

        def visit_FunctionDef(self, node):
            outer, self.func = self.func, node.name
            self.generic_visit(node)
            self.func = outer

        def _add(self, node, call):
            name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
            if name in _ERRORS or name == "fail" and isinstance(call.func, ast.Attribute) and \
                    isinstance(call.func.value, ast.Name) and call.func.value.id == "self":
                out.append(Site(self.path, self.func, node.lineno, node.end_lineno, _literal(call)))

        def visit_Raise(self, node):
            if isinstance(node.exc, ast.Call):
                self._add(node, node.exc)
            self.generic_visit(node)

        def visit_Call(self, node):
            if isinstance(node.func, ast.Attribute) and node.func.attr == "fail":
                self._add(node, node)
            self.generic_visit(node)

    for dirpath, _, files in os.walk(os.path.join(ROOT, "srcad")):
        for f in sorted(files):
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                with open(path) as fh:
                    V(os.path.relpath(path, ROOT)).visit(ast.parse(fh.read()))
    return out


SITES = _sites()

# paths no case below reaches, each with the reason (keys as Site.key)
NOT_RENDERED = {
    "srcad/runtime/broadcasting.py:_refuse_complex:a cast to the complex dtype ": (
        "raised by generated code at run time (mapped to the user's line): "
        "tests/test_deny_by_default.py::test_a_cast_to_complex_is_refused checks its message"),
    # composition: options of the operator composed (no line of the user's code is at fault), and safety nets
    "srcad/sparsity.py:sparse_jacobian:srcad.jacobian(..., sparsity='auto'): the ": (
        "a safety net: both detections missing an entry is a bug of srcad's; "
        "tests/test_sparsity_tracer.py::test_a_pattern_no_detection_gets_right_is_refused checks it"),
    "srcad/composition.py:_gradient_parts:": "row_sparse=True composed: an option, not a line (test_composition)",
    "srcad/composition.py:_hvp_parts:": "hvp composed for an f with a parameter named v: an option, not a line",
    "srcad/composition.py:_jacobian_parts:": "sparsity='auto' composed: an option, not a line (test_composition)",
    "srcad/composition.py:_params:": "unreachable: *args is refused when the function is first transformed",
    "srcad/composition.py:_parts:": "unreachable: every operator that marks its result is handled",
    "srcad/composition.py:_single:": "unreachable: the operator checked wrt when it was made",
    "srcad/composition.py:_jvp_parts:": "srcad.jvp inside f with more primals than f has positional parameters: "
                                        "tests/test_trust_inline_operators.py",
    "srcad/frontend/normalize/calls.py:call:the derivative of the tangent code of `": (
        "reached only by transforming generated tangent code again (forward over forward, which no public "
        "operator runs): tests/test_systematic.py's custom_jvp_checked case"),
    "srcad/runtime/compose.py:_plain_value:": "a pytree through a composed jacobian: found at run time, no line",
    "srcad/sparse/__init__.py:accumulate:srcad.accumulate(acc, g): g is a srcad.R": (
        "a library call on gradients, not user code: tests/test_safety.py::"
        "test_accumulate_rowsparse_rows_out_of_range checks its message"),
    "srcad/frontend/inplace.py:fail:": "inplace's one raise; every inplace case goes through it",
    # the helpers every frontend error goes through: reached by every frontend case
    "srcad/frontend/fence.py:fail:": "the fence's one raise; every fence case goes through it",
    "srcad/frontend/normalize/driver.py:fail:": "normalize's one raise; every normalize case goes through it",
    "srcad/transform/forward.py:fail:forward": "forward's one raise; the forward cases go through it",
    "srcad/frontend/fence.py:generic_visit:async comprehensions": (
        "unreachable: Python rejects an async comprehension outside an async function, and async "
        "functions are rejected before (parse.py)"),
    "srcad/frontend/normalize/statements.py:s_AugAssign:augmented assignment to ": (
        "unreachable: Python allows `+=` only on names, subscripts and attributes; attributes are fenced"),
    "srcad/frontend/normalize/expressions.py:flat:the expression ": (
        "unreachable: every expression kind is normalized or fenced before (a safety net)"),
    "srcad/frontend/normalize/statements.py:stmt:the statement ": (
        "unreachable: every statement kind is normalized or fenced before (a safety net)"),
    "srcad/frontend/classify.py:_call:the name `": (
        "unreachable from user code: normalize reports an undefined name first (a safety net)"),
    "srcad/frontend/parse.py:parse_function: as a function definition (lambdas cannot be trans": (
        "unreachable: inspect gives the source of a def or a lambda, and lambdas are handled before"),
    "srcad/frontend/parse.py:parse_function:a function whose source cannot be parsed on its ow": (
        "reached only by source inspect cannot cut out on its own; no such function is known"),
    "srcad/frontend/normalize/statements.py:bind:starred unpacking": "unreachable: the fence rejects starred targets first",
    "srcad/runtime/indexing.py:_field_index:: srcad cannot differentiate `.": (
        "unreachable from user code: an attribute that is not a namedtuple field fails in Python first"),
    "srcad/frontend/parse.py:lambda_def:a lambda whose source srcad cannot find": (
        "reached only by lambdas whose source lines are not the code that runs"),
    "srcad/frontend/parse.py:lambda_def: lambdas with the same arguments on one line, whic": (
        "reached only on Pythons without column positions (python -X no_debug_ranges)"),
    "srcad/distributed/_driver.py:_dask:srcad.distributed needs Dask's distributed schedul": (
        "reached only where Dask is not installed"),
    "srcad/runtime/sparse/pattern.py:check_pattern:srcad: a sparse operand": (
        "reached only by srcad's own sparse helpers handed a format the operators' checks reject first"),
    "srcad/_kernels/args.py:_floats:": "not rendered here yet: the kernels' dtype check (input checks run first)",
    "srcad/_kernels/args.py:_ints:": "not rendered here yet: the kernels' index dtype check",
    # paths that landed from other lanes at the end of the session, not rendered here yet
    "srcad/inputs.py:cache_variant:checkpoint must be None": "not rendered here yet (checkpointing landed last)",
    "srcad/api/emitting.py:emit:checkpoint=k applies to reverse": "not rendered here yet (checkpointing landed last)",
    "srcad/transform/checkpoint.py:check_loop:checkpointing ": "not rendered here yet (checkpointing landed last)",
    "srcad/runtime/linalg/norms.py:_norm_weights:np.linalg.norm with ord=": "not rendered here yet (norm rules changed last)",
    "srcad/runtime/linalg/norms.py:norm_vjp_dot:second order of np.linalg.norm": "not rendered here yet (norm rules changed last)",
    "srcad/frontend/aliases/": "not rendered here yet (the aliasing analysis landed last)",
    "srcad/frontend/analyze.py:_check_shared_writes:": "not rendered here yet (the aliasing analysis landed last)",
    "srcad/distributed/_driver.py:vg:shard ": "needs a Dask cluster (tests/test_distributed.py)",
}


# --- the cases ----------------------------------------------------------------------------------

X = np.array([0.3, 0.5, 0.7, 0.2])
A = np.array([[2.0, 0.5, 0.1], [0.3, 1.5, 0.2], [0.1, 0.4, 1.8]])


def grad_of(f, *args, **kw):
    return lambda: srcad.grad(f, **kw)(*args)


@dataclass
class Case:
    name: str
    run: object
    construct: str
    fix: str
    file: str = CASES_FILE        # the file the message must name
    marker: str = None            # text on the line it must name (default: the function's `# here` line)
    func: object = None


def _here_line(func):
    lines, start = inspect.getsourcelines(func)
    return start + next(k for k, line in enumerate(lines) if "# here" in line)


def fence_case(func, construct, fix):
    return Case(func.__name__, grad_of(func, X), construct, fix, func=func)


def user(func, construct, fix, *args, **kw):
    return Case(func.__name__, grad_of(func, *(args or (X,)), **kw), construct, fix, func=func)


def _jvp(func, *args):
    return lambda: srcad.jvp(func, args, tuple(np.ones_like(a) for a in args))


def _reverse_only(x):
    return x * 2.0


def _reverse_only_rule(x):
    return x * 2.0, lambda g: (2.0 * g,)


srcad.register_vjp(_reverse_only, _reverse_only_rule)


def uses_reverse_only(x):
    return np.sum(_reverse_only(x))  # here


def _wrong_sin(x):
    return np.sin(x)


# deliberately wrong (the derivative of sin is not 3): check_grad must catch it
wrong_sin = srcad.register_vjp(_wrong_sin, lambda x: (np.sin(x), lambda g: (g * 3.0,)))


def uses_wrong_sin(x):
    return np.sum(wrong_sin(x))


def uses_wrong_sin_tree(p):
    return np.sum(wrong_sin(p["w"]))


def vec_out(x):
    return x ** 2


# user rules that return the wrong thing (RuleError, srcad/custom.py)
def _bad(name, rule):
    f = lambda x: np.sin(x)      # noqa: E731
    f.__name__ = name
    srcad.register_vjp(f, rule)
    return f


_rule_bare = _bad("rule_bare", lambda x: (np.sin(x), lambda g: g * np.cos(x)))
_rule_count = _bad("rule_count", lambda x: (np.sin(x), lambda g: (g, g)))
_rule_shape = _bad("rule_shape", lambda x: (np.sin(x), lambda g: (g[:1],)))
_rule_dtype = _bad("rule_dtype", lambda x: (np.sin(x), lambda g: (np.array(["a"] * len(g)),)))
_rule_list = _bad("rule_list", lambda x: (np.sin(x), lambda g: ([g],)))
_rule_pair = _bad("rule_pair", lambda x: np.sin(x))
_rule_pullback = _bad("rule_pullback", lambda x: (np.sin(x), 3.0))
_rule_tangent = lambda x: np.sin(x)      # noqa: E731
srcad.register_jvp(_rule_tangent, lambda p, t: (np.sin(p[0]), np.sum(t[0])))


def read_before_merge(v):
    A = sp.csr_array((v, np.array([2, 0, 0, 1, 1]), np.array([0, 3, 5])), shape=(2, 3))
    d = A.data * 1.0  # here
    t = A.sum()
    return t + np.sum(d)


def cross_mixed(x):
    return np.sum(np.cross(x[:2], x[:3]))  # here


def here(func, construct, fix):
    """A case whose function is in this file: the message names its `# here` line."""
    return Case(func.__name__, grad_of(func, X), construct, fix, THIS_FILE, func=func)


def uses_rule_bare(x):
    return np.sum(_rule_bare(x))  # here


def uses_rule_count(x):
    return np.sum(_rule_count(x))  # here


def uses_rule_shape(x):
    return np.sum(_rule_shape(x))  # here


def uses_rule_dtype(x):
    return np.sum(_rule_dtype(x))  # here


def uses_rule_list(x):
    return np.sum(_rule_list(x))  # here


def uses_rule_pair(x):
    return np.sum(_rule_pair(x))  # here


def uses_rule_pullback(x):
    return np.sum(_rule_pullback(x))  # here


def uses_rule_tangent(x):
    return np.sum(_rule_tangent(x))  # here


def _linalg(f):
    return lambda: srcad.grad(f)(A)


def trans_two(A):
    return np.sum(scipy.linalg.solve_triangular(A, np.ones(3), trans=2))  # here


def svd_full(A):
    return np.sum(np.linalg.svd(A[:, :2])[1])  # here


def qr_complete(A):
    return np.sum(np.linalg.qr(A, mode="complete")[1])  # here


def lstsq_residuals(A):
    return np.sum(np.linalg.lstsq(A[:, :2], np.ones(3), rcond=None)[1])  # here


def pad_reflect(x):
    return np.sum(np.pad(x, 1, mode="reflect") ** 2)  # here


def linspace_step(x):
    return np.sum(np.linspace(x[0], x[1], 5, retstep=True)[1] * x)  # here


def eig_complex(x):
    return np.sum(np.linalg.eig(np.array([[x[0], -1.0], [1.0, x[1]]]))[0])  # here


def eig_repeated(x):
    return np.sum(np.linalg.eig(np.eye(2) * x[0])[1])  # here


def real_of_complex(x):
    return np.sum(np.real(x * 1j))  # here


def sqrtm_complex(x):
    return np.sum(scipy.linalg.sqrtm(np.diag([-1.0 - x[0], 1.0 + x[1]])))  # here


def dirichlet_batch(x):
    p = np.stack([x[:3] / np.sum(x[:3]), x[1:] / np.sum(x[1:])], axis=1)
    return np.sum(scipy.stats.dirichlet.logpdf(p, np.ones(3) * 2.0))  # here


def sparse_sum_axis(A, x):
    return np.sum(srcad.sparse.reduce_max(A, axis=2)) * np.sum(x)  # here


def sparse_times(A, x):
    return np.sum(A @ x)  # here


def sp_matvec(A, x):
    return np.sum(A @ x)  # here


def sp_matmat(A, B):
    return np.sum((A @ B).data)  # here


def sp_row_matvec(A, x):
    return np.sum(A[1] @ x)  # here


def sp_vstack_lil(A):
    return np.sum(sp.vstack([A, A], format="lil").data)  # here


def sp_diags_lil(x):
    return np.sum(sp.diags(x, format="lil").data)  # here


def sp_add_two(A, B):
    return np.sum((A + B).data)  # here


def sp_add_dense(A):
    return np.sum(srcad.sparse.add(A, np.ones((3, 3))).data)  # here


def sp_reduce_scaled(A, x):
    return np.sum(srcad.sparse.reduce_max(A, axis=1) * x)  # here


def sp_reduce_dense(A):
    return np.sum(srcad.sparse.reduce_max(A, axis=1))  # here


def sp_matrix_star(A, x):
    return np.sum(A * x)  # here


def _broken(kind):
    B = sp.csr_array(A)
    if kind == "coo":
        B = B.tocoo()
        B.row = B.row.copy()
        B.row[0] = 7
    elif kind == "indptr":
        B.indptr = B.indptr.copy()
        B.indptr[1] = 100
    return B


def _sparse(f, *args, wrt=0):
    return lambda: srcad.grad(f, wrt=wrt)(*args)


def _unsorted_coo():
    """A COO matrix with its entries out of order and a duplicate (A.sum() sorts it in place)."""
    return sp.coo_array((np.array([1.0, 2.0, 3.0]), (np.array([1, 0, 1]), np.array([0, 1, 0]))), shape=(2, 4))


def _stale_module(tmp_path):
    path = tmp_path / "stale_mod.py"
    path.write_text("import numpy as np\n\n\ndef f(x):\n    return np.sum(x ** 2)\n")
    sys.path.insert(0, str(tmp_path))
    try:
        mod = importlib.import_module("stale_mod")
    finally:
        sys.path.pop(0)
    path.write_text("import numpy as np\n\n\ndef f(x):\n    return np.sum(x ** 3)\n")
    import linecache
    linecache.checkcache(str(path))
    return mod.f, str(path)


def _exec_function():
    ns = {}
    exec("def made(x):\n    return x * 2\n", ns)
    return ns["made"]


class Holder:
    @classmethod
    def make(cls, x):
        return np.sum(x)


CASES = [
    # fence: one case per construct of its table, and its other checks
    fence_case(c.assign_attribute, "assignment to an attribute", "return the new value"),
    fence_case(c.nested_subscript_write, "nested subscript", "y[i, j] = v"),
    fence_case(c.star_params, "`*args`, `**kwargs` or positional-only", "name every parameter"),
    fence_case(c.uses_try, "`try` statements", "move the error handling"),
    fence_case(c.decorated_inner, "a nested function with decorators", "define the function at module level"),
    fence_case(c.deep_inner, "more than one level deep", "define the function at module level"),
    fence_case(c.for_else, "`for ... else`", "flag variable"),
    fence_case(c.starred_unpacking, "starred expressions", "one by one"),
    fence_case(c.transpose_vjp_direct, "", ""),     # placeholder replaced below
    # normalize
    user(c.loop_into_attribute, "assignment to `box.value`", "assign to a plain name"),
    user(c.call_local_function, "a call of a local value", "module-level name"),
    user(c.rerun_callee_draws, "its adjoint runs _noisy again", "make the state an argument"),
    user(c.undefined_name, "not defined", "define or import it"),
    user(c.double_star_call, "`**kwargs` in a call", "by name"),
    user(c.dict_call_of_pairs, "this form of `dict(...)`", "dict display"),
    user(c.dict_double_star, "`**` unpacking in a dict display", "one by one"),
    user(c.dict_repeated_key, "the same key twice", "each key once"),
    user(c.dict_get_three, "this form of `.get`", "d.get(key, default)"),
    user(c.dict_items_argument, "`.items(...)` with arguments", "without arguments"),
    user(c.pop_as_value, "in-place method `d.pop(...)` used as a value", "build a new dict"),
    user(c.dict_and_array_name, "holds a dict at one place", "name of its own"),
    user(c.enumerate_start, "enumerate with a start value", "add the offset"),
    user(c.zip_strict, "zip with keyword arguments", "sequences only"),
    user(c.map_keywords, "this form of map", "map(f, xs)"),
    user(c.guard_reader_unbound, "may not be bound yet when the write runs", "make a copy with `.copy()`"),
    user(c.vjp_inside, "`srcad.vjp` called inside a differentiated function", "srcad.grad(inner)(x, v)"),
    user(c.jvp_inside_unshown, "in a form srcad does not transform", "tuples of the same length"),
    user(c.reversed_two, "this form of reversed", "reversed(xs)"),
    user(c.loop_writes_iterable, "writes `a` in place while the loop runs over it", "range(len(a))"),
    user(c.overlapping_write, "shares memory with its target", "v[0:4].copy()"),
    # inplace (out=, np.copyto)
    user(c.out_into_nested, "`out=` writing into `bufs[0][:]`", "write into a named array"),
    user(c.out_with_where, "`out=` with `where=`", "np.where(mask, np.f(...), y)"),
    user(c.copyto_where, "`np.copyto` with `where=`", "np.where(mask, v, y)"),
    # analyze
    user(c.max_with_key, "the call `max(x, key=abs)`", "register a rule of your own"),
    user(c.update_with_active, "`d.update(...)` with a differentiated argument", "item assignments"),
    user(c.sort_in_place, "`y.sort(...)` on a differentiated value", "new name"),
    user(c.no_rule, "`scipy.special.struve`", "srcad.register_vjp(scipy.special.struve, rule)"),
    # transform
    Case("reverse_only_rule", _jvp(uses_reverse_only, X), "`_reverse_only`, which has a reverse-mode rule",
         "srcad.register_jvp(_reverse_only, rule)", THIS_FILE, func=uses_reverse_only),
    user(c.transpose_vjp_direct, "the argument `g` of `rt.cumsum_vjp(x, x)`", "srcad.register_vjp(rt.cumsum_vjp, rule)"),
    Case("forward_argument", _jvp(c.logspace_base, X), "the argument `base` of `np.logspace(",
         "srcad.register_jvp(np.logspace, rule)", func=c.logspace_base),
    Case("second_derivative_of_register_vjp", lambda: srcad.hessian(uses_reverse_only)(X),
         "the second derivative of `_reverse_only`", "srcad.custom_vjp", THIS_FILE, func=uses_reverse_only),
    Case("stored_function", lambda: srcad.grad(c.WithStoredFunction().loss)(X), "the call `self.fn(...)`",
         "as a method of the class", func=c.WithStoredFunction.loss),
    user(c.wrong_call, "the call `helper_two(x, c=2.0)`", "Pass the arguments helper_two takes"),
    user(c.call_star_helper, "takes *args or **kwargs", "Name every parameter"),
    # composition
    Case("lru_cache", grad_of(c.cached_sin, X), "a function wrapped by functools._lru_cache_wrapper",
         "its `__wrapped__`, here `sin_for_cache`", func=c.sin_for_cache),
    user(c.operator_of_a_local, "`srcad.grad(h)` applied inside the function", "apply srcad.grad at module level"),
    Case("reverse_over_tape", lambda: srcad.grad(srcad.grad(c.loop_for_second_order))(0.3),
         "reverse mode over the adjoint srcad generated from `loop_for_second_order`",
         "srcad.jacobian(srcad.grad(f))", func=c.loop_for_second_order),
    # runtime helpers, placed on the user line whose generated code was running
    Case("shared_update", grad_of(c.maybe_shared, X, X.copy(), True), "`y += x` writing into `y`, which may be "
         "the same array as `s`", "make it a copy where it is assigned", func=c.maybe_shared),
    user(c.joined_unshown, "joining lists or tuples with `+`", "list(a) + list(b)", [1.0, 2.0], [3.0]),
    Case("coo_sorted_while_running", lambda: srcad.grad(c.coo_sum)(_unsorted_coo(), X),
         "a COO argument was not in canonical format", "A.sum_duplicates()", THIS_FILE,
         marker="srcad.grad(c.coo_sum)(_unsorted_coo(), X)"),
    user(c.einsum_sublist_of_names, "np.einsum's sublist form with items other than literal integers",
         "np.einsum('ij,jk->ik', a, b)", np.ones((2, 2))),
    user(c.call_of_a_returned_function, "calling the result of the call `_picks(1)`", "`return h`"),
    user(c.list_rows_written_by_index, "`t[j] = v` on the item `t` of a loop over a list of arrays", "np.stack"),
    user(c.cov_weighted, "np.cov with fweights or aweights", "np.average"),
    user(c.percentile_nearest, "method='nearest'", "method='linear'"),
    user(c.norm_order_zero, "at ord=0 (a count of nonzeros) w.r.t. its order", "srcad.custom_vjp"),
    Case("numerics", grad_of(c.sqrt_at_zero, np.array([0.0, 1.0]), check_numerics=True), "became Inf",
         "division by zero", func=c.sqrt_at_zero),
    user(c.returns_array, "return a scalar", "srcad.jacobian(returns_array)"),
    Case("has_aux_pair", grad_of(c.returns_scalar_only, X, has_aux=True), "must return a pair",
         "Return (loss, aux)", func=c.returns_scalar_only),
    Case("linalg_trans", _linalg(trans_two), "trans=2", "srcad.custom_vjp", THIS_FILE, func=trans_two),
    Case("linalg_svd", _linalg(svd_full), "full_matrices=True", "full_matrices=False", THIS_FILE, func=svd_full),
    Case("linalg_qr", _linalg(qr_complete), "mode='complete'", "mode='reduced'", THIS_FILE, func=qr_complete),
    Case("linalg_lstsq", _linalg(lstsq_residuals), "residuals", "item 0", THIS_FILE, func=lstsq_residuals),
    Case("pad_mode", grad_of(pad_reflect, X), "mode='reflect'", "srcad.custom_vjp", THIS_FILE, func=pad_reflect),
    Case("linspace_retstep", grad_of(linspace_step, X), "retstep=True", "(stop - start)", THIS_FILE,
         func=linspace_step),
    Case("eig_complex", grad_of(eig_complex, X), "complex eigenvalues", "np.linalg.eigh", THIS_FILE, func=eig_complex),
    Case("eig_repeated", grad_of(eig_repeated, X), "repeated eigenvalues", "np.linalg.eigvalsh", THIS_FILE,
         func=eig_repeated),
    Case("real_of_complex", grad_of(real_of_complex, X), "np.real of a complex array", "two real arrays", THIS_FILE,
         func=real_of_complex),
    Case("sqrtm_complex", grad_of(sqrtm_complex, X), "square root is complex", "np.linalg.cholesky", THIS_FILE,
         func=sqrtm_complex),
    Case("dirichlet_batch", grad_of(dirichlet_batch, X), "a batch of points", "once per point", THIS_FILE,
         func=dirichlet_batch),
    Case("sparse_axis", lambda: srcad.grad(sparse_sum_axis, wrt=1)(sp.csr_array(A), X[:3]), "axis=2",
         "axis=None", THIS_FILE, func=sparse_sum_axis),
    Case("sparse_format", lambda: srcad.grad(sparse_times)(sp.lil_array(A), X[:3]), "lil", "tocsr",
         THIS_FILE, marker="srcad.grad(sparse_times)(sp.lil_array"),
    Case("sparse_bounds", _sparse(sp_matvec, _broken("coo"), X[:3]), "stores a row index 7", "Fix how",
         THIS_FILE, func=sp_matvec),
    Case("sparse_indptr", _sparse(sp_matvec, _broken("indptr"), X[:3]), "index pointer array", "Fix how",
         THIS_FILE, func=sp_matvec),
    Case("sparse_operand_format", _sparse(sp_matmat, sp.csr_array(A), sp.lil_array(A)), "LIL", "Convert",
         THIS_FILE, func=sp_matmat),
    Case("sparse_row_1d", _sparse(sp_row_matvec, sp.csr_array(A), X[:3]), "1-D scipy sparse array", "A[[i]]",
         THIS_FILE, func=sp_row_matvec),
    Case("sparse_stack_format", _sparse(sp_vstack_lil, sp.csr_array(A)), "format='lil'", "ask for one of them",
         THIS_FILE, func=sp_vstack_lil),
    Case("sparse_diags_format", _sparse(sp_diags_lil, X[:3]), "format='lil'", "ask for one of those",
         THIS_FILE, func=sp_diags_lil),
    Case("sparse_cancel", _sparse(sp_add_two, sp.csr_array(A), sp.csr_array(np.diag([-2.0, 1.0, 1.0]))),
         "dropped stored entries", "Write", THIS_FILE, func=sp_add_two),
    Case("sparse_add_dense", _sparse(sp_add_dense, sp.csr_array(A)), "not ndarray", "sparse",
         THIS_FILE, func=sp_add_dense),
    Case("sparse_reduce_format", _sparse(sp_reduce_scaled, sp.dia_array(A), X[:3], wrt=1), "DIA", "Convert",
         THIS_FILE, func=sp_reduce_scaled),
    Case("sparse_reduce_dense", _sparse(sp_reduce_dense, A), "not ndarray", "sparse", THIS_FILE,
         func=sp_reduce_dense),
    Case("sparse_matrix_star", _sparse(sp_matrix_star, sp.csr_matrix(A), X[:3]), "`A * x` with a scipy `_matrix`",
         "A @ x", THIS_FILE, func=sp_matrix_star),
    # the operators' arguments: placed on the user's call of srcad
    Case("wrt_name", lambda: srcad.grad(c.plain, wrt="z")(X, X), "wrt='z'", "Pass wrt", THIS_FILE,
         marker='srcad.grad(c.plain, wrt="z")'),
    Case("wrt_position", lambda: srcad.grad(c.plain, wrt=5)(X, X), "wrt=5", "Pass wrt", THIS_FILE,
         marker="srcad.grad(c.plain, wrt=5)"),
    Case("emit_mode", lambda: srcad.emit(c.plain, mode="sideways"), "mode must be", "Pass one", THIS_FILE,
         marker='srcad.emit(c.plain, mode="sideways")'),
    Case("emit_stage", lambda: srcad.emit(c.plain, stage="normalise"), "stage='normalise'", "Pass one of parse",
         THIS_FILE, marker='srcad.emit(c.plain, stage="normalise")'),
    Case("jacobian_mode", lambda: srcad.jacobian(c.plain, mode="x"), "mode must be", "Pass one", THIS_FILE,
         marker='srcad.jacobian(c.plain, mode="x")'),
    Case("jacobian_sparsity", lambda: srcad.jacobian(c.plain, sparsity="x"), "sparsity must be", "Pass one",
         THIS_FILE, marker='srcad.jacobian(c.plain, sparsity="x")'),
    Case("jvp_count", lambda: srcad.jvp(c.plain, (X, X), (X,)), "one tangent per primal", "None holds",
         THIS_FILE, marker="srcad.jvp(c.plain, (X, X), (X,))"),
    Case("jvp_shape", lambda: srcad.jvp(c.plain, (X, X), (X[:2], X)), "has shape (2,)", "Pass a tangent",
         THIS_FILE, marker="srcad.jvp(c.plain, (X, X), (X[:2], X))"),
    Case("jvp_tree", lambda: srcad.jvp(c.loss_of_dict, ({"w": X},), ({"v": X},)), "pytree", "tree_map",
         THIS_FILE, marker='srcad.jvp(c.loss_of_dict, ({"w": X},), ({"v": X},))'),
    Case("single_wrt", lambda: srcad.hessian(c.plain, wrt=(0, 1)), "single wrt", "one argument at a time",
         THIS_FILE, marker="srcad.hessian(c.plain, wrt=(0, 1))"),
    Case("hessian_sparse", lambda: srcad.hessian(c.sparse_quad)(sp.csr_array(A), X[:3]), "would be dense",
         "srcad.hvp", THIS_FILE, marker="srcad.hessian(c.sparse_quad)(sp.csr_array(A), X[:3])"),
    Case("hessian_vector", lambda: srcad.hessian(vec_out)(X), "needs vec_out to return a scalar",
         "srcad.jacobian(srcad.jacobian(vec_out))", THIS_FILE, marker="    return x ** 2"),     # (as grad: the return)
    Case("hvp_direction", lambda: srcad.hvp(c.plain)(X, X, X[:2]), "direction v", "Pass a direction",
         THIS_FILE, marker="srcad.hvp(c.plain)(X, X, X[:2])"),
    Case("vjp_cotangent", lambda: srcad.vjp(vec_out, X)[1](X[:2]), "has shape (2,)", "Pass a cotangent",
         THIS_FILE, marker="srcad.vjp(vec_out, X)[1](X[:2])"),
    here(uses_rule_bare, "returned ndarray of shape (4,); expected a tuple of 1 cotangent", "return (g * ...,)"),
    here(uses_rule_count, "returned 2 cotangents for a call with 1 positional argument", "one cotangent per"),
    here(uses_rule_shape, "cotangent of argument 0 of shape (1,)", "one cotangent per"),
    here(uses_rule_dtype, "of dtype <U1, not a number", "one cotangent per"),
    here(uses_rule_list, "returned a list of 1 item as the cotangent of argument 0", "one cotangent per"),
    here(uses_rule_pair, "returned ndarray of shape (4,); it must return a pair (y, pullback)", "Return the pair"),
    here(uses_rule_pullback, "returned float as its pullback", "pullback(dy) a function"),
    Case("rule_tangent", _jvp(uses_rule_tangent, X), "the output's tangent of shape ()", "y_dot of y's shape",
         func=uses_rule_tangent, file=THIS_FILE),
    Case("sparse_read_before_merge", lambda: srcad.grad(read_before_merge)(np.arange(1.0, 6.0)),
         "reads `.data` of a sparse matrix", ".sum_duplicates()", THIS_FILE, func=read_before_merge),
    Case("cross_mixed", grad_of(cross_mixed, X), "np.cross of vectors of lengths 2 and 3", "srcad.custom_vjp",
         THIS_FILE, func=cross_mixed),
    Case("accumulate_length", lambda: srcad.accumulate((X.copy(),), (X, X)), "a tuple of 1 and the gradient a tuple of 2",
         "one entry per gradient", THIS_FILE, marker="srcad.accumulate((X.copy(),), (X, X))"),
    Case("accumulate_keys", lambda: srcad.accumulate({"w": X.copy()}, {"b": X}), "keys ['b']",
         "Pass an accumulator", THIS_FILE, marker='srcad.accumulate({"w": X.copy()}, {"b": X})'),
    Case("accumulate_shape", lambda: srcad.accumulate(X.copy(), 1.5), "the gradient has shape ()",
         "Pass the gradient of the argument", THIS_FILE, marker="srcad.accumulate(X.copy(), 1.5)"),
    Case("accumulate_sparse", lambda: srcad.accumulate(sp.csr_array(A), X[:3]), "a sparse accumulator",
         "the gradient of the same sparse argument", THIS_FILE, marker="srcad.accumulate(sp.csr_array(A), X[:3])"),
    Case("check_grad", lambda: srcad.check_grad(uses_wrong_sin, X), "disagrees with central finite differences",
         "srcad.emit", THIS_FILE, marker="srcad.check_grad(uses_wrong_sin, X)"),
    Case("check_grad_tree", lambda: srcad.check_grad(uses_wrong_sin_tree, {"w": X}), "(a pytree",
         "srcad.emit", THIS_FILE, marker='srcad.check_grad(uses_wrong_sin_tree, {"w": X})'),
    Case("not_a_function", lambda: srcad.grad(3)(X), "srcad transforms Python functions", "def", THIS_FILE,
         marker="srcad.grad(3)(X)"),
    Case("no_source", lambda: srcad.grad(_exec_function())(X), "cannot read the source", ".py file", THIS_FILE,
         marker="srcad.grad(_exec_function())(X)"),
    Case("classmethod_object", lambda: srcad.grad(Holder.__dict__["make"])(X), "the classmethod object",
         "through its class", THIS_FILE, marker='srcad.grad(Holder.__dict__["make"])(X)'),
    Case("partial_keywords", lambda: srcad.jacobian(__import__("functools").partial(c.plain, y=X)),
         "keyword arguments", "by position", THIS_FILE, marker="srcad.jacobian(__import__"),
    Case("distributed_reduce", lambda: srcad.distributed.value_and_grad(c.plain, reduce="max"),
         "reduce must be", "'sum' or 'mean'", THIS_FILE, marker='value_and_grad(c.plain, reduce="max")'),
    Case("distributed_option", lambda: srcad.distributed.value_and_grad(c.plain, speed=3), "does not take speed",
         "its options are", THIS_FILE, marker="value_and_grad(c.plain, speed=3)"),
    Case("distributed_shards", lambda: srcad.distributed.value_and_grad(c.plain)(X, shards=[]),
         "at least one shard", "shard", THIS_FILE, marker="srcad.distributed.value_and_grad(c.plain)(X, shards=[])"),
]
CASES = [k for k in CASES if k.construct or k.fix]


def _run(case):
    try:
        case.run()
    except srcad.SrcadError as exc:
        return exc
    raise AssertionError(f"{case.name}: no srcad error was raised")


def _expected_line(case):
    if case.marker is None:
        return _here_line(case.func)
    with open(case.file) as fh:
        for k, line in enumerate(fh, 1):
            if case.marker in line:
                return k
    raise AssertionError(case.marker)


def _reached(exc):
    frames = traceback.extract_tb(exc.__traceback__)
    out = set()
    for s in SITES:
        path = os.path.join(ROOT, s.path)
        if any(os.path.abspath(fr.filename) == path and fr.name == s.func and s.first <= fr.lineno <= s.last
               for fr in frames):
            out.add(s.key)
    return out


_REACHED = {}


@pytest.mark.parametrize("case", CASES, ids=[k.name for k in CASES])
def test_message_has_place_construct_and_fix(case):
    exc = _run(case)
    msg = str(exc)
    _REACHED[case.name] = _reached(exc)
    m = re.match(r"^(.+?):(\d+):(\d+): ", msg)
    assert m, f"no file:line:col at the start of: {msg}"
    assert os.path.abspath(m.group(1)) == case.file, msg
    assert int(m.group(2)) == _expected_line(case), msg
    assert (exc.filename, exc.lineno) == (m.group(1), int(m.group(2)))
    assert case.construct in msg, msg
    assert case.fix.lower() in msg.lower(), msg
    assert msg.rstrip().endswith((".", ")")) and "API.md" not in msg and "<unknown>" not in msg
    assert "srcad-cache" not in msg and "srcad_generated" not in msg


@pytest.mark.parametrize("construct", [
    "`with` statements", "`global` declarations", "`nonlocal` declarations", "set comprehensions",
    "`del`", "class definitions inside", "the walrus operator", "`import` inside the function",
    "`match` statements", "`yield` (generators)", "`yield from`", "`async for`", "`await`", "`async with`"])
def test_every_construct_of_the_fence_table(tmp_path, construct):
    bodies = {
        "`with` statements": "with open('f') as fh:\n    y = x", "`global` declarations": "global G",
        "`nonlocal` declarations": "def inner():\n    nonlocal x\n    return x", "set comprehensions": "y = {v for v in x}",
        "`del`": "y = x\ndel y", "class definitions inside": "class K:\n    pass", "the walrus operator": "y = (z := x)",
        "`import` inside the function": "import os", "`match` statements": "match x:\n    case _:\n        pass",
        "`yield` (generators)": "yield x", "`yield from`": "yield from x", "`async for`": None, "`await`": None,
        "`async with`": None}
    body = bodies[construct]
    if body is None:
        pytest.skip("only inside async functions, which are rejected as a whole (the async case)")
    src = "import numpy as np\n\n\ndef f(x):\n" + textwrap.indent(body, "    ") + "\n    return np.sum(x)\n"
    path = tmp_path / f"fence_{abs(hash(construct))}.py"
    path.write_text(src)
    sys.path.insert(0, str(tmp_path))
    try:
        mod = importlib.import_module(path.stem)
    finally:
        sys.path.pop(0)
    with pytest.raises(srcad.UnsupportedSyntaxError) as info:
        srcad.emit(mod.f)
    msg = str(info.value)
    line = 5 + next(k for k, text in enumerate(body.splitlines()) if any(
        w in text for w in ("with ", "global", "nonlocal", "{v for", "del ", "class ", ":=", "import", "match",
                            "yield")))
    assert msg.startswith(f"{path}:{line}:") and construct in msg and msg.endswith("."), msg
    assert "; " in msg      # the construct, then the fix


def test_async_function_and_stale_source(tmp_path):
    path = tmp_path / "async_mod.py"
    path.write_text("async def f(x):\n    return x\n")
    sys.path.insert(0, str(tmp_path))
    try:
        mod = importlib.import_module("async_mod")
    finally:
        sys.path.pop(0)
    with pytest.raises(srcad.UnsupportedSyntaxError) as info:
        srcad.emit(mod.f)
    assert str(info.value).startswith(f"{path}:1:0: srcad does not support async functions; ")
    _REACHED["async"] = _reached(info.value)
    f, stale = _stale_module(tmp_path)
    with pytest.raises(srcad.SrcadError) as info:
        srcad.grad(f)(X)
    msg = str(info.value)
    assert msg.startswith(f"{stale}:4:0: ") and "no longer matches" in msg and "Reload the module" in msg
    _REACHED["stale"] = _reached(info.value)


def test_name_meaning_two_things(tmp_path):
    for name, val in (("mod_a", "2.0"), ("mod_b", "3.0")):
        (tmp_path / f"{name}.py").write_text(f"import numpy as np\nSCALE = np.array({val})\n\n\n"
                                             f"def g(x):\n    return x * SCALE\n")
    (tmp_path / "mod_c.py").write_text("import numpy as np\nfrom mod_a import g\nSCALE = np.array(5.0)\n\n\n"
                                       "def f(x):\n    return np.sum(g(x) * SCALE)\n")
    sys.path.insert(0, str(tmp_path))
    try:
        mod = importlib.import_module("mod_c")
    finally:
        sys.path.pop(0)
    with pytest.raises(srcad.SrcadError) as info:
        srcad.grad(mod.f)(X)
    msg = str(info.value)
    assert "means different things" in msg and "Rename one" in msg and re.match(r"^\S+mod_[ac]\.py:\d+:\d+: ", msg)
    _REACHED["names"] = _reached(info.value)


def test_cli_errors_are_one_line_with_exit_code_two(tmp_path, capsys):
    from srcad import cli
    target = tmp_path / "cli_mod.py"
    target.write_text("import numpy as np\n\nCONSTANT = 3\n\n\ndef f(x):\n    return np.sum(x)\n")
    cases = [(f"{target}:CONSTANT", f"{target}:3:0: CONSTANT is an object of type int, not a function."),
             (f"{target}:nope", f"{target}:1:0: {target} has no function 'nope'."),
             (f"{tmp_path}/missing.py:f", "there is no file"), ("no_colon_here", "names no function")]
    for i, (arg, want) in enumerate(cases):
        if i == 0:      # the command line as a user runs it, once (a process costs an import of srcad)
            proc = subprocess.run([sys.executable, "-m", "srcad.cli", "emit", arg], capture_output=True, text=True,
                                  cwd=tmp_path, env=dict(os.environ, PYTHONPATH=ROOT))
            code, err = proc.returncode, proc.stderr
        else:           # the same main(), in this process
            code, err = cli.main(["emit", arg]), capsys.readouterr().err
        assert code == 2, err
        assert err.count("\n") == 1 and "Traceback" not in err, err
        assert err.startswith("srcad: error: ") and want in err and err.strip().endswith(".")
        with pytest.raises(srcad.SrcadError) as info:
            cli._load(arg)
        _REACHED["cli " + arg] = _reached(info.value)


def test_every_error_path_is_rendered():
    """Runs last in this file: the paths the cases above reached, against all paths in srcad."""
    if len(_REACHED) < len(CASES):
        pytest.skip("run the whole file to check coverage")
    reached = set().union(*_REACHED.values())
    missing = sorted(k for k in {s.key for s in SITES} - reached
                     if not any(k.startswith(n) or n.startswith(k) for n in NOT_RENDERED))
    assert not missing, ("error paths no case renders (add a case to tests/test_error_messages.py, or a reason "
                         "to NOT_RENDERED):\n" + "\n".join(missing))
