"""Rules of the runtime helpers that generated adjoint code calls, so that the adjoint can itself
be differentiated (a Hessian is forward mode applied to the emitted adjoint).

Most helpers are linear in the cotangent they carry and use their other arguments only for
shapes or for piecewise-constant weights; "0" marks an argument that contributes nothing.
"""
import builtins

import numpy as np

from .. import runtime as rt
from .registry import declare, defnondiff, defrule, file_helpers
from .fact_values import ResultKind

# the helpers by the names generated code calls them by (`rt.add`): HelperFacts reads their facts by name
file_helpers(rt)

# ---- accumulation and shapes ---------------------------------------------------------------
defrule(rt.add, "a, b", ("g", "g"), ("a_dot", "b_dot"), jvp_join=True)
defrule(rt.unbroadcast, "g, x", ("rt.broadcast_like(g, x)", "0"), ("rt.unbroadcast(g_dot, x)", "0"))
declare(rt.unbroadcast, odd=("g", "x"))
defrule(rt.broadcast_like, "v, like", ("rt.unbroadcast(g, v)", "0"), ("rt.broadcast_like(v_dot, like)", "0"))
defrule(rt.finalize, "bar, x, row_sparse=False", ("g", "0"), ("rt.finalize(bar_dot, x, row_sparse)", "0"))
defrule(rt.as_cotangent, "g, x", (None, "0"), ("rt.as_cotangent(g_dot, x)", "0"))
defrule(rt.as_tangent, "x_dot, like", (None, "0"), ("rt.as_tangent(x_dot_dot, like)", "0"))
defrule(rt.index_join_vjp, "g, items, k, how", None, ("rt.index_join_vjp(g_dot, items, k, how)", "0"),
        discrete="k how")
defrule(rt.index_join_jvp, "d, items, k, how", None, ("rt.index_join_jvp(d_dot, items, k, how)", "0"),
        discrete="k how")
defrule(rt.cast_vjp, "g, x, like", None, ("rt.cast_vjp(g_dot, x, like)", "0", "0"))
defrule(rt.reshape_like, "c, x", ("rt.reshape_like(g, c)", "0"), ("rt.reshape_like(c_dot, x)", "0"))
defrule(rt.expand_reduced, "v, x, axis, keepdims", ("rt.reshape_like(g, v)", "0"), ("rt.expand_reduced(v_dot, x, axis, keepdims)", "0"),
        discrete="axis keepdims")
defrule(rt.transpose_vjp, "g, axes=None", None, "rt.transpose_vjp(g_dot, axes)", discrete="axes")
defrule(rt.snapshot, "y", "g", "y_dot")
defrule(rt.matmul, "x, y", ("rt.matmul_vjp_x(g, x, y)", "rt.matmul_vjp_y(g, x, y)"),
        ("rt.matmul(x_dot, y)", "rt.matmul(x, y_dot)"), jvp_join=True)
defrule(rt.getitem, "x, idx", "rt.index_vjp(g, x, idx)", "rt.index_jvp(x_dot, x, idx)", discrete="idx")
defrule(rt.getitem_matmul, "x, idx, y",
        ("rt.index_matmul_vjp(g, y, x, idx)", None, "rt.matmul_vjp_y(g, rt.getitem(x, idx), y)"),
        ("rt.getitem_matmul(x_dot, idx, y)", None, "rt.getitem_matmul(x, idx, y_dot)"), discrete="idx")
defrule(rt.outer, "a, b", ("rt.unbroadcast(g @ b, a)", "rt.unbroadcast(a @ g, b)"),
        ("rt.outer(a_dot, b)", "rt.outer(a, b_dot)"))

# ---- adjoints of the shape functions (np.select, np.rollaxis, np.partition, the stacks, the splits) --
defrule(rt.shapes.select_vjp, "g, condlist, choicelist", None, ("rt.shapes.select_vjp(g_dot, condlist, choicelist)", "0", "0"))
defrule(rt.shapes.select_default_vjp, "g, condlist, default", None,
        ("rt.shapes.select_default_vjp(g_dot, condlist, default)", "0", "0"))
defrule(rt.shapes.rollaxis_vjp, "g, a, axis, start=0", None, ("rt.shapes.rollaxis_vjp(g_dot, a, axis, start)", "0"),
        discrete="axis start")
defrule(rt.shapes.partition_vjp, "g, x, kth, axis=-1", None, ("rt.shapes.partition_vjp(g_dot, x, kth, axis)", "0"),
        discrete="kth axis")
defrule(rt.shapes.partition_jvp, "x_dot, x, kth, axis=-1", None, ("rt.shapes.partition_jvp(x_dot_dot, x, kth, axis)", "0"),
        discrete="kth axis")
defrule(rt.shapes.stacked_vjp, "g, tup, how", None, ("rt.shapes.stacked_vjp(g_dot, tup, how)", "0"), discrete="how")
defrule(rt.shapes.split_vjp, "g, ans_, axis=0", None, ("rt.shapes.split_vjp(g_dot, ans_, axis)", "0"),
        discrete="axis")
defnondiff([rt.shapes.inner_axes])

# ---- adjoints of reductions (linear in g; weights piecewise constant in x) -------------------
# (a helper linear in the derivative it carries: its adjoint is its transpose, the twin helper)
defrule(rt.sum_vjp, "c, x, axis=None, keepdims=False", ("rt.unbroadcast(rt.sum_jvp(g, axis, keepdims), c)", "0"),
        ("rt.sum_vjp(c_dot, x, axis, keepdims)", "0"),
        discrete="axis keepdims")
defrule(rt.sum_jvp, "x_dot, axis=None, keepdims=False", "rt.sum_vjp(g, x_dot, axis, keepdims)",
        "rt.sum_jvp(x_dot_dot, axis, keepdims)",
        discrete="axis keepdims")
defrule(rt.extreme_vjp, "c, x, out, axis=None, keepdims=False", ("rt.extreme_jvp(g, x, out, axis, keepdims)", "0", "0"),
        ("rt.extreme_vjp(c_dot, x, out, axis, keepdims)", "0", "0"), discrete="axis keepdims")
defrule(rt.extreme_jvp, "x_dot, x, out, axis=None, keepdims=False", ("rt.extreme_vjp(g, x, out, axis, keepdims)", "0", "0"),
        ("rt.extreme_jvp(x_dot_dot, x, out, axis, keepdims)", "0", "0"), discrete="axis keepdims")
defrule(rt.prod_vjp, "g, x, axis=None, keepdims=False", None,
        ("rt.prod_vjp(g_dot, x, axis, keepdims)",
         "rt.expand_reduced(g, x, axis, keepdims) * rt.prod_others_jvp(x_dot, x, axis)"), discrete="axis keepdims")
defrule(rt.var_vjp, "g, x, axis=None, ddof=0, keepdims=False", None,
        ("rt.var_vjp(g_dot, x, axis, ddof, keepdims)", "rt.var_vjp(g, x_dot, axis, ddof, keepdims)"),
        discrete="axis ddof keepdims")
# tangents of reductions (forward mode over tangent code); `d` is the tangent the helper carries
defrule(rt.prod_jvp, "d, x, axis=None, keepdims=False", None,
        ("rt.prod_jvp(d_dot, x, axis, keepdims)",
         "np.sum(d * rt.prod_others_jvp(x_dot, x, axis), axis=axis, keepdims=keepdims)"), discrete="axis keepdims")
defrule(rt.reductions.half_over, "g, s", None,
        ("rt.reductions.half_over(g_dot, s)", "-rt.reductions.half_over(2.0 * rt.reductions.half_over(g, s) * s_dot, s)"))
defrule(rt.var_jvp, "d, x, axis=None, ddof=0, keepdims=False", None,
        ("rt.var_jvp(d_dot, x, axis, ddof, keepdims)", "rt.var_jvp(d, x_dot, axis, ddof, keepdims)"),
        discrete="axis ddof keepdims")
defrule(rt.cumsum_vjp, "g, x, axis=None", None, ("rt.cumsum_vjp(g_dot, x, axis)", "0"), discrete="axis")
defrule(rt.cumsum, "x, axis=None, dtype=None, out=None", "rt.cumsum_vjp(g, x, axis)",
        "rt.shapes.lin(rt.cumsum, x_dot, axis)", discrete="axis dtype out")
defrule(rt.reductions.cumprod_vjp, "g, x, axis=None", None,
        ("rt.reductions.cumprod_vjp(g_dot, x, axis)", "rt.reductions.cumprod_vjp_dot(g, x, x_dot, axis)"),
        discrete="axis")
defrule(rt.reductions.cumprod_jvp, "d, x, axis=None", None,
        ("rt.reductions.cumprod_jvp(d_dot, x, axis)", "rt.reductions.cumprod_jvp_dot(d, x, x_dot, axis)"),
        discrete="axis")
defrule(rt.diff_vjp, "g, x, n=1, axis=-1", None, ("rt.diff_vjp(g_dot, x, n, axis)", "0"), discrete="n axis")

# ---- adjoints of products and linear algebra -------------------------------------------------
# The cotangent of a sparse operand has the operand's pattern, and a duplicate entry holds its own
# cotangent: the tangent pieces are added entry by entry with rt.add (jvp_join), never with `+`,
# which is scipy's matrix sum and would merge duplicates (each would then be read back as the sum).
# matmul_vjp_x(c, x, y) = c @ y^T is linear in c (the transpose of x -> x @ y, so its own transpose
# is C -> C @ y) and in y (its transpose: C -> C^T c, which is matmul_vjp_y(c, C, y)); x gives a shape
defrule(rt.matmul_vjp_x, "c, x, y", ("rt.unbroadcast(rt.matmul_or_zero(g, y), c)", "0", "rt.matmul_vjp_y(c, g, y)"),
        ("rt.matmul_vjp_x(c_dot, x, y)", "0", "rt.matmul_vjp_x(c, x, y_dot)"), jvp_join=True)
# matmul_vjp_y(c, x, y) = x^T c: linear in c (transpose: C -> x @ C) and in x (transpose: C -> c C^T)
defrule(rt.matmul_vjp_y, "c, x, y", ("rt.unbroadcast(rt.matmul_or_zero(x, g), c)", "rt.matmul_vjp_x(c, x, g)", "0"),
        ("rt.matmul_vjp_y(c_dot, x, y)", "rt.matmul_vjp_y(c, x_dot, y)", "0"), jvp_join=True)
defrule(rt.outer_vjp, "g, x, y", None, ("rt.outer_vjp(g_dot, x, y)", "0", "rt.outer_vjp(g, x, y_dot)"))
# solve_vjp_b(c, a) = A^-T c: its transpose in c is C -> A^-1 C; in a, C -> -(A^-T c)(A^-1 C)^T
defrule(rt.solve_vjp_b, "c, a",
        ("rt.solve_vjp_b(g, np.swapaxes(a, -1, -2))",
         "rt.solve_vjp_a(c, a, rt.solve_vjp_b(g, np.swapaxes(a, -1, -2)))"),
        ("rt.solve_vjp_b(c_dot, a)", "-rt.solve_vjp_b(rt.products.solve_apply(np.swapaxes(a_dot, -1, -2), rt.solve_vjp_b(c, a)), a)"))
defrule(rt.shapes.cross_vjp_a, "g, a, b", None,
        ("rt.shapes.cross_vjp_a(g_dot, a, b)", "0", "rt.shapes.cross_vjp_a(g, a, b_dot)"), jvp_join=True)
defrule(rt.shapes.cross_vjp_b, "g, a, b", None,
        ("rt.shapes.cross_vjp_b(g_dot, a, b)", "rt.shapes.cross_vjp_b(g, a_dot, b)", "0"), jvp_join=True)
defrule(rt.shapes.lin, "op, d, *args", None, (None, "rt.shapes.lin(op, d_dot, *args)"),
        discrete="op args")    # linear in d; the rest are axes, counts, shapes, or a constant operand
defrule(rt.products.dot, "x, y", ("rt.products.dot_vjp_x(g, x, y)", "rt.products.dot_vjp_y(g, x, y)"),
        ("rt.products.dot(x_dot, y)", "rt.products.dot(x, y_dot)"), jvp_join=True)
defrule(rt.products.dot_vjp_x, "g, x, y", None,
        ("rt.products.dot_vjp_x(g_dot, x, y)", "0", "rt.products.dot_vjp_x(g, x, y_dot)"), jvp_join=True)
defrule(rt.products.dot_vjp_y, "g, x, y", None,
        ("rt.products.dot_vjp_y(g_dot, x, y)", "rt.products.dot_vjp_y(g, x_dot, y)", "0"), jvp_join=True)
defrule(rt.products.solve_as, "a, r", None,
        ("-rt.products.solve_as(a, rt.products.solve_apply(a_dot, rt.products.solve_as(a, r)))",
         "rt.products.solve_as(a, r_dot)"), jvp_join=True)
defrule(rt.products.solve_apply, "m, v", None, ("rt.products.solve_apply(m_dot, v)", "rt.products.solve_apply(m, v_dot)"), jvp_join=True)
# solve_vjp_a(g, a, out) = -outer(A^-T g, out): linear in g and in out; through A^-T as solve_vjp_b
defrule(rt.solve_vjp_a, "g, a, out", None,
        ("rt.solve_vjp_a(g_dot, a, out)",
         "rt.solve_vjp_a(-rt.products.solve_apply(np.swapaxes(a_dot, -1, -2), rt.solve_vjp_b(g, a)), a, out)",
         "rt.solve_vjp_a(g, a, out_dot)"))
defrule(rt.log_or_zero, "x", "g / np.where(x == 0, 1.0, x)", "x_dot / np.where(x == 0, 1.0, x)")
# power_slope(x, y, s) = s y x**(y-1), 0 where s y == 0; d/dx = power_slope(x, y - 1, s y)
defrule(rt.power_slope, "x, y, scale=1",
        ("g * rt.power_slope(x, y - 1, scale * y)", "g * scale * x ** (y - 1) * (1.0 + y * rt.log_or_zero(x))",
         "g * rt.power_slope(x, y)"),
        ("x_dot * rt.power_slope(x, y - 1, scale * y)", "y_dot * scale * x ** (y - 1) * (1.0 + y * rt.log_or_zero(x))",
         "scale_dot * rt.power_slope(x, y)"), broadcast=True)

defrule(rt.einsum_vjp, "g, subscripts, operands, k", None,
        ("rt.einsum_vjp(g_dot, subscripts, operands, k)", None,
         "rt.einsum_vjp_dot(g, subscripts, operands, k, operands_dot)"), discrete="k")
defrule(rt.einsum_jvp, "subscripts, operands, k, dot", None,
        (None, "rt.einsum_jvp_dot(subscripts, operands, k, dot, operands_dot)", None,
         "rt.einsum_jvp(subscripts, operands, k, dot_dot)"), discrete="k")
defrule(rt.replace_at, "items, k, value", None,
        ("rt.replace_at(items_dot, k, 0.0)", None, "rt.replace_at([0.0] * len(items), k, value_dot)"), jvp_join=True,
        discrete="k")

# ---- containers and subscripts ---------------------------------------------------------------
defrule(rt.concatenate_vjp, "g, arrays, axis=0", None, ("rt.concatenate_vjp(g_dot, arrays, axis)", "0"),
        discrete="axis")
defrule(rt.unstack, "g, axis, arrays", None, ("rt.unstack(g_dot, axis, arrays)", "0", "0"))
defrule(rt.sum_list_vjp, "g, xs", None, ("rt.sum_list_vjp(g_dot, xs)", "0"))
defrule(rt.sum_items_vjp, "g, xs", None, ("rt.sum_items_vjp(g_dot, xs)", "0"))
defrule(rt.sum_items_jvp, "xs_dot, xs", None, ("rt.sum_items_jvp(xs_dot_dot, xs)", "0"))
defrule(rt.builtin_extreme_vjp, "g, out, x, others, k", None,
        ("rt.builtin_extreme_vjp(g_dot, out, x, others, k)", "0", "0", "0"), discrete="k")
defrule(rt.builtin_extreme_jvp, "d, out, x, others, k", None,
        ("rt.builtin_extreme_jvp(d_dot, out, x, others, k)", "0", "0", "0"), discrete="k")
defrule(rt.item_vjp, "g, x, args", None, ("rt.item_vjp(g_dot, x, args)", "0"))
defrule(rt.item_jvp, "x_dot, x, args", None, ("rt.item_jvp(x_dot_dot, x, args)", "0"))
defrule(rt.tolist_vjp, "g, x", None, ("rt.tolist_vjp(g_dot, x)", "0"))
defrule(rt.tolist_jvp, "x_dot, x", None, ("rt.tolist_jvp(x_dot_dot, x)", "0"))
defrule(rt.joined_vjp, "g, tup, how", None, ("rt.joined_vjp(g_dot, tup, how)", "0"), discrete="how")
defrule(rt.tangent_list, "xs_dot, xs", None, ("rt.tangent_list(xs_dot_dot, xs)", "0"))
defrule(rt.index_vjp, "c, x, idx", ("rt.index_jvp(g, x, idx)", "0"), ("rt.index_vjp(c_dot, x, idx)", "0"),
        discrete="idx")
defrule(rt.index_matmul_vjp, "g, y, E, idx", None,
        ("rt.index_matmul_vjp(g_dot, y, E, idx)", "rt.index_matmul_vjp(g, y_dot, E, idx)", "0"), jvp_join=True,
        discrete="idx")
defrule(rt.add_at, "x_bar, x, idx, v", ("g", "0", None, "rt.index_jvp(g, x, idx)"),
        ("x_bar_dot", "0", None, "rt.index_vjp(v_dot, x, idx)"), jvp_join=True, discrete="idx")
defrule(rt.index_jvp, "x_dot, x, idx", ("rt.index_vjp(g, x, idx)", "0"), ("rt.index_jvp(x_dot_dot, x, idx)", "0"),
        discrete="idx")
defrule(rt.item, "c, k", "rt.index_vjp(g, c, k)", "rt.item(c_dot, k)", discrete="k")
defrule(rt.field_vjp, "g, x, name, where=''", None, ("rt.field_vjp(g_dot, x, name, where)", "0"))
defrule(rt.field_jvp, "x_dot, x, name, where=''", None, ("rt.field_jvp(x_dot_dot, x, name, where)", "0"))
defrule(rt.item_tangent, "v_dot, k, n", None, "rt.item_tangent(v_dot_dot, k, n)", discrete="k n")
defrule(rt.index_bar, "y_bar, idx", None, "rt.index_bar(y_bar_dot, idx)", discrete="idx")
defrule(rt.zero_at, "y_bar, idx", "rt.zero_at(g, idx)", "rt.zero_at(y_bar_dot, idx)", discrete="idx")
defrule(rt.set_at, "y_dot, y, idx, v_dot", None, ("rt.set_at(y_dot_dot, y, idx, 0.0)", "0", None, "rt.set_at(0.0, y, idx, v_dot_dot)"), jvp_join=True,
        discrete="idx")
defrule(rt.last, "xs_bar", "rt.index_vjp(g, xs_bar, -1)", "rt.last(xs_bar_dot)")
defrule(rt.drop_last, "xs_bar", None, "rt.drop_last(xs_bar_dot)")
defrule(".pop", "xs", None, "xs_dot.pop()")
defrule(rt.saved_item, "x, key", None, ("rt.saved_item(x_dot, key)", "0"))
# a loop over a value whose type the code does not show: a dict's keys carry no derivative
# (kind "same": a loop over an array runs over the array itself; a dict is no array, its kind stays unknown)
defrule(rt.loop_sequence, "x", "rt.loop_sequence_vjp(g, x)", "rt.loop_sequence_jvp(x_dot, x)", kind=ResultKind.SAME)
defrule(rt.loop_sequence_vjp, "g, x", None, ("rt.loop_sequence_vjp(g_dot, x)", "0"))
defrule(rt.loop_sequence_jvp, "x_dot, x", None, ("rt.loop_sequence_jvp(x_dot_dot, x)", "0"))
defrule(rt.concat, "a, b", ("rt.concat_vjp(g, a, b, 0)", "rt.concat_vjp(g, a, b, 1)"),
        ("rt.concat_jvp(a_dot, a, b, 0)", "rt.concat_jvp(b_dot, a, b, 1)"), jvp_join=True)
defrule(rt.concat_vjp, "g, a, b, k", None, ("rt.concat_vjp(g_dot, a, b, k)", "0", "0"), discrete="k")
defrule(rt.concat_jvp, "d, a, b, k", None, ("rt.concat_jvp(d_dot, a, b, k)", "0", "0"), discrete="k")
defrule(rt.repeat, "xs, times", ("rt.repeat_vjp(g, xs, times)", "rt.repeat_vjp_times(g, xs, times)"),
        ("rt.repeat_jvp(xs_dot, xs, times)", "rt.repeat_jvp_times(times_dot, xs, times)"), jvp_join=True)
defrule(rt.repeat_vjp, "g, xs, times", None,
        ("rt.repeat_vjp(g_dot, xs, times)", "0", "rt.repeat_vjp(g, xs, times_dot)"))
defrule(rt.repeat_vjp_times, "g, xs, times", None,
        ("rt.repeat_vjp_times(g_dot, xs, times)", "rt.repeat_vjp_times(g, xs_dot, times)", "0"))
defrule(rt.repeat_jvp, "d, xs, times", None,
        ("rt.repeat_jvp(d_dot, xs, times)", "0", "rt.repeat_jvp(d, xs, times_dot)"))
defrule(rt.repeat_jvp_times, "d, xs, times", None,
        ("rt.repeat_jvp_times(d_dot, xs, times)", "rt.repeat_jvp_times(d, xs_dot, times)", "0"))
defrule(rt.union_vjp, "g, x, y, k", None, ("rt.union_vjp(g_dot, x, y, k)", "0", "0"), discrete="k")
defrule(rt.union_jvp, "d, x, y, k", None, ("rt.union_jvp(d_dot, x, y, k)", "0", "0"), discrete="k")
defrule(rt.sorted_vjp, "g, x, key=None, reverse=False", None, ("rt.sorted_vjp(g_dot, x, key, reverse)", "0"),
        discrete="key reverse")
defrule(rt.sorted_jvp, "x_dot, x, key=None, reverse=False", None, ("rt.sorted_jvp(x_dot_dot, x, key, reverse)", "0"),
        discrete="key reverse")
defrule([np.swapaxes, ".swapaxes"], "x, axis1, axis2", "rt.shapes.lin(np.swapaxes, g, axis1, axis2)", "rt.shapes.lin(np.swapaxes, x_dot, axis1, axis2)",
        discrete="axis1 axis2")

defnondiff([rt.check_finite, rt.pick_weight, rt.updates_in_place, rt.refuse_shared_update, rt.clip_mask, rt.count, rt.zeros_like, rt.is_scalar,
            builtins.slice, np.floor_divide, rt.user_vjp_rule, rt.user_jvp_rule])

# rt.custom_cotangents(cots, func, args) is cots, checked (and None read as zero): linear in cots
defrule(rt.custom_jvp_seed, "g, func, primals", ("rt.item(g, 1)", None, "0"),
        ("rt.custom_jvp_seed(g_dot, func, primals)", None, "0"), discrete="func")
defrule(rt.custom_cotangents, "cots, func, args", ("g", None, "0"), ("cots_dot", None, "0"), discrete="func")
# rt.custom_fwd_pair(out, func) is out, a custom_vjp fwd's (y, residuals), checked: linear in out
defrule(rt.custom_fwd_pair, "out, func", ("g", None), ("out_dot", None), discrete="func")

# ---- composition (srcad/composition.py): grad's seed, jacobian's directions and columns -------
# rt.seed(y, s) is s (or grad's checked 1.0): it does not depend on the output value y
defrule(rt.seed, "y, s", ("0", "g"), ("0", "s_dot"))
defrule(rt.stack_columns, "columns, x", ("rt.unstack_columns(g, columns, x)", "0"),
        ("rt.stack_columns(columns_dot, x)", "0"))
defrule(rt.unstack_columns, "g, columns, x", ("rt.stack_columns(g, x)", "0", "0"),
        ("rt.unstack_columns(g_dot, columns, x)", "0", "0"))
defrule(rt.matmul_or_zero, "x, y", ("rt.matmul_vjp_x(g, x, y)", "rt.matmul_vjp_y(g, x, y)"),
        ("rt.matmul_or_zero(x_dot, y)", "rt.matmul_or_zero(x, y_dot)"), jvp_join=True)
defnondiff([rt.unit_direction])
# `for row in Y: row /= s` (frontend/parse.py): which loop runs is decided by the items' type
defnondiff([rt.lists.items_are_views], pure=True)
defrule(rt.lists.loop_item, "v", "g", "v_dot")
declare(rt.lists.loop_item, pure=True)
# the divisor of np.mean(x, where=m) (frontend/normalize/spellings.py spells it np.sum(np.where(m, x, 0)) / count)
defnondiff([rt.where_count], pure=True)

# ---- facts the cleanup and fusion passes read about the helpers ------------------------------
# helpers that update their first argument in place when only the caller's variable holds it
# (add, add_at, zero_at check sys.getrefcount): the argument is consumed there
declare([rt.add, rt.add_at, rt.zero_at], consumes=True)
# helpers without effects: they read their arguments and return a new value
declare([getattr(rt, name) for name in """
unbroadcast broadcast_like finalize zeros_like log_or_zero power_slope pick_weight clip_mask as_cotangent cast_vjp
as_tangent expand_reduced count sum_vjp sum_jvp extreme_vjp extreme_jvp prod_others_jvp prod_vjp
prod_jvp var_vjp var_jvp norm_vjp norm_jvp cumsum cumsum_vjp diff_vjp joined_vjp solve_vjp_b outer_vjp
reshape_like solve_vjp_a einsum_vjp einsum_jvp einsum_vjp_dot einsum_jvp_dot replace_at matmul
matmul_vjp_x matmul_vjp_y transpose_vjp concatenate_vjp unstack sum_list_vjp tangent_list getitem
outer index_vjp index_matmul_vjp getitem_matmul index_jvp item field_vjp field_jvp item_tangent
index_bar set_at last drop_last appended is_scalar builtin_extreme_jvp builtin_extreme_vjp
item_jvp item_vjp sum_items_jvp sum_items_vjp tolist_jvp tolist_vjp index_join_vjp index_join_jvp
discrete_result""".split() if hasattr(rt, name)], pure=True)
# every function of rt.shapes and rt.special is pure, and of rt.linalg all but lstsq_check
# (including the scipy functions they pass on: rt.special.gamma, rt.linalg.expm)
declare([f for mod in (rt.shapes, rt.special, rt.linalg) for name, f in vars(mod).items()
         if callable(f) and not isinstance(f, type) and not name.startswith("__") and name != "lstsq_check"],
        pure=True)
declare(rt.linalg.lstsq_check, pure=False)
# fusions, declared on the producer: {(consumer, position of the temporary among its arguments):
# (fused helper, positions of the producer's arguments the fused helper does not take)}
# a row gather feeding a matrix-vector product: one kernel, the rows never formed
declare(rt.getitem, fusions={("matmul", 0): ("getitem_matmul", ())})
# a gathered row block's cotangent from `E[idx] @ w`: kept as its outer-product factors.
# matmul_vjp_x(g, x, y) reads only x's shape, and x = E[idx]: the fused helper derives it.
declare(rt.matmul_vjp_x, fusions={("index_vjp", 0): ("index_matmul_vjp", (1,))})
# helpers with effects that the passes emit as statements of their own (no derivative flows through
# them: the seed checks the output, restore_item undoes a dict write, revolve drives a checkpointed
# loop's adjoint, loop_entry copies its entry state)
declare([rt.seed, rt.restore_item, rt.revolve, rt.loop_entry, rt.loop_exit], pure=False)
# grad's callee frames (srcad/transform/split.py): run a callee's primal sweep, resume its adjoint.
# No derivative rule: the split code is run, never differentiated again (an active value through
# them would be a MissingRuleError)
declare([rt.split_forward, rt.split_backward, rt.split_forward_kw, rt.split_backward_kw], pure=False)
# the alias pass's run-time question (frontend/aliases.py): a bool about the argument's type
defnondiff([rt.slices_are_views, rt.refuse_overlapping_write])

# helpers and attributes that read some arguments only for their type, dtype and shape: the
# adjoint may read them from another value of the same kind (transform/reverse/shapes.py)
declare(rt.unbroadcast, shape_only=(1,))
declare(rt.sum_vjp, shape_only=(1,))
declare(rt.count, shape_only=(0,))
declare(rt.reshape_like, shape_only=(1,))
declare(rt.zeros_like, shape_only=(0,))
declare([np.zeros_like, np.ones_like, np.full_like, ".shape", ".size", ".ndim", ".dtype"], shape_only=(0,))
# shapes written from the kinds' shape tokens (transform/reverse/shapes.py)
declare([rt.broadcast_shapes, rt.size_of], pure=True)
defnondiff([rt.broadcast_shapes, rt.size_of])
# rt.shape_stand_in(x) is x (a small array) or zeros of x's shape (a large one): linear in x, each
# case its own map, which the same call applies to a tangent or cotangent of x's shape
defrule(rt.shape_stand_in, "x", "rt.shape_stand_in(g)", "rt.shape_stand_in(x_dot)")
declare(rt.shape_stand_in, pure=True)
