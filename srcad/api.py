"""The differential operators: grad, value_and_grad, vjp, jvp, jacobian, hessian, hvp, emit,
check_grad. The generated code they run comes from srcad/cache.py."""
import functools
import inspect
import numbers
import types

import numpy as np
import scipy.sparse as sp

from . import cache
from . import runtime as rt
from . import tree as _tree
from .errors import InputError, NonScalarOutputError, SrcadError
from .composition import derived, derived_of, inline_jvp
from .frontend.callables import method_function, unpack_callable
from .inputs import check_args, check_coo_kept, differentiated_tangents, plain, unsorted_coo
from .transform import pipeline
from .transform.kinds import signature as _signature


def _module(func, mode, wrt, row_sparse=(), variant="plain", sig=None):
    """The loaded derivative module (srcad/cache.py keeps it); its main function is `srcad_main`.
    sig: the abstract signature of the call (transform/kinds.py), which the code is specialised to."""
    return cache.module(func, mode, wrt, row_sparse, variant, sig)


def _as_passed(f, what=None):
    """(function, arguments bound in front, keywords bound) for a lambda, bound method, partial,
    staticmethod or callable object; None for a plain def. `what`: an operator that takes no
    bound keywords. A function a srcad operator returned is the plain function that computes it
    (srcad/composition.py), never the function it wraps."""
    func, pre, kw = unpack_callable(f)
    if func is f:
        return None
    if kw and what:
        raise SrcadError(f"srcad.{what} of a functools.partial with keyword arguments ({', '.join(kw)}): "
                         f"bind them by position (grad and value_and_grad pass them on)")
    return func, pre, kw


def _composed(op, f, *a, **kw):
    """op(f, ...) for f a function a srcad operator returned: op of the plain function that
    computes f (srcad/composition.py), looked up again at each call (it is rebuilt when the
    derivative it calls is)."""
    d = derived_of(f)
    held = [None, None]

    def wrapper(*args, **kwargs):
        plain_fn = d.plain()
        if held[0] is not plain_fn:
            held[:] = [plain_fn, op(plain_fn, *a, **kw)]
        return held[1](*args, **kwargs)
    functools.update_wrapper(wrapper, f)
    wrapper.__dict__.pop("__srcad_derived__", None)
    return derived(wrapper, op.__name__, f, kw.get("wrt", a[0] if a else 0),
                   **{k: v for k, v in kw.items() if k != "wrt"})


def _shift(wrt, n):
    """wrt of the function with n more arguments in front (a name stays the name)."""
    if isinstance(wrt, (tuple, list)):
        return tuple(_shift(w, n) for w in wrt)
    return wrt + n if isinstance(wrt, int) and wrt >= 0 else wrt


def _bind_front(op, f, pre, kw):
    """op with the bound arguments put back in front of the caller's."""
    def wrapper(*args, **kwargs):
        return op(*pre, *args, **{**kw, **kwargs})
    return functools.update_wrapper(wrapper, f) if hasattr(f, "__name__") else wrapper


_PARAMS = {}        # code object -> parameter names (a plain function's names follow its code object)


def _params(func):
    """func's parameter names, worked out once per code object for a plain function."""
    if type(func) is types.FunctionType and "__wrapped__" not in func.__dict__ \
            and "__signature__" not in func.__dict__:
        names = _PARAMS.get(func.__code__)
        if names is None:
            if len(_PARAMS) > 4096:
                _PARAMS.clear()
            names = _PARAMS[func.__code__] = tuple(inspect.signature(func).parameters)
        return list(names)
    return list(inspect.signature(func).parameters)


def _row_sparse_names(func, wrt, row_sparse):
    if not row_sparse:
        return ()
    params = _params(func)
    ws = wrt if isinstance(wrt, tuple) else (wrt,)
    return tuple(params[w] if isinstance(w, int) else w for w in ws)


def _check_scalar(y, func, has_aux):
    if not has_aux and (type(y) is float or type(y) is np.float64):
        return
    if has_aux:
        if not isinstance(y, (tuple, list)) or len(y) != 2:
            raise SrcadError(f"{func.__name__} was differentiated with has_aux=True, so it must return a pair "
                             f"(scalar, aux); it returned {type(y).__name__}. Return (loss, aux), or drop has_aux=True.")
        y = y[0]
    if not rt.is_scalar(y):
        shape = getattr(y, "shape", None)
        raise NonScalarOutputError(
            f"srcad.grad needs {func.__name__} to return a scalar (a float or an array of size 1); it returned "
            f"{type(y).__name__}{' of shape ' + str(shape) if shape is not None else ''}. For a non-scalar "
            f"output use srcad.jacobian({func.__name__}) for the full Jacobian, or srcad.vjp({func.__name__}, ...) "
            f"to pull back a cotangent of the output's shape.")


def _variant(base, checkpoint):
    """The cache variant: checkpoint=k (binomial checkpointing of range loops) makes its own code."""
    if checkpoint is None:
        return base
    if isinstance(checkpoint, bool) or not isinstance(checkpoint, numbers.Integral) or checkpoint < 1:
        raise SrcadError(f"checkpoint must be None or the number of snapshots to keep (an int >= 1), "
                         f"not {checkpoint!r}")
    return f"{base}+ckpt{int(checkpoint)}"


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


def _gradient_call(f, wrt, has_aux, row_sparse, check_numerics, checkpoint, compile=False):
    """call(args, kwargs) -> (f(*args, **kwargs), gradient): one forward and one adjoint sweep of
    the generated code (which checks the output is a scalar before its adjoint sweep). What is
    fixed per function is worked out here, once: the cache handle, the seed, and per loaded module
    its main function and seed parameter. Each call checks its arguments (srcad/inputs.py: one
    type test each when they are plain arrays and numbers) and the module's freshness (identity
    tests)."""
    rs = _row_sparse_names(f, wrt, row_sparse)
    variant = _variant("value+numerics" if check_numerics else "value", checkpoint)
    handle = cache.Handle(f, "reverse", wrt, rs, variant)
    seed = rt.ScalarSeed(functools.partial(_check_scalar, func=f, has_aux=has_aux), has_aux)
    main = getattr(f, "__name__", "") + "_value_and_vjp"    # (not a function: the build says so)
    held = [(None, None, None)]       # (module, its main function, {its seed parameter: seed})

    def call(args, kwargs):
        simple = plain(args, kwargs)
        if not simple:
            check_args(f, args, kwargs, wrt)     # real inputs, supported sparse formats
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
    variant = _variant("value+numerics" if check_numerics else "value", checkpoint)
    text, supplied, main, _ = cache.entry(f, "reverse", wrt, rs, variant)
    fn = getattr(cache.module(f, "reverse", wrt, rs, variant), main)
    return text, supplied, main, f.__name__, list(cache.signature(fn).parameters)[-1]


def _call_checked(fn, f, args, kwargs, seed_name, has_aux):
    """fn(*args, **kwargs) with grad's checked seed (srcad.distributed's workers call it)."""
    kwargs = dict(kwargs)
    kwargs[seed_name] = rt.ScalarSeed(lambda y: _check_scalar(y, f, has_aux), has_aux)
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


def _differentiable_arg(a):
    t = type(a)
    if t is float:
        return True
    if t is np.ndarray and a.dtype.kind in "fc":
        return True
    if sp.issparse(a):      # (before pytrees: a DOK matrix is a dict)
        return np.issubdtype(a.dtype, np.floating)
    if _tree.is_node(a):
        return any(_differentiable_arg(v) for v in _tree.tree_leaves(a))
    if isinstance(a, bool):
        return False
    if isinstance(a, numbers.Real) and not isinstance(a, numbers.Integral):
        return True
    if isinstance(a, (np.ndarray, np.generic)):
        return np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.complexfloating)
    return False


def vjp(f, *args, checkpoint=None, compile=False):
    """Evaluate f and return its pullback: ``(f(*args), pullback)``, as JAX's ``jax.vjp``.

    ``pullback(dy)`` returns one cotangent per positional argument, ``dy`` pulled back through the
    Jacobian (``J^T dy``), with ``None`` for arguments that carry no derivative (integers,
    booleans, index arrays). f's output may be an array or a pytree of any shape.

    Parameters
    ----------
    f : callable
        The function, as for `srcad.grad` (its output need not be a scalar).
    *args
        The point at which to evaluate f.
    checkpoint : int, optional
        Binomial checkpointing of ``for ... in range(n)`` loops, as for `srcad.grad`.

    compile : bool, default False
        Run the generated code compiled by Cython (`srcad/compiled/`): the same results, built once
        per signature and machine; the Python code, with one warning naming why, if it cannot be
        built.

    Returns
    -------
    y : object
        ``f(*args)``.
    pullback : callable
        ``pullback(dy) -> tuple``: dy has y's shape (or structure).

    Raises
    ------
    InputError
        When an argument cannot be differentiated as given, or when ``dy`` does not have y's shape.
    UnsupportedSyntaxError, MissingRuleError
        As `srcad.grad`.

    Examples
    --------
    >>> import numpy as np
    >>> import srcad
    >>> def f(x, k):
    ...     return x[k] * x
    >>> y, pullback = srcad.vjp(f, np.array([1.0, 2.0, 3.0]), 1)
    >>> print(y)
    [2. 4. 6.]
    >>> dx, dk = pullback(np.array([1.0, 0.0, 0.0]))
    >>> print(dx, dk)
    [2. 1. 0.] None
    """
    variant = _variant("plain", checkpoint)
    passed = _as_passed(f, "vjp")
    if passed:
        func, pre, _ = passed
        y, pullback = vjp(func, *pre, *args, checkpoint=checkpoint, compile=compile)

        def pullback_passed(dy):
            return pullback(dy)[len(pre):]
        return y, derived(pullback_passed, "pullback", f, None, args=args)
    # an integer, or a container of integers only (an axis tuple), carries no derivative (its
    # cotangent is None); an integer leaf beside float leaves cannot be told apart: refused, as
    # grad refuses it
    idx = tuple(k for k, a in enumerate(args) if _differentiable_arg(a))
    check_args(f, args, wrt=idx)
    y = f(*args)
    if not idx:
        return y, lambda dy: tuple(None for _ in args)
    sig = _signature(args)
    mod = _module(f, "reverse", idx, variant=variant, sig=sig)
    fn = getattr(mod, mod.srcad_main)
    seed_name = list(cache.signature(fn).parameters)[-1]
    if compile:     # a number's cotangent is a number (_check_cotangent): typed when y is a float
        seed = {seed_name: "float"} if type(y) is float or type(y) is np.float64 else {}
        cfn = _compiled(fn, f, "reverse", idx, (), variant, sig, seed=seed)
        fn = cfn if cfn is not None and not seed else fn

        def pick(dy, cfn=cfn, fn=fn):
            return cfn if cfn is not None and isinstance(dy, float) else fn
    else:
        def pick(dy, fn=fn):
            return fn

    def pullback(dy):
        _check_cotangent(dy, y)
        coo = unsorted_coo(args)
        grads = pick(dy)(*args, **{seed_name: dy})     # by name: f's own defaults stay where they are
        check_coo_kept(coo)
        out = [None] * len(args)
        for k, g in zip(idx, grads):
            out[k] = g
        return tuple(out)
    return y, derived(pullback, "pullback", f, None, args=args)


def _check_cotangent(dy, y):
    """vjp's cotangent must have the output's shape (a broadcast one would be summed silently)."""
    if dy is None or sp.issparse(y) or sp.issparse(dy) or _tree.is_node(y) or _tree.is_node(dy):
        return
    if np.shape(dy) != np.shape(y):
        raise InputError(f"the cotangent passed to vjp's pullback has shape {np.shape(dy)}, but the function's "
                         f"output has shape {np.shape(y)}. Pass a cotangent of the output's shape.")


def emit(f, mode="reverse", wrt=0, checkpoint=None, args=None, stage="emit", compile=False):
    r"""The generated derivative code of f, as the text of a standalone Python module.

    The module imports only numpy, scipy and ``srcad.runtime``; names come from f's names and each
    block carries the user line it comes from as a comment. In reverse mode it defines
    ``<f>_vjp(<f's parameters>, <f>_bar=1.0)``, returning what `srcad.grad` returns for that seed;
    in forward mode ``<f>_jvp(<f's parameters>, <p>_dot for each wrt parameter p)``, returning
    ``(y, y_dot)``.

    Parameters
    ----------
    f : callable
        The function, as for `srcad.grad`.
    mode : {"reverse", "forward"}, default "reverse"
        Adjoint (reverse mode) or tangent (forward mode) code.
    wrt : int, str or tuple, default 0
        The differentiated argument(s).
    checkpoint : int, optional
        The code with binomial checkpointing of ``for ... in range(n)`` loops (reverse mode only).
    args : tuple, optional
        Example arguments: the code specialised to their kinds (Python float or array, dtype, ndim,
        sparse class), which is what `srcad.grad` runs for such arguments.
    stage : str, default "emit"
        The code as it stands after the named pass (one of ``srcad.transform.pipeline.STAGES``),
        to see what each pass did; the default is the finished module.

    compile : bool, default False
        Run the generated code compiled by Cython (`srcad/compiled/`): the same results, built once
        per signature and machine; the Python code, with one warning naming why, if it cannot be
        built.

    Returns
    -------
    GeneratedCode
        The module's text: a `str` that Jupyter shows as highlighted Python.

    Raises
    ------
    SrcadError
        For a `mode` other than "reverse" or "forward", or `checkpoint` with forward mode.
    UnsupportedSyntaxError, MissingRuleError
        As `srcad.grad`.

    Examples
    --------
    >>> import numpy as np
    >>> import srcad
    >>> def f(x):
    ...     return np.sum(x ** 3)
    >>> code = srcad.emit(f)
    >>> lines = code.splitlines()
    >>> start = lines.index("def f_vjp(x, f_bar=1.0):")
    >>> print("\n".join(lines[start:start + 1] + lines[start + 2:]))    # without its docstring
    def f_vjp(x, f_bar=1.0):
        # L2: return np.sum(x ** 3)
        x_cube = x ** 3
        # adjoint sweep
        # adjoint of L2: return np.sum(x ** 3)
        x_cube_bar = rt.sum_vjp(f_bar, x_cube, None, False)
        x_bar = x_cube_bar * 3 * x ** 2
        return rt.finalize(x_bar, x)
    """
    if mode not in ("reverse", "forward"):
        raise SrcadError(f"mode must be 'reverse' or 'forward', not {mode!r}. Pass one of those two.")
    if checkpoint is not None and mode != "reverse":
        raise SrcadError("checkpoint=k applies to reverse mode only (forward mode keeps no tape). Drop "
                         "checkpoint, or pass mode='reverse'.")
    pipeline.check_stage(stage, mode)
    passed = _as_passed(f)
    if passed:
        return emit(passed[0], mode, _shift(wrt, len(passed[1])), checkpoint,
                    None if args is None else tuple(passed[1]) + tuple(args), stage, compile)
    sig = None if args is None else _signature(tuple(args))
    if stage != "emit":     # a pass's output is for reading: built afresh, never cached
        options = pipeline.Options.from_variant(mode, wrt, (), _variant("plain", checkpoint), sig)
        return pipeline.stage_text(f, pipeline.replace(options, stage=stage))
    if compile:
        from . import compiled
        source, supplied, main, _ = cache.entry(f, mode, wrt, (), _variant("plain", checkpoint), sig)
        return compiled.pyx_text(source, main, _kinds_of(main, source, sig, mode), supplied)
    return cache.text(f, mode, wrt, _variant("plain", checkpoint), sig)


def _kinds_of(main, source, sig, mode, primals=None, dots=None):
    """{parameter of the generated main function: kind key} for a call with arguments of the
    signature sig (or the actual primals and tangents): what srcad/compiled types. In forward
    mode a tangent `<p>_dot` without an actual value is taken to be of its primal's kind."""
    import ast
    fn = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == main)
    names = [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
    kinds = {}
    if primals is not None:
        sig = _signature(tuple(primals))
    if sig is not None:
        kinds.update(zip(names, sig[0]))
        kinds.update(sig[1])
    if dots is not None:
        kinds.update(zip(names[len(names) - len(dots):], _signature(tuple(dots))[0]))
    elif mode == "forward":
        for n in names:
            base = n.rsplit("_dot", 1)[0] if "_dot" in n else None
            if base in kinds and n not in kinds:
                kinds[n] = kinds[base]
    return kinds


def _compiled(fn, f, mode, wrt, row_sparse, variant, sig, primals=None, dots=None, seed=None):
    """The compiled form (srcad/compiled) of the generated function fn, or None when it cannot be
    built (after one warning)."""
    from . import compiled
    source, supplied, main, _ = cache.entry(f, mode, wrt, row_sparse, variant, sig)
    kinds = _kinds_of(main, source, sig, "reverse" if dots is None else mode, primals, dots)
    kinds.update(seed or {})
    live = fn if getattr(f, "__defaults__", None) or getattr(f, "__kwdefaults__", None) else None
    return compiled.function(source, supplied, main, getattr(f, "__name__", "f"), kinds, live)


def jvp(f, primals, tangents, compile=False):
    """Forward mode: ``(f(*primals), tangent of the output)`` from generated tangent code.

    The tangent code is generated from f's source (forward mode proper, not reverse mode run per
    output), so one call costs about one evaluation of f whatever the output's size.

    Parameters
    ----------
    f : callable
        The function, as for `srcad.grad` (any output shape).
    primals : tuple
        The point: one entry per positional argument of f.
    tangents : tuple
        One tangent per primal, of its shape (``None`` or 0 for an argument held constant).
    compile : bool, default False
        Run the generated code compiled by Cython (`srcad/compiled/`): the same results, built once
        per signature and machine; the Python code, with one warning naming why, if it cannot be
        built.

    Returns
    -------
    y : object
        ``f(*primals)``.
    y_dot : object
        The directional derivative of f at `primals` along `tangents`, shaped like y.

    Raises
    ------
    InputError
        When primals and tangents differ in number or a tangent's shape differs from its primal's.
    UnsupportedSyntaxError, MissingRuleError
        As `srcad.grad`.

    Examples
    --------
    >>> import numpy as np
    >>> import srcad
    >>> def f(x):
    ...     return x ** 2
    >>> y, y_dot = srcad.jvp(f, (np.array([1.0, 2.0]),), (np.array([1.0, 0.5]),))
    >>> print(y, y_dot)
    [1. 4.] [2. 2.]
    """
    primals, tangents = tuple(primals), tuple(tangents)
    passed = _as_passed(f, "jvp")
    if passed:
        func, pre, _ = passed
        return jvp(func, tuple(pre) + primals, (None,) * len(pre) + tangents, compile=compile)
    if len(primals) != len(tangents):
        raise SrcadError(f"jvp needs one tangent per primal: got {len(primals)} primals and {len(tangents)} tangents. "
                         f"Pass one tangent per primal (None holds that argument constant).")
    check_args(f, primals, wrt=differentiated_tangents(primals, tangents))
    # a None tangent: that argument is held constant
    idx = tuple(k for k, a in enumerate(primals) if _differentiable_arg(a) and tangents[k] is not None)
    if not idx:
        y = f(*primals)
        return y, rt.zeros_like(y)
    mod = _module(f, "forward", idx)
    fn = getattr(mod, mod.srcad_main)
    dots = []
    names = _params(f)
    for k in idx:
        t = tangents[k]
        if _tree.is_node(primals[k]):
            _check_tangent_tree(t, primals[k], k, names[k])
        elif np.shape(t) != np.shape(primals[k]) and not sp.issparse(primals[k]):
            raise SrcadError(f"the tangent of argument {k} ({names[k]}) has shape {np.shape(t)}, "
                             f"but the argument has shape {np.shape(primals[k])}. Pass a tangent of the argument's shape.")
        dots.append(t)
    if compile:
        fn = _compiled(fn, f, "forward", idx, (), "plain", None, primals, dots) or fn
    y, y_dot = _call_jvp(fn, primals, dots)
    if _tree.is_node(y):        # the output's structure (a namedtuple stays one; zeros materialised)
        y_dot = _tree.unravel(_tree.ravel(y_dot, y), y)
    return y, y_dot


def _check_tangent_tree(t, x, k, name):
    tl, td = _tree.tree_flatten(t)
    xl, xd = _tree.tree_flatten(x)
    if td != xd or any(_tree.leaf_shape(a) != _tree.leaf_shape(b) for a, b in zip(tl, xl)):
        raise SrcadError(f"the tangent of argument {k} ({name}) must be a pytree of the argument's structure "
                         f"and leaf shapes: the argument is {xd!r} with leaf shapes "
                         f"{[_tree.leaf_shape(b) for b in xl]}, the tangent {td!r} with "
                         f"{[_tree.leaf_shape(a) for a in tl]}. Pass a tangent of that structure "
                         f"(srcad.tree_map(np.zeros_like, x) gives one to start from).")


def _call_jvp(fn, primals, dots, kwargs=None):
    """fn(primals, tangents): the generated tangent function's tangent parameters are its last
    len(dots) parameters, in wrt order (named `<param>_dot`, or `<param>_dot_2` where f already
    has a parameter of that name: forward over forward). dots: a list in wrt order, or a dict
    {tangent parameter name: tangent}. kwargs: f's own keyword arguments, passed on by name."""
    if not isinstance(dots, dict):
        sig = cache.signature(fn)
        dots = dict(zip(list(sig.parameters)[len(sig.parameters) - len(dots):], dots))
    return fn(*primals, **kwargs, **dots) if kwargs else fn(*primals, **dots)


def _vjp_function(f, wrt, variant="plain"):
    """The generated adjoint function of f (loaded from its cache file, so it can be transformed again).
    variant="value": the one value_and_grad runs, returning (f's value, gradient) and checking the
    seed it is given (rt.seed)."""
    mod = _module(f, "reverse", wrt, variant=variant)
    adjoint = getattr(mod, mod.srcad_main)
    receiver = getattr(f, "__srcad_receiver__", None)
    instance = getattr(f, "__srcad_instance__", lambda: None)()
    # a method's adjoint calls `self.helper(...)` as the method did: the same class resolves it
    return method_function(adjoint, *receiver, instance) if receiver else adjoint


def _single_wrt(f, wrt, what):
    if isinstance(wrt, tuple):
        raise SrcadError(f"{what} takes a single wrt (an int or a parameter name), not {wrt!r}. "
                         f"Differentiate one argument at a time.")
    params = _params(f)
    return params.index(wrt) if isinstance(wrt, str) else wrt % len(params)


def _second_order_seed(f, what):
    """The seed hessian/hvp give the adjoint ("value" variant): it checks, inside the one sweep
    that computes f's value anyway, that the value is a scalar (seeded with 1.0, a vector output
    would silently give the Hessian of sum(f)), then stands for 1.0. No separate call of f."""
    def check(y):
        if rt.is_scalar(y):
            return
        shape = getattr(y, "shape", None)
        name = getattr(f, "__name__", "f")
        raise NonScalarOutputError(
            f"srcad.{what} needs {name} to return a scalar (a float or an array of size 1); it returned "
            f"{type(y).__name__}{' of shape ' + str(shape) if shape is not None else ''}. For the second "
            f"derivatives of a non-scalar output use srcad.jacobian(srcad.jacobian({name})), or reduce the "
            f"output to a scalar first.")
    return rt.ScalarSeed(check)


def _check_direction(f, args, k, v):
    """hvp's direction v must be shaped like args[k]."""
    if v is not None and not (sp.issparse(v) or _tree.is_node(v)) and np.shape(v) != np.shape(args[k]):
        raise InputError(f"srcad.hvp's direction v (the last argument) has shape {np.shape(v)}, but the "
                         f"differentiated argument {k} ({_params(f)[k]}) has shape {np.shape(args[k])}. "
                         f"Pass a direction of the argument's shape.")


def _second_order_sweep(f, k, what):
    """sweep(args, v, kwargs) -> (gradient of f at args, its tangent along v: H v), by forward
    mode over f's checked-seed adjoint; f runs once per sweep (inside it), never separately."""
    adjoint = _vjp_function(f, k, "value")
    seed = _second_order_seed(f, what)
    held = [None, None, None]       # (module, main function, {seed parameter: seed})

    def sweep(args, v, kwargs):
        mod = _module(adjoint, "forward", k)
        if held[0] is not mod:
            fn = getattr(mod, mod.srcad_main)
            params = list(cache.signature(adjoint).parameters)
            held[:] = [mod, fn, {params[-1]: seed}]
        _, fn, seed_kw = held
        (_, g), (_, hv) = _call_jvp(fn, tuple(args), [v], {**(kwargs or {}), **seed_kw})
        return g, hv
    return sweep


def hvp(f, wrt=0):
    """A function ``(*args, v) -> H @ v``, H the Hessian of f w.r.t. args[wrt], never forming H.

    Forward mode applied to the generated adjoint (forward-over-reverse): one call costs a few
    evaluations of f.

    Parameters
    ----------
    f : callable
        A function with a scalar output, as for `srcad.grad`.
    wrt : int or str, default 0
        The argument of the Hessian.

    Returns
    -------
    callable
        ``hv(*args, v)``: `v` is the last positional argument, shaped like ``args[wrt]``.

    Raises
    ------
    NonScalarOutputError
        When f's output is not a scalar.
    InputError
        When v's shape differs from the argument's.
    UnsupportedSyntaxError, MissingRuleError
        As `srcad.grad`.

    Examples
    --------
    >>> import numpy as np
    >>> import srcad
    >>> def f(x):
    ...     return x[0] ** 2 * x[1]
    >>> print(srcad.hvp(f)(np.array([1.0, 2.0]), np.array([1.0, 0.0])))
    [4. 2.]
    """
    if derived_of(f):
        return _composed(hvp, f, wrt=wrt)
    passed = _as_passed(f, "hvp")
    if passed:
        return derived(_bind_front(hvp(passed[0], _shift(wrt, len(passed[1]))), f, passed[1], {}), "hvp", f, wrt)
    k = _single_wrt(f, wrt, "hvp")
    sweep = _second_order_sweep(f, k, "hvp")

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        *args, v = args
        check_args(f, args, kwargs, wrt=k)
        _check_direction(f, args, k, v)
        if not (sp.issparse(v) or _tree.is_node(v)):      # a pytree direction: as given
            v = np.asarray(v, dtype=float) if np.ndim(v) else float(v)
        return sweep(args, v, kwargs)[1]
    return derived(wrapper, "hvp", f, wrt)


def hessian(f, wrt=0):
    """A function returning the Hessian of f w.r.t. args[wrt], of shape ``x.shape + x.shape``.

    Forward mode over the generated adjoint, with the directions batched through the tangent code
    where it allows.

    Parameters
    ----------
    f : callable
        A function with a scalar output, as for `srcad.grad`.
    wrt : int or str, default 0
        The argument of the Hessian (dense; for a sparse argument use `srcad.hvp`).

    Returns
    -------
    callable
        ``H(*args, **kwargs)``: an array (a float for a float argument, nested blocks for a pytree).

    Raises
    ------
    NonScalarOutputError
        When f's output is not a scalar.
    SrcadError
        When the argument is a sparse matrix (its Hessian would be dense).
    UnsupportedSyntaxError, MissingRuleError
        As `srcad.grad`.

    Examples
    --------
    >>> import numpy as np
    >>> import srcad
    >>> def f(x):
    ...     return x[0] ** 2 * x[1]
    >>> print(srcad.hessian(f)(np.array([1.0, 2.0])))
    [[4. 2.]
     [2. 0.]]
    """
    if derived_of(f):
        return _composed(hessian, f, wrt=wrt)
    passed = _as_passed(f, "hessian")
    if passed:
        return derived(_bind_front(hessian(passed[0], _shift(wrt, len(passed[1]))), f, passed[1], {}),
                       "hessian", f, wrt)
    k = _single_wrt(f, wrt, "hessian")
    second = _second_order_sweep(f, k, "hessian")

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        check_args(f, args, kwargs, wrt=k)
        x = args[k]
        if _tree.is_node(x):        # a pytree: blocks H[leaf_i][leaf_j], one sweep per entry
            n = _tree.ravel(x).size
            H = np.zeros((n, n))
            for j, e in enumerate(_basis(n)):
                H[:, j] = _tree.ravel(second(args, _tree.unravel(e, x), kwargs)[1], x)
            return _tree.blocks(H, x, x)
        if sp.issparse(x):
            raise SrcadError(f"srcad.hessian w.r.t. a sparse matrix would be dense (x.shape + x.shape); use "
                             f"srcad.hvp({f.__name__}, wrt={wrt!r}) with a direction of x's pattern instead.")
        sweep = lambda v: second(args, v, kwargs)   # noqa: E731
        if isinstance(x, float):
            return float(sweep(1.0)[1])
        H = _forward_columns(sweep, np.asarray(x), np.shape(x))
        return H.reshape(np.shape(x) + np.shape(x))
    return derived(wrapper, "hessian", f, wrt)


def jacobian(f, wrt=0, mode="auto", sparsity=None, batch=None, compile=False):
    """A function returning the Jacobian of f w.r.t. args[wrt], of shape ``y.shape + x.shape``.

    Parameters
    ----------
    f : callable
        The function, as for `srcad.grad` (any output shape, or a pytree).
    wrt : int or str, default 0
        The argument of the Jacobian.
    mode : {"auto", "forward", "reverse"}, default "auto"
        "forward" pushes one tangent per entry of x through the generated tangent code, "reverse"
        pulls one cotangent per entry of y through the generated adjoint, "auto" picks forward when
        x has no more entries than y (fewer sweeps), reverse otherwise.
    sparsity : {None, "auto"}, default None
        "auto" detects the Jacobian's sparsity pattern by propagating index sets through the
        generated tangent code, colours the columns, and returns a ``scipy.sparse.csr_array`` of
        shape ``(y.size, x.size)`` computed with one forward sweep per colour.
    batch : int, optional
        In forward mode the seed directions travel through the tangent code together, as a leading
        batch axis, in chunks; ``batch=1`` forces one sweep per direction.

    compile : bool, default False
        Run the generated code compiled by Cython (`srcad/compiled/`): the same results, built once
        per signature and machine; the Python code, with one warning naming why, if it cannot be
        built.

    Returns
    -------
    callable
        ``J(*args)``: an array of shape ``y.shape + x.shape`` (nested blocks for pytrees, a
        ``csr_array`` with ``sparsity="auto"``).

    Raises
    ------
    SrcadError
        For an unknown `mode` or `sparsity`.
    UnsupportedSyntaxError, MissingRuleError, InputError
        As `srcad.grad`.

    Examples
    --------
    >>> import numpy as np
    >>> import srcad
    >>> def f(x):
    ...     return x ** 2 + x[0]
    >>> x = np.array([1.0, 2.0, 3.0])
    >>> print(srcad.jacobian(f)(x))
    [[3. 0. 0.]
     [1. 4. 0.]
     [1. 0. 6.]]
    >>> J = srcad.jacobian(f, sparsity="auto")(x)
    >>> print(type(J).__name__, J.nnz)
    csr_array 5
    """
    if mode not in ("auto", "forward", "reverse"):
        raise SrcadError(f"mode must be 'auto', 'forward' or 'reverse', not {mode!r}. Pass one of those.")
    if derived_of(f):
        return _composed(jacobian, f, wrt=wrt, mode=mode, sparsity=sparsity, batch=batch, compile=compile)
    passed = _as_passed(f, "jacobian")
    if passed:
        return derived(_bind_front(jacobian(passed[0], _shift(wrt, len(passed[1])), mode, sparsity, batch, compile),
                                   f, passed[1], {}), "jacobian", f, wrt, sparsity=sparsity)
    if sparsity not in (None, "auto"):
        raise SrcadError(f"sparsity must be None or 'auto', not {sparsity!r}. Pass one of those.")
    k = _single_wrt(f, wrt, "jacobian")
    name = _params(f)[k]

    def tangent_sweep(args):
        mod = _module(f, "forward", k)
        fn = getattr(mod, mod.srcad_main)
        if compile:
            fn = _compiled(fn, f, "forward", k, (), "plain", None, args) or fn
        return lambda v: _call_jvp(fn, tuple(args), [v])

    patterns = {}
    unbatched = batch == 1

    @functools.wraps(f)
    def wrapper(*args):
        check_args(f, args, wrt=k)
        x = args[k]
        y = f(*args) if sparsity is None else None     # once: its shape (or structure) decides the rest
        if sparsity is None and (_tree.is_node(x) or _tree.is_node(y)):
            return _tree_jacobian(f, k, args, y, mode, tangent_sweep)
        if sparsity == "auto":
            from .sparsity import sparse_jacobian
            J, _ = sparse_jacobian(tangent_sweep(args), x, patterns)
            return J
        xshape = np.shape(x)
        n = int(np.prod(xshape, dtype=int))
        use = mode
        if mode == "auto":
            m = int(np.size(y))
            use = "forward" if n <= m else "reverse"
        if use == "forward":
            J = _forward_columns(tangent_sweep(args), x, np.shape(y), batched=not unbatched)
            return J.reshape(np.shape(y) + xshape)
        mod = _module(f, "reverse", k)
        fn = getattr(mod, mod.srcad_main)
        if compile:
            fn = _compiled(fn, f, "reverse", k, (), "plain", None, args) or fn
        # rows of J are columns of J^T: the same batched sweeps, with the adjoint as the sweep
        Jt = _forward_columns(lambda s: (None, fn(*args, s)), y, xshape, batched=not unbatched)
        return Jt.T.reshape(np.shape(y) + xshape)
    return derived(wrapper, "jacobian", f, wrt, sparsity=sparsity)


def _tree_jacobian(f, k, args, y, mode, tangent_sweep):
    """The Jacobian of a function of (or returning) a pytree: blocks J[y leaf][x leaf] of shape
    y_leaf.shape + x_leaf.shape, one sweep per entry of x (forward) or of y (reverse)."""
    x = args[k]
    n, m = _tree.ravel(x).size, _tree.ravel(y).size
    J = np.zeros((m, n))
    if mode == "forward" or mode == "auto" and n <= m:
        sweep = tangent_sweep(args)
        for j, e in enumerate(_basis(n)):
            J[:, j] = _tree.ravel(sweep(_tree.unravel(e, x))[1], y)
    else:
        mod = _module(f, "reverse", k)
        fn = getattr(mod, mod.srcad_main)
        for i, e in enumerate(_basis(m)):
            J[i, :] = _tree.ravel(fn(*args, _tree.unravel(e, y)), x)
    return _tree.blocks(J, y, x)


def _basis(n):
    """The unit vectors of R^n, one at a time (never the n x n identity)."""
    for k in range(n):
        e = np.zeros(n)
        e[k] = 1.0
        yield e


def check_grad(f, *args, wrt=0, eps=None, rtol=None, atol=None):
    """Compare srcad's gradient of f at args with central finite differences (in float64).

    Every entry of the differentiated argument (dense, sparse or pytree) is perturbed by ``+-eps``
    in turn. An entry fails when ``|srcad - finite difference| > atol + rtol * |finite
    difference|``. On a dense argument, an entry that fails is estimated again with
    ``scipy.differentiate.derivative`` (high-order formulas over shrinking steps, with an error
    estimate) and is reported only if it disagrees with that too: rounding in the central
    difference (a function of large value, a float32 argument) raises no false alarm.

    Parameters
    ----------
    f : callable
        A function with a scalar output, as for `srcad.grad`.
    *args
        The point at which to compare.
    wrt : int, str or tuple, default 0
        The argument(s) whose gradient is checked.
    eps : float, optional
        The finite-difference step (default 1e-6).
    rtol, atol : float, optional
        Relative and absolute tolerances (defaults 1e-5 and 1e-6).

    Returns
    -------
    float
        The largest absolute difference found.

    Raises
    ------
    GradientCheckError
        When some entry differs by more than the tolerance; the message lists the worst entries
        and what to try next.

    Examples
    --------
    >>> import numpy as np
    >>> import srcad
    >>> def f(x):
    ...     return np.sum(np.sin(x) * x)
    >>> srcad.check_grad(f, np.array([0.5, 1.0, 2.0])) < 1e-6
    True

    A wrong derivative rule is caught:

    >>> @srcad.custom_vjp
    ... def square(x):
    ...     return x ** 2
    >>> _ = square.defvjp(lambda x: (x ** 2, x), lambda x, dy: (3.0 * x * dy,))   # 2x is right
    >>> def g(x):
    ...     return np.sum(square(x))
    >>> srcad.check_grad(g, np.array([1.0, 2.0]))
    Traceback (most recent call last):
        ...
    srcad.errors.GradientCheckError: the gradient of g w.r.t. argument 0 disagrees with central finite differences ...
    """
    from .errors import GradientCheckError
    passed = _as_passed(f, "check_grad")
    if passed:
        return check_grad(passed[0], *passed[1], *args, wrt=_shift(wrt, len(passed[1])), eps=eps, rtol=rtol,
                          atol=atol)
    eps = 1e-6 if eps is None else eps
    rtol = 1e-5 if rtol is None else rtol
    atol = 1e-6 if atol is None else atol
    ws = wrt if isinstance(wrt, tuple) else (wrt,)
    got = grad(f, wrt=wrt)(*args)
    got = got if isinstance(wrt, tuple) else (got,)
    worst = 0.0
    for w, g in zip(ws, got):
        k = _single_wrt(f, w, "check_grad")
        x = args[k]
        if _tree.is_node(x):
            worst = max(worst, _check_tree_grad(f, args, k, g, eps, rtol, atol))
            continue
        base = np.array(x.data if sp.issparse(x) else x, dtype=np.float64)
        flat = base.reshape(-1)
        fd = np.zeros(flat.size)
        for j in range(flat.size):
            vals = []
            for sgn in (1.0, -1.0):
                v = flat.copy()
                v[j] += sgn * eps
                if sp.issparse(x):
                    xv = x.copy()
                    xv.data = v.reshape(x.data.shape).astype(x.dtype)
                elif isinstance(x, float):
                    xv = float(v[0])
                else:
                    xv = v.reshape(np.shape(x)).astype(np.result_type(x, np.float32))
                a = list(args)
                a[k] = xv
                vals.append(float(np.sum(f(*a))))
            fd[j] = (vals[0] - vals[1]) / (2 * eps)
        have = np.asarray(g.data if sp.issparse(g) else g, dtype=np.float64).reshape(-1)
        err = np.abs(have - fd)
        bad = err > atol + rtol * np.abs(fd)
        if bad.any() and not sp.issparse(x):     # disagreeing entries: a better estimate (srcad/gradcheck.py)
            from .gradcheck import second_opinion
            fd, err, bad = second_opinion(f, args, k, x, have, fd, bad, atol, rtol)
        worst = max(worst, float(err.max(initial=0.0)))
        if bad.any():
            order = np.argsort(-err)[:5]
            rows = "\n".join(f"  entry {int(i)}: srcad {have[i]!r}, finite differences {fd[i]!r}, "
                              f"error {err[i]:.3g}" for i in order if bad[i])
            raise GradientCheckError(
                f"the gradient of {f.__name__} w.r.t. argument {k} disagrees with central finite differences "
                f"(eps={eps}, rtol={rtol}, atol={atol}; dense entries re-estimated by scipy.differentiate) at "
                f"{int(bad.sum())} of {bad.size} entries; worst:\n{rows}\n"
                f"If f has kinks or branches near this point, try another point or a smaller eps; otherwise "
                f"read the generated code with srcad.emit({f.__name__}) and report the rule at fault.")
    return worst


def _check_tree_grad(f, args, k, g, eps, rtol, atol):
    """check_grad for a pytree argument: every entry of every leaf, in tree_flatten's order."""
    from .errors import GradientCheckError
    x = args[k]
    flat = _tree.ravel(x)
    fd = np.zeros(flat.size)
    for j in range(flat.size):
        vals = []
        for sgn in (1.0, -1.0):
            v = flat.copy()
            v[j] += sgn * eps
            a = list(args)
            a[k] = _tree.unravel(v, x)
            vals.append(float(np.sum(f(*a))))
        fd[j] = (vals[0] - vals[1]) / (2 * eps)
    have = _tree.ravel(g, x)
    err = np.abs(have - fd)
    bad = err > atol + rtol * np.abs(fd)
    if bad.any():
        i = int(np.argmax(err))
        raise GradientCheckError(
            f"the gradient of {f.__name__} w.r.t. argument {k} (a pytree; entries in srcad.tree_flatten's "
            f"order) disagrees with central finite differences (eps={eps}, rtol={rtol}, atol={atol}) at "
            f"{int(bad.sum())} of {bad.size} entries; worst: entry {i}: srcad {have[i]!r}, finite "
            f"differences {fd[i]!r}. If f has kinks near this point, try another point or a smaller eps; "
            f"otherwise read the generated code with srcad.emit({f.__name__}).")
    return float(err.max(initial=0.0))


def _forward_columns(sweep, x, yshape, batched=True, chunk=None, strict=False):
    """The Jacobian as an array (y.size, x.size), from sweeps v -> (y, J v) along the unit
    directions of x: batched (many directions per sweep) when the generated code allows it, else one
    per sweep. With an adjoint as the sweep (v -> J^T v) it gives J^T."""
    xshape = np.shape(x)
    n, m = int(np.prod(xshape, dtype=int)), int(np.prod(yshape, dtype=int))
    J = np.zeros((m, n))
    if batched and n > 1:
        from .batching import UNBATCHABLE, Batched, unwrap
        chunk = chunk or max(1, min(n, 4_000_000 // max(1, m + n)))
        try:
            for k0 in range(0, n, chunk):
                B = min(chunk, n - k0)
                seed = np.zeros((B, n))
                seed[np.arange(B), k0 + np.arange(B)] = 1.0
                _, y_dot = sweep(Batched(seed.reshape((B,) + xshape)))
                block = unwrap(y_dot, B, yshape).reshape(B, m)
                if k0 == 0:     # one ordinary sweep along a random mix of these directions
                    r = np.random.default_rng(0).standard_normal(B)
                    _, check = sweep((r @ seed).reshape(xshape) if xshape else float(r @ seed))
                    want = np.ravel(np.broadcast_to(np.asarray(check, dtype=float), yshape))
                    got = r @ block
                    if not np.allclose(got, want, rtol=1e-9, atol=1e-12 * (1 + np.abs(want).max(initial=0))):
                        raise ValueError("batched tangents disagree with an ordinary sweep")
                J[:, k0:k0 + B] = block.T
            return J
        except UNBATCHABLE:       # an operation the batch does not implement: one sweep per direction
            if strict:
                raise
            J[:] = 0.0
    for k, e in enumerate(_basis(n)):
        _, y_dot = sweep(e.reshape(xshape) if xshape else float(e[0]))
        J[:, k] = np.ravel(np.broadcast_to(np.asarray(y_dot, dtype=float), yshape))
    return J


for _operator in (grad, value_and_grad, jacobian, hessian, hvp):
    # known by this mark when applied inside differentiated code (srcad/frontend/operators.py)
    _operator.__srcad_operator__ = True
jvp.__srcad_inline__ = inline_jvp        # srcad.jvp inside differentiated code (frontend/operators.py)
vjp.__srcad_inline__ = None              # ... and srcad.vjp there: a named error
