"""grad and value_and_grad: one forward and one adjoint sweep of f's generated code per call,
seeded with grad's checked 1.0; and the program srcad.distributed sends its workers for the same
sweep."""
import functools

from .. import cache
from .. import runtime as rt
from ..composition import derived, derived_of
from ..inputs import cache_variant, check_args, check_coo_kept, plain, unsorted_coo
from ..inputs import plain_signature as _plain_signature
from ..runtime.checks import check_scalar
from ..transform.kinds import signature as _signature
from .passing import _as_passed, _bind_front, _composed, _shift
from .units import _compiled, _row_sparse_names


def value_and_grad(f=None, wrt=0, *, has_aux=False, row_sparse=False, check_numerics=False, checkpoint=None,
                   compile=False):
    """A function returning ``(f(*args), df/d args[wrt])`` from one forward and one adjoint sweep.

    The value comes from the same run as the gradient (f is not called twice), which is what an
    optimiser wants: ``scipy.optimize.minimize(srcad.value_and_grad(f), x0, jac=True)``.

    Parameters
    ----------
    f : callable
        A function with a scalar output, as for `srcad.grad`; omitted, `value_and_grad` returns a
        decorator.
    wrt : int, str or tuple, default 0
        The argument(s) to differentiate with respect to, by position or parameter name.
    has_aux : bool, default False
        f returns ``(scalar, aux)``; the result is then ``((scalar, aux), gradient)``.
    row_sparse : bool, default False
        Return a `srcad.RowSparse` for an argument read only by row gathers ``E[idx]``.
    check_numerics : bool, default False
        Raise `srcad.NumericsError` at the user line whose derivative first becomes NaN or Inf.
    checkpoint : int, optional
        Keep at most this many snapshots of each ``for ... in range(n)`` loop's state (binomial
        checkpointing; the same gradient, bit for bit).

    compile : bool, default False
        Run the generated code compiled by Cython (`srcad/compiled/`): the same results, built once
        per signature and machine; the Python code, with one warning naming why, if it cannot be
        built.

    Returns
    -------
    callable
        ``vg(*args, **kwargs)`` returning ``(value, gradient)``.

    Raises
    ------
    NonScalarOutputError
        When f's output is not a scalar.
    UnsupportedSyntaxError, MissingRuleError, InputError
        As `srcad.grad`.

    Examples
    --------
    >>> import numpy as np
    >>> import srcad
    >>> def f(x):
    ...     return np.sum(x ** 2)
    >>> value, g = srcad.value_and_grad(f)(np.array([1.0, 2.0]))
    >>> print(value, g)
    5.0 [2. 4.]
    """
    if f is None:
        return functools.partial(value_and_grad, wrt=wrt, has_aux=has_aux, row_sparse=row_sparse,
                                 check_numerics=check_numerics, checkpoint=checkpoint, compile=compile)
    options = dict(has_aux=has_aux, row_sparse=row_sparse, check_numerics=check_numerics, checkpoint=checkpoint)
    if compile:
        options["compile"] = True
    if derived_of(f):
        return _composed(value_and_grad, f, wrt=wrt, **options)
    passed = _as_passed(f)
    if passed:
        func, pre, kw = passed
        return derived(_bind_front(value_and_grad(func, _shift(wrt, len(pre)), **options), f, pre, kw),
                       "value_and_grad", f, wrt, **options)
    call = _gradient_call(f, wrt, has_aux, row_sparse, check_numerics, checkpoint, compile)

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return call(args, kwargs)
    return derived(wrapper, "value_and_grad", f, wrt, **options)


def reverse_variant(base, checkpoint):
    """The cache variant of the adjoint code grad and value_and_grad run, for the base variant
    ("value", "value+numerics"; `srcad.emit` asks for "plain", the same code with the `<f>_vjp`
    main of the API): "+split", callees' primal sweeps run once and their adjoints resumed
    (transform/split.py; compile=True builds the generator twins too), except with checkpoint=k,
    which keeps the recomputing code. The one place this choice is made."""
    return cache_variant(base + ("" if checkpoint else "+split"), checkpoint)


def _gradient_call(f, wrt, has_aux, row_sparse, check_numerics, checkpoint, compile=False):
    """call(args, kwargs) -> (f(*args, **kwargs), gradient): one forward and one adjoint sweep of
    the generated code (which checks the output is a scalar before its adjoint sweep). What is
    fixed per function is worked out here, once: the cache handle, the seed, and per loaded module
    its main function and seed parameter. Each call checks its arguments (srcad/inputs.py: one
    type test each when they are plain arrays and numbers) and the module's freshness (identity
    tests)."""
    rs = _row_sparse_names(f, wrt, row_sparse)
    variant = reverse_variant("value+numerics" if check_numerics else "value", checkpoint)
    handle = cache.Handle(f, "reverse", wrt, rs, variant)
    seed = rt.ScalarSeed(functools.partial(check_scalar, func=f, has_aux=has_aux), has_aux)
    main = getattr(f, "__name__", "") + "_value_and_vjp"    # (not a function: the build says so)
    held = [(None, None, None)]       # (module, its main function, {its seed parameter: seed})

    def call(args, kwargs):
        sig = None if kwargs else _plain_signature(args)      # plain arguments: one pass for both
        simple = sig is not None or plain(args, kwargs)
        if not simple:
            check_args(f, args, kwargs, wrt)     # real inputs, supported sparse formats
        if sig is None:
            sig = _signature(args, kwargs)
        mod = handle.module(sig)     # the code for arguments of these kinds
        known, fn, seed_kw = held[0]
        if known is not mod:
            fn = getattr(mod, main)
            seed_kw = {list(cache.signature(fn).parameters)[-1]: seed}
            if compile:
                fn = _compiled(fn, f, "reverse", wrt, rs, variant, sig) or fn
            held[0] = (mod, fn, seed_kw)
        if simple:
            return fn(*args, **{**kwargs, **seed_kw}) if kwargs else fn(*args, **seed_kw)
        coo = unsorted_coo(args, kwargs)
        out = fn(*args, **{**kwargs, **seed_kw})
        check_coo_kept(coo)
        return out
    return call


def generated_program(f, wrt=0, *, row_sparse=False, check_numerics=False, checkpoint=None):
    """What srcad.distributed sends to its workers for value_and_grad(f, wrt, ...): (module text,
    supplied names, main function name, f's name, the seed parameter's name). f is a plain
    function (srcad.distributed unpacks lambdas, methods and partials first)."""
    rs = _row_sparse_names(f, wrt, row_sparse)
    variant = cache_variant("value+numerics" if check_numerics else "value", checkpoint)
    text, supplied, main, _ = cache.entry(f, "reverse", wrt, rs, variant)
    fn = getattr(cache.module(f, "reverse", wrt, rs, variant), main)
    return text, supplied, main, f.__name__, list(cache.signature(fn).parameters)[-1]


def _call_checked(fn, f, args, kwargs, seed_name, has_aux):
    """fn(*args, **kwargs) with grad's checked seed (srcad.distributed's workers call it)."""
    kwargs = dict(kwargs)
    kwargs[seed_name] = rt.ScalarSeed(lambda y: check_scalar(y, f, has_aux), has_aux)
    return fn(*args, **kwargs)


def grad(f=None, wrt=0, *, has_aux=False, row_sparse=False, check_numerics=False, checkpoint=None, compile=False):
    """The gradient of a scalar function: a function with f's signature returning df/d args[wrt].

    srcad reads f's source, writes its adjoint (reverse-mode) code and runs it (`srcad.emit` shows
    that code). The gradient has the shape and type of the argument: a pytree argument gives a
    pytree of the same structure, a scipy sparse one a sparse matrix of the same class and stored
    pattern, a Python float a float.

    Parameters
    ----------
    f : callable
        The function: a Python function, lambda, bound method, ``functools.partial`` or a function
        a srcad operator returned (then nested differentiation). Its output must be a scalar (a
        Python float, or a 0-d or size-1 array). With only keywords given (``@srcad.grad(wrt=1)``),
        `grad` returns a decorator.
    wrt : int, str or tuple, default 0
        The argument to differentiate with respect to, by position or by parameter name; a tuple of
        them gives a tuple of gradients.
    has_aux : bool, default False
        f returns ``(scalar, aux)``: the new function returns ``(gradient, aux)``.
    row_sparse : bool, default False
        The gradient w.r.t. an array that f only reads by row gathers (``E[idx]``) is returned as a
        `srcad.RowSparse` instead of a dense array.
    check_numerics : bool, default False
        The generated code raises `srcad.NumericsError` naming the user line whose derivative first
        becomes NaN or Inf.
    checkpoint : int, optional
        Binomial checkpointing of every ``for ... in range(n)`` loop: at most this many snapshots of
        the loop's state are kept and the rest recomputed; the same gradient, bit for bit.

    compile : bool, default False
        Run the generated code compiled by Cython (`srcad/compiled/`): the same results, built once
        per signature and machine; the Python code, with one warning naming why, if it cannot be
        built.

    Returns
    -------
    callable
        ``g(*args, **kwargs)`` returning df/d args[wrt] (a tuple for a tuple `wrt`).

    Raises
    ------
    NonScalarOutputError
        When f's output is not a scalar (use `srcad.jacobian` or `srcad.vjp`).
    UnsupportedSyntaxError, MissingRuleError
        When f contains a construct, or applies an operation to a differentiated value, that srcad
        has no rule for: at the user's file, line and column, never a silently wrong gradient.
    InputError
        When a differentiated argument is not real floating point (an integer array, a complex
        number, an unsupported sparse format, a foreign tensor).

    Examples
    --------
    >>> import numpy as np
    >>> import srcad
    >>> def f(x):
    ...     return np.sum(x ** 3)
    >>> print(srcad.grad(f)(np.array([1.0, 2.0, 3.0])))
    [ 3. 12. 27.]
    >>> def g(x, y):
    ...     return x * y ** 2
    >>> srcad.grad(g, wrt=(0, 1))(3.0, 2.0)
    (4.0, 12.0)
    """
    if f is None:
        return functools.partial(grad, wrt=wrt, has_aux=has_aux, row_sparse=row_sparse,
                                 check_numerics=check_numerics, checkpoint=checkpoint, compile=compile)
    options = dict(has_aux=has_aux, row_sparse=row_sparse, check_numerics=check_numerics, checkpoint=checkpoint)
    if compile:
        options["compile"] = True
    if derived_of(f):
        return _composed(grad, f, wrt=wrt, **options)
    passed = _as_passed(f)
    if passed:
        func, pre, kw = passed
        return derived(_bind_front(grad(func, _shift(wrt, len(pre)), **options), f, pre, kw),
                       "grad", f, wrt, **options)
    call = _gradient_call(f, wrt, has_aux, row_sparse, check_numerics, checkpoint, compile)
    if has_aux:
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            value, g = call(args, kwargs)
            return g, value[1]
    else:
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            return call(args, kwargs)[1]
    return derived(wrapper, "grad", f, wrt, **options)


for _operator in (grad, value_and_grad):
    # known by this mark when applied inside differentiated code (srcad/frontend/operators.py)
    _operator.__srcad_operator__ = True
