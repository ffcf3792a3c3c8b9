"""What generated derivative code calls (as `rt.<name>`). Nothing here imports the transformer.

Zero cotangents and tangents are represented by the Python float 0.0 until something real is
added to them, so a value that receives no derivative costs nothing. Every helper here that
the generated adjoint calls has a rule of its own (srcad/rules/runtime_rules.py), so the
adjoint can be differentiated again (Hessians are forward mode over the emitted adjoint).

This module only gathers the names; the helpers live by topic, each module importing only
those above it in this list (no import cycles, no imports hidden inside functions). A package
(`sparse/`) is one entry here; its __init__.py lists its own modules in the same way, and
generated code names its helpers `rt.<package>.<name>`:

  values.py        what kind of derivative a value is (the symbolic zero, a list, a dict, an array),
                   and MISSING, what a dict held at a key it did not have
  rowsparse.py     RowSparse, the cotangent of a row gather, kept as (rows, values)
  pattern_cache.py facts cached per sparsity pattern, used while a fingerprint of its index arrays matches
  sparse/          scipy sparse matrices (rt.sparse.<name>): the pattern layer, products through the
                   kernels, reductions, construction, elementwise methods, structural results,
                   accumulation; sparse/__init__.py lists its modules
  accumulate.py    adding derivatives, materialising zeros, handing gradients back (finalize)
  broadcasting.py  unbroadcast and its twins: cotangents back to their operand's shape and kind
  mappings.py      dicts (the tape of item writes, loops over keys), sorted, lists joined with + or *
  elementwise.py   weights of max/min and clip, log that is 0 at 0
  reductions.py    sum, max/min, prod, var, cumsum, diff
  products.py      matmul (sparse operands through the kernels), outer, solve, einsum
  shapes/          array constructors and shape operations
  indexing.py      subscript reads and writes, row gathers (take), namedtuple fields
  lists.py         items of containers, appends undone, concatenate/stack/split adjoints
  builtin_ops.py   Python's sum/max/min/.item()/.tolist() over arrays and lists
  linalg/          the linear-algebra rules' helpers (cholesky, eigh, svd, qr, norms, ...)
  special.py       the scipy.special functions adjoints call
  stats.py         order statistics (median, percentile, quantile) and covariances (cov, corrcoef)
  binomial.py      binomial checkpointing of loops (revolve)
  compose.py       the directions and columns of srcad.jacobian composed (srcad/composition.py)
  frames.py        callee frames: a callee's primal sweep run once, its adjoint resumed (grad's code)
  checks.py        run-time checks (aliasing, scalar output, finite derivatives), the seed,
                   user rules
"""
from .rowsparse import RowSparse
from .values import MISSING
from .mappings import (concat, concat_jvp, concat_vjp, loop_sequence, loop_sequence_jvp, loop_sequence_vjp, repeat,
                       repeat_jvp, repeat_jvp_times, repeat_vjp, repeat_vjp_times, restore_item, saved_item,
                       sorted_jvp, sorted_vjp, union_jvp, union_vjp)
from .accumulate import add, finalize, tangent_list, zeros_like
from .broadcasting import (as_cotangent, as_tangent, broadcast_like, broadcast_shapes, cast_vjp, discrete_result,
                           reshape_like, shape_stand_in, size_of, unbroadcast, where_count)
from .elementwise import clip_mask, log_or_zero, pick_weight, power_slope
from .reductions import (count, cumsum, cumsum_vjp, diff_vjp, expand_reduced, extreme_jvp, extreme_vjp, prod_jvp,
                         prod_others_jvp, prod_vjp, sum_jvp, sum_vjp, var_jvp, var_vjp)
from .products import (einsum_jvp, einsum_jvp_dot, einsum_vjp, einsum_vjp_dot, matmul, matmul_vjp_x, matmul_vjp_y,
                       outer, outer_vjp, replace_at, solve_vjp_a, solve_vjp_b)
from .indexing import (add_at, field_jvp, field_vjp, getitem, getitem_matmul, index_bar, index_jvp,
                       index_matmul_vjp, index_vjp, refuse_overlapping_write, set_at, take, take_vjp,
                       zero_at)
from .lists import (appended, concatenate_vjp, drop_last, index_join_jvp, index_join_vjp, item, item_tangent,
                    joined_vjp, last, sum_list_vjp,
                    transpose_vjp, unstack)
from .builtin_ops import (builtin_extreme_jvp, builtin_extreme_vjp, item_jvp, item_vjp, sum_items_jvp,
                          sum_items_vjp, tolist_jvp, tolist_vjp)
from .checks import (ScalarSeed, check_finite, custom_cotangents, custom_fwd_pair, custom_jvp_seed, is_scalar, refuse_shared_update, seed, slices_are_views, snapshot,
                     updates_in_place, user_jvp_rule, user_vjp_rule)
from .compose import matmul_or_zero, stack_columns, unit_direction, unstack_columns
from .shapes import add_at_jvp_v, add_at_value, add_at_vjp_v
from . import binomial, linalg, shapes, sparse, special, stats
from .frames import split_backward, split_backward_kw, split_forward, split_forward_kw
from .binomial import entry_state as loop_entry, exit_state as loop_exit, revolve

__all__ = ["RowSparse", "add", "unbroadcast", "finalize"]
