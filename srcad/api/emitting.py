"""emit: the text of f's generated derivative module, as srcad runs it, as it stands after any
pass (`stage`, srcad/transform/pipeline.py), specialised to example arguments, or as the Cython
that srcad/compiled/ builds from it."""
from .. import cache
from ..errors import SrcadError
from ..inputs import cache_variant
from ..transform import pipeline
from ..transform.kinds import signature as _signature
from .gradients import reverse_variant
from .passing import _as_passed, _shift
from .units import _kinds_of


def emit(f, mode="reverse", wrt=0, checkpoint=None, args=None, stage="emit", compile=False):
    r"""The generated derivative code of f, as the text of a standalone Python module.

    The module imports only numpy, scipy and ``srcad.runtime``; names come from f's names and each
    block carries the user line it comes from as a comment. In reverse mode it defines
    ``<f>_vjp(<f's parameters>, <f>_bar=1.0)``, returning what `srcad.grad` returns for that seed;
    in forward mode ``<f>_jvp(<f's parameters>, <p>_dot for each wrt parameter p)``, returning
    ``(y, y_dot)``.

    It is the code `srcad.grad` runs, with the ``<f>_vjp`` main function above in place of grad's
    ``<f>_value_and_vjp`` (which also returns f's value). Where f calls user functions, grad's
    code runs each callee's primal sweep once: the module has the callee's split adjoint
    ``<g>_split`` beside its ``<g>_vjp``, a generator that ``rt.split_forward`` runs up to its
    ``yield`` (g's primal sweep) and ``rt.split_backward`` resumes with g's cotangent (g's adjoint
    sweep). With ``checkpoint=k``, or for an ``@srcad.checkpoint`` callee, grad recomputes the
    callee in its adjoint and the module has no twin.

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
        Return the Cython text (``.pyx``) that ``srcad.grad(f, compile=True)`` builds from this
        module (`srcad/compiled/`), typed for the kinds of `args`, instead of the Python module.

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
    # the code grad runs: in reverse mode its variant (the split twins of callees unless checkpoint=k),
    # with the `<f>_vjp` main of the API in place of grad's `<f>_value_and_vjp`
    variant = reverse_variant("plain", checkpoint) if mode == "reverse" else cache_variant("plain", checkpoint)
    if stage != "emit":     # a pass's output is for reading: built afresh, never cached
        options = pipeline.Options.from_variant(mode, wrt, (), variant, sig)
        return pipeline.stage_text(f, pipeline.replace(options, stage=stage))
    if compile:
        from .. import compiled
        source, supplied, main, _ = cache.entry(f, mode, wrt, (), variant, sig)
        kinds = _kinds_of(main, source, sig, mode)
        return compiled.pyx_text(source, main, kinds, supplied, compiled.small_lengths(source, main, kinds, args))
    return cache.text(f, mode, wrt, variant, sig)
