"""srcad: source-transformation automatic differentiation for NumPy and SciPy code.

srcad reads a function's source and writes new Python source for its derivative: an adjoint
(reverse mode) and a tangent (forward mode). See `srcad.emit` to read what it generated.
"""
from typing import TYPE_CHECKING

from . import runtime
from . import sparse
from .errors import (CacheWarning, GradientCheckError, InputError, MissingRuleError, NonScalarOutputError,
                     NumericsError, RuleError, SrcadError, StaleSourceError, UnsupportedSyntaxError)
from .rules import numpy_rules as _numpy_rules  # noqa: F401  (fills the rule table)
from .runtime import RowSparse
from ._version import __version__

if TYPE_CHECKING:   # a type checker reads the functions' types from srcad/_typed.pyi
    from ._typed import (GeneratedCode, accumulate, check_grad, checkpoint, custom_jvp, custom_vjp, emit, grad,
                         hessian, hvp, jacobian, jvp, nondifferentiable, register_jvp, register_vjp, tree_flatten,
                         tree_leaves, tree_map, tree_unflatten, value_and_grad, vjp)
else:
    from .api import check_grad, grad, hessian, hvp, jacobian, jvp, value_and_grad, vjp
    from ._display import GeneratedCode, emit
    from .checkpointing import checkpoint
    from .custom import custom_jvp, custom_vjp
    from .rules.user import nondifferentiable, register_jvp, register_vjp
    from .sparse import accumulate
    from .tree import tree_flatten, tree_leaves, tree_map, tree_unflatten


def tune_memory() -> bool:
    """Opt in to srcad's process-wide memory tuning for training loops.

    Importing srcad changes nothing process-wide by itself. This call makes glibc keep freed blocks
    of up to 32 MiB for reuse (mmap threshold 32 MiB, trim threshold 64 MiB) instead of unmapping
    them and faulting fresh pages in at every step. Linux/glibc only; a ``MALLOC_MMAP_THRESHOLD_`` or
    ``MALLOC_TRIM_THRESHOLD_`` of your own wins.

    The environment variable SRCAD_TUNE_MEMORY=1 does the same when srcad is imported, and also
    lets the kernels' idle OpenMP threads sleep instead of spinning (OMP_WAIT_POLICY=PASSIVE, which
    OpenMP reads only when it starts, so only the environment can set it).

    Returns
    -------
    bool
        Whether the tuning holds (False off glibc, or when your own variables win).

    Examples
    --------
    >>> import srcad
    >>> isinstance(srcad.tune_memory(), bool)
    True
    """
    from ._kernels import _malloc
    return bool(_malloc.tune())


def set_num_threads(n: "int | None") -> None:
    """Set the number of threads the compiled kernels use.

    The default is the environment's SRCAD_NUM_THREADS, else OMP_NUM_THREADS, else the CPUs this
    process may use. threadpoolctl reaches the kernels too: inside ``threadpool_limits(limits=k)``
    (or ``user_api="openmp"``) they use at most k threads, unless a number was set here. Results are
    the same bits for any number of threads.

    Parameters
    ----------
    n : int or None
        The number of threads (>= 1); None goes back to the default.

    Returns
    -------
    None

    Raises
    ------
    ValueError
        When n is not None or a positive integer.

    Examples
    --------
    >>> import srcad
    >>> srcad.set_num_threads(2); srcad.get_num_threads()
    2
    >>> srcad.set_num_threads(None)
    """
    from . import _kernels
    _kernels.set_num_threads(n)


def get_num_threads() -> int:
    """The number of threads the compiled kernels use (see `srcad.set_num_threads`).

    Returns
    -------
    int

    Examples
    --------
    >>> import srcad
    >>> srcad.get_num_threads() >= 1
    True
    """
    from . import _kernels
    return int(_kernels.get_num_threads())


__all__ = ["grad", "value_and_grad", "vjp", "jvp", "jacobian", "hessian", "hvp", "emit", "GeneratedCode", "check_grad", "checkpoint",
           "custom_vjp", "custom_jvp", "register_vjp", "register_jvp", "nondifferentiable", "accumulate",
           "set_num_threads", "get_num_threads", "tune_memory", "RowSparse", "runtime", "sparse",
           "tree_flatten", "tree_unflatten", "tree_map", "tree_leaves",
           "SrcadError", "UnsupportedSyntaxError", "MissingRuleError", "NonScalarOutputError",
           "GradientCheckError", "NumericsError", "InputError", "RuleError", "StaleSourceError", "CacheWarning",
           "__version__"]
