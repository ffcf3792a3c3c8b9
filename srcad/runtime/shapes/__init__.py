"""Adjoint helpers of array constructors and shape operations (rules: srcad/rules/numpy_rules.py),
as generated code names them: `rt.shapes.<name>`.

Every helper here is linear in the cotangent (or tangent) it carries; its other arguments lend
only shapes, axes and counts. So the rule of each helper is the helper itself applied to the
tangent of that first argument (srcad/rules/runtime_rules.py), and Hessians go through.

This module only gathers the names; each module imports only those above it in this list:

  linear.py      `lin`: a linear NumPy shape operation of a derivative that may be the zero 0.0;
                 np.add.at / np.subtract.at as a value (add_at_value)
  ramps.py       linspace / geomspace / arange: values that move with their end points
  gathers.py     sort, take, tile, repeat, pad, diag, select, split, partition, trace, append, delete, ...
  tensor.py      tensordot, inner, kron, cross
  filters.py     np.gradient, np.convolve and scipy.signal.convolve
"""
from .linear import add_at_jvp_v, add_at_value, add_at_vjp_v, lin
from .ramps import arange_jvp, arange_vjp, linspace_jvp, linspace_vjp
from .gathers import (append_jvp, append_vjp, bincount_vjp, delete_vjp, diag_vjp, diagonal_vjp, one_if_none, pad_jvp,
                      pad_vjp, partition_jvp, partition_vjp, repeat_vjp, rollaxis_vjp, select_default_vjp, select_vjp,
                      sort_jvp, sort_vjp, split_vjp, stacked_vjp, take_along_axis_vjp, take_indices, take_vjp,
                      tile_vjp, trace_vjp)
from .tensor import (cross_jvp, cross_vjp, cross_vjp_a, cross_vjp_a_axes, cross_vjp_b, cross_vjp_b_axes,
                     inner_axes, kron_vjp, kron_vjp_a, kron_vjp_b, tensordot_vjp_a, tensordot_vjp_b)
from .filters import convolve_jvp, convolve_vjp_a, convolve_vjp_v, gradient_jvp, gradient_vjp

__all__ = ["add_at_jvp_v", "add_at_value", "add_at_vjp_v", "lin", "arange_jvp", "arange_vjp", "linspace_jvp",
           "linspace_vjp", "append_jvp", "append_vjp", "bincount_vjp", "delete_vjp", "diag_vjp", "diagonal_vjp",
           "one_if_none", "pad_jvp", "pad_vjp", "partition_jvp", "partition_vjp", "repeat_vjp", "rollaxis_vjp",
           "select_default_vjp", "select_vjp", "sort_jvp", "sort_vjp", "split_vjp", "stacked_vjp",
           "take_along_axis_vjp", "take_indices", "take_vjp", "tile_vjp", "trace_vjp", "cross_jvp", "cross_vjp",
           "cross_vjp_a", "cross_vjp_a_axes", "cross_vjp_b", "cross_vjp_b_axes", "inner_axes", "kron_vjp",
           "kron_vjp_a", "kron_vjp_b", "tensordot_vjp_a", "tensordot_vjp_b", "convolve_jvp", "convolve_vjp_a",
           "convolve_vjp_v", "gradient_jvp", "gradient_vjp"]
