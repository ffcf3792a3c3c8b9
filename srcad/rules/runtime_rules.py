"""Rules of the runtime helpers that generated adjoint code calls, so that the adjoint can itself
be differentiated (a Hessian is forward mode applied to the emitted adjoint).

Most helpers are linear in the cotangent they carry and use their other arguments only for
shapes or for piecewise-constant weights; "0" marks an argument that contributes nothing.
"""
import builtins

import numpy as np

from .. import runtime as rt
from .registry import defnondiff, defrule

# ---- accumulation and shapes ---------------------------------------------------------------
defrule(rt.add, "a, b", ("g", "g"), ("a_dot", "b_dot"), jvp_join=True)
defrule(rt.unbroadcast, "g, x", ("rt.broadcast_like(g, x)", "0"), ("rt.unbroadcast(g_dot, x)", "0"))
defrule(rt.broadcast_like, "v, like", ("rt.unbroadcast(g, v)", "0"), ("rt.broadcast_like(v_dot, like)", "0"))
defrule(rt.finalize, "bar, x, row_sparse=False", ("g", "0"), ("rt.finalize(bar_dot, x, row_sparse)", "0"))
defrule(rt.as_cotangent, "g, x", (None, "0"), ("rt.as_cotangent(g_dot, x)", "0"))
defrule(rt.as_tangent, "x_dot, like", (None, "0"), ("rt.as_tangent(x_dot_dot, like)", "0"))
defrule(rt.reshape_like, "g, x", (None, "0"), ("rt.reshape_like(g_dot, x)", "0"))
defrule(rt.expand_reduced, "v, x, axis, keepdims", (None, "0"), ("rt.expand_reduced(v_dot, x, axis, keepdims)", "0"),
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

# ---- adjoints of reductions (linear in g; weights piecewise constant in x) -------------------
defrule(rt.sum_vjp, "g, x, axis=None, keepdims=False", None, ("rt.sum_vjp(g_dot, x, axis, keepdims)", "0"),
        discrete="axis keepdims")
defrule(rt.sum_jvp, "x_dot, axis=None, keepdims=False", None, "rt.sum_jvp(x_dot_dot, axis, keepdims)",
        discrete="axis keepdims")
defrule(rt.extreme_vjp, "g, x, out, axis=None, keepdims=False", None,
        ("rt.extreme_vjp(g_dot, x, out, axis, keepdims)", "0", "0"), discrete="axis keepdims")
defrule(rt.extreme_jvp, "x_dot, x, out, axis=None, keepdims=False", None,
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
defrule(rt.matmul_vjp_x, "g, x, y", None,
        ("rt.matmul_vjp_x(g_dot, x, y)", "0", "rt.matmul_vjp_x(g, x, y_dot)"), jvp_join=True)
defrule(rt.matmul_vjp_y, "g, x, y", None,
        ("rt.matmul_vjp_y(g_dot, x, y)", "rt.matmul_vjp_y(g, x_dot, y)", "0"), jvp_join=True)
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
defrule(rt.outer_vjp, "g, x, y", None, ("rt.outer_vjp(g_dot, x, y)", "0", "rt.outer_vjp(g, x, y_dot)"))
defrule(rt.solve_vjp_b, "g, a", None,
        ("rt.solve_vjp_b(g_dot, a)", "-rt.solve_vjp_b(rt.products.solve_apply(np.swapaxes(a_dot, -1, -2), rt.solve_vjp_b(g, a)), a)"))
defrule(rt.products.solve_as, "a, r", None,
        ("-rt.products.solve_as(a, rt.products.solve_apply(a_dot, rt.products.solve_as(a, r)))",
         "rt.products.solve_as(a, r_dot)"), jvp_join=True)
defrule(rt.products.solve_apply, "m, v", None, ("rt.products.solve_apply(m_dot, v)", "rt.products.solve_apply(m, v_dot)"), jvp_join=True)
# solve_vjp_a(g, a, out) = -outer(A^-T g, out): linear in g and in out; through A^-T as solve_vjp_b
defrule(rt.solve_vjp_a, "g, a, out", None,
        ("rt.solve_vjp_a(g_dot, a, out)",
         "rt.solve_vjp_a(-rt.products.solve_apply(np.swapaxes(a_dot, -1, -2), rt.solve_vjp_b(g, a)), a, out)",
         "rt.solve_vjp_a(g, a, out_dot)"))
defrule(rt.log_or_zero, "x", None, "x_dot / np.where(x == 0, 1.0, x)")

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
defrule(rt.index_vjp, "g, x, idx", None, ("rt.index_vjp(g_dot, x, idx)", "0"), discrete="idx")
defrule(rt.index_matmul_vjp, "g, y, E, idx", None,
        ("rt.index_matmul_vjp(g_dot, y, E, idx)", "rt.index_matmul_vjp(g, y_dot, E, idx)", "0"), jvp_join=True,
        discrete="idx")
defrule(rt.add_at, "x_bar, x, idx, g", None, ("x_bar_dot", "0", None, "rt.index_vjp(g_dot, x, idx)"), jvp_join=True,
        discrete="idx")
defrule(rt.index_jvp, "x_dot, x, idx", None, ("rt.index_jvp(x_dot_dot, x, idx)", "0"), discrete="idx")
defrule(rt.item, "g, k", None, "rt.item(g_dot, k)", discrete="k")
defrule(rt.field_vjp, "g, x, name, where=''", None, ("rt.field_vjp(g_dot, x, name, where)", "0"))
defrule(rt.field_jvp, "x_dot, x, name, where=''", None, ("rt.field_jvp(x_dot_dot, x, name, where)", "0"))
defrule(rt.item_tangent, "v_dot, k, n", None, "rt.item_tangent(v_dot_dot, k, n)", discrete="k n")
defrule(rt.index_bar, "y_bar, idx", None, "rt.index_bar(y_bar_dot, idx)", discrete="idx")
defrule(rt.zero_at, "y_bar, idx", None, "rt.zero_at(y_bar_dot, idx)", discrete="idx")
defrule(rt.set_at, "y_dot, y, idx, v_dot", None, ("rt.set_at(y_dot_dot, y, idx, 0.0)", "0", None, "rt.set_at(0.0, y, idx, v_dot_dot)"), jvp_join=True,
        discrete="idx")
defrule(rt.last, "xs_bar", None, "rt.last(xs_bar_dot)")
defrule(rt.drop_last, "xs_bar", None, "rt.drop_last(xs_bar_dot)")
defrule(".pop", "xs", None, "xs_dot.pop()")
defrule(rt.saved_item, "x, key", None, ("rt.saved_item(x_dot, key)", "0"))
# a loop over a value whose type the code does not show: a dict's keys carry no derivative
defrule(rt.loop_sequence, "x", "rt.loop_sequence_vjp(g, x)", "rt.loop_sequence_jvp(x_dot, x)")
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
