"""Derivative rules of NumPy, SciPy and Python operations, adjoint and tangent side by side.

In an adjoint template `g` is the cotangent of the result, `ans` the result, and parameters
stand for the call's arguments. In a tangent template `<param>_dot` is the tangent of that
argument. Rules marked broadcast=True have their adjoints passed through `rt.unbroadcast` by
the transformer (the one place where broadcasting is undone).
"""
import ast
import builtins
import math

import numpy as np
import scipy.integrate
import scipy.signal
import scipy.special

from .. import runtime as rt
from .registry import Spelling, WhereReduction, declare, defnondiff, defrule

# ---- arithmetic operators and their numpy names ------------------------------------------
defrule(["op:Add", np.add], "x, y", ("g", "g"), ("x_dot", "y_dot"), broadcast=True)
defrule(["op:Sub", np.subtract], "x, y", ("g", "-g"), ("x_dot", "-y_dot"), broadcast=True)
# (a product's two tangent pieces join with rt.add: for `A * s`, A a COO with duplicates, scipy's
# `+` would merge the pieces' duplicate entries, which `.data` then reads in the wrong layout)
defrule(["op:Mult", np.multiply], "x, y", ("g * y", "g * x"), ("x_dot * y", "x * y_dot"), broadcast=True,
        jvp_join=True)
defrule(["op:Div", np.divide, np.true_divide], "x, y", ("g / y", "-g * ans / y"),
        ("x_dot / y", "rt.sparse.quotient_jvp_y(y_dot, ans, y)"), broadcast=True, jvp_join=True,
        dense_jvp=(None, "-y_dot * ans / y"))
# (rt.power_slope(x, y) is y * x**(y - 1), 0 where y == 0; a nonzero literal y is inlined: `g * 2 * x`)
defrule(["op:Pow", np.power], "x, y", ("g * rt.power_slope(x, y)", "g * ans * rt.log_or_zero(x)"),
        ("x_dot * rt.power_slope(x, y)", "y_dot * ans * rt.log_or_zero(x)"), broadcast=True)
defrule(["op:USub", np.negative], "x", "-g", "-x_dot")
defrule(["op:UAdd", np.positive], "x", "g", "x_dot")
defrule("op:Copy", "x", "g", "x_dot")

# ---- elementwise functions ---------------------------------------------------------------
defrule([np.sin, math.sin], "x", "g * np.cos(x)", "x_dot * np.cos(x)")
defrule([np.cos, math.cos], "x", "-g * np.sin(x)", "-x_dot * np.sin(x)")
defrule([np.tan, math.tan], "x", "g / np.cos(x) ** 2", "x_dot / np.cos(x) ** 2")
defrule([np.exp, math.exp], "x", "g * ans", "x_dot * ans")
defrule([np.log, math.log], "x", "g / x", "x_dot / x")
defrule([np.log1p, math.log1p], "x", "g / (1.0 + x)", "x_dot / (1.0 + x)")
defrule([np.expm1, math.expm1], "x", "g * (ans + 1.0)", "x_dot * (ans + 1.0)")
defrule([np.sqrt, math.sqrt], "x", "g / (2.0 * ans)", "x_dot / (2.0 * ans)")
defrule([np.tanh, math.tanh], "x", "g * (1.0 - ans ** 2)", "x_dot * (1.0 - ans ** 2)")
defrule([np.arctan, math.atan], "x", "g / (1.0 + x ** 2)", "x_dot / (1.0 + x ** 2)")
defrule([np.abs, np.absolute, np.fabs, builtins.abs], "x", "g * np.sign(x)", "x_dot * np.sign(x)")
defrule([np.maximum], "x, y", ("g * rt.pick_weight(x, y)", "g * rt.pick_weight(y, x)"),
        ("x_dot * rt.pick_weight(x, y)", "y_dot * rt.pick_weight(y, x)"), broadcast=True)
defrule([np.minimum], "x, y", ("g * rt.pick_weight(y, x)", "g * rt.pick_weight(x, y)"),
        ("x_dot * rt.pick_weight(y, x)", "y_dot * rt.pick_weight(x, y)"), broadcast=True)
# np.where(condition) alone gives indices: with x and y unbound there is nothing to differentiate
# (the condition is boolean: "0", no derivative, even where generated code restores it from a tape)
defrule(np.where, "condition, x=None, y=None", ("0", "np.where(condition, g, 0.0)", "np.where(condition, 0.0, g)"),
        ("0", "np.where(condition, x_dot, 0.0)", "np.where(condition, 0.0, y_dot)"), broadcast=True)
defrule([np.clip, ".clip"], "x, a_min=None, a_max=None",
        ("g * rt.clip_mask(x, a_min, a_max)", "rt.unbroadcast(g * np.less(x, a_min), a_min)",
         "rt.unbroadcast(g * np.greater(x, a_max), a_max)"),
        ("x_dot * rt.clip_mask(x, a_min, a_max)", "rt.broadcast_like(a_min_dot * np.less(x, a_min), ans)",
         "rt.broadcast_like(a_max_dot * np.greater(x, a_max), ans)"))
# casts: to a float dtype the identity (in that dtype); to an integer or bool dtype piecewise
# constant, so no derivative. The helpers decide from the result's dtype, which covers a dtype
# known only at run time (`x.astype(t)`); the integer scalar types are declared below. (np.float32(x)
# has no rule: x.astype(np.float32) is the cast to write.)
defrule([np.asarray, np.array, np.float64, builtins.float], "x, dtype=None",
        "rt.cast_vjp(g, x, ans)", "rt.as_tangent(x_dot, ans)", discrete="dtype", cast="dtype")
# a cast to an integer or bool dtype known when the code is generated: its result is a constant
defnondiff("op:DiscreteCast")

# ---- reductions --------------------------------------------------------------------------
_RED = "x, axis=None, dtype=None, out=None, keepdims=False"
defrule([np.sum, ".sum"], _RED, "rt.sum_vjp(g, x, axis, keepdims)", "rt.sum_jvp(x_dot, axis, keepdims)",
        discrete="axis dtype out keepdims", dense_jvp="np.sum(x_dot, axis=axis, keepdims=keepdims)")
defrule([np.mean, ".mean"], _RED, "rt.sum_vjp(g, x, axis, keepdims) / rt.count(x, axis)",
        "rt.sum_jvp(x_dot, axis, keepdims) / rt.count(x, axis)", discrete="axis dtype out keepdims",
        dense_jvp="np.mean(x_dot, axis=axis, keepdims=keepdims)")
declare([np.sum, np.mean], odd=("x", "axis", "keepdims"))     # not dtype=, initial=, where=
defrule([np.max, np.amax, ".max"], "x, axis=None, out=None, keepdims=False",
        "rt.extreme_vjp(g, x, ans, axis, keepdims)",
        "rt.extreme_jvp(x_dot, x, ans, axis, keepdims)", discrete="axis out keepdims")
defrule([np.min, np.amin, ".min"], "x, axis=None, out=None, keepdims=False",
        "rt.extreme_vjp(g, x, ans, axis, keepdims)",
        "rt.extreme_jvp(x_dot, x, ans, axis, keepdims)", discrete="axis out keepdims")
defrule([np.prod, ".prod"], _RED, "rt.prod_vjp(g, x, axis, keepdims)",
        "rt.prod_jvp(x_dot, x, axis, keepdims)", discrete="axis dtype out keepdims")
_LSE_W = "np.exp(x - rt.expand_reduced(ans, x, axis, keepdims))"
defrule(scipy.special.logsumexp, "x, axis=None, b=None, keepdims=False",
        (f"rt.sum_vjp(g, x, axis, keepdims) * {_LSE_W} * rt.shapes.one_if_none(b)",
         None, f"rt.unbroadcast(rt.sum_vjp(g, x, axis, keepdims) * {_LSE_W}, b)"),
        (f"np.sum(x_dot * {_LSE_W} * rt.shapes.one_if_none(b), axis=axis, keepdims=keepdims)",
         None, f"np.sum(rt.broadcast_like(b_dot, x) * {_LSE_W}, axis=axis, keepdims=keepdims)"),
        discrete="axis keepdims")

# ---- linear algebra and shapes -----------------------------------------------------------
defrule(["op:MatMult", np.matmul], "x, y", ("rt.matmul_vjp_x(g, x, y)", "rt.matmul_vjp_y(g, x, y)"),
        ("rt.matmul(x_dot, y)", "rt.matmul(x, y_dot)"), primal="rt.matmul(x, y)", primal_sparse=True,
        dense_jvp=("x_dot @ y", "x @ y_dot"))
# np.dot is matmul only for 1-D y or operands of at most 2 axes (rt.products.dot tells them apart)
defrule([np.dot, ".dot"], "x, y", ("rt.products.dot_vjp_x(g, x, y)", "rt.products.dot_vjp_y(g, x, y)"),
        ("rt.products.dot(x_dot, y)", "rt.products.dot(x, y_dot)"), primal="rt.products.dot(x, y)")
defrule([np.transpose, ".transpose"], "x, axes=None", "rt.transpose_vjp(g, axes)", "rt.shapes.lin(np.transpose, x_dot, axes)",
        discrete="axes")
defrule(".T", "x", "rt.transpose_vjp(g)", "rt.transpose_vjp(x_dot)")
defrule([np.reshape, ".reshape", np.squeeze, ".squeeze", np.expand_dims, np.ravel, ".ravel", ".flatten",
         np.atleast_1d, np.atleast_2d, np.atleast_3d],
        "x, *shape, **kwargs", "rt.reshape_like(g, x)", "rt.reshape_like(x_dot, ans)", discrete="shape")
defrule([".astype", np.astype], "x, dtype, *args, **kwargs", "rt.cast_vjp(g, x, ans)", "rt.as_tangent(x_dot, ans)",
        discrete="dtype", cast="dtype")
defrule([".copy", np.copy], "x, *args, **kwargs", "g", "x_dot")
defrule([np.concatenate], "arrays, axis=0", "rt.concatenate_vjp(g, arrays, axis)",
        "np.concatenate(rt.tangent_list(arrays_dot, arrays), axis=axis)", discrete="axis")
defrule([np.stack], "arrays, axis=0", "rt.unstack(g, axis, arrays)",
        "np.stack(rt.tangent_list(arrays_dot, arrays), axis=axis)", discrete="axis")
# np.r_[a, b, ...] / np.c_[a, b, ...]: called by subscripting the object, its items the arguments
# (arrays and numbers; a slice or a string directive among the items is refused when it matters)
defrule(np.r_, "*items", "rt.index_join_vjp(g, items, k, 'r')", "rt.index_join_jvp(items_dot, items, k, 'r')",
        subscript=True)
defrule(np.c_, "*items", "rt.index_join_vjp(g, items, k, 'c')", "rt.index_join_jvp(items_dot, items, k, 'c')",
        subscript=True)
# np.s_[...] / np.index_exp[...]: an index object built by subscripting; it carries no derivative
defnondiff([np.s_, np.index_exp], subscript=True)
# ---- Python builtins over lists and arrays (an array's items are its rows along axis 0) -------
defrule([builtins.sum], "xs, start=0", ("rt.sum_items_vjp(g, xs)", "rt.unbroadcast(g, start)"),
        ("rt.sum_items_jvp(xs_dot, xs)", "start_dot"))
defrule([builtins.max, builtins.min], "x, *others",
        ("rt.builtin_extreme_vjp(g, ans, x, others, -1)", "rt.builtin_extreme_vjp(g, ans, x, others, k)"),
        ("rt.builtin_extreme_jvp(x_dot, ans, x, others, -1)", "rt.builtin_extreme_jvp(others_dot, ans, x, others, k)"))
defrule(".item", "x, *args", "rt.item_vjp(g, x, args)", "rt.item_jvp(x_dot, x, args)")
defrule(".tolist", "x", "rt.tolist_vjp(g, x)", "rt.tolist_jvp(x_dot, x)")

defrule([np.square], "x", "g * 2.0 * x", "x_dot * 2.0 * x")
defrule([np.reciprocal], "x", "-g * ans ** 2", "-x_dot * ans ** 2")
defrule([np.sinh, math.sinh], "x", "g * np.cosh(x)", "x_dot * np.cosh(x)")
defrule([np.cosh, math.cosh], "x", "g * np.sinh(x)", "x_dot * np.sinh(x)")
defrule([np.arcsin, math.asin], "x", "g / np.sqrt(1.0 - x ** 2)", "x_dot / np.sqrt(1.0 - x ** 2)")
defrule([np.arccos, math.acos], "x", "-g / np.sqrt(1.0 - x ** 2)", "-x_dot / np.sqrt(1.0 - x ** 2)")
defrule([np.log2], "x", "g / (x * np.log(2.0))", "x_dot / (x * np.log(2.0))")
defrule([np.log10], "x", "g / (x * np.log(10.0))", "x_dot / (x * np.log(10.0))")
defrule([scipy.special.expit], "x", "g * ans * (1.0 - ans)", "x_dot * ans * (1.0 - ans)")
defrule([np.var, ".var"], "x, axis=None, dtype=None, out=None, ddof=0, keepdims=False",
        "rt.var_vjp(g, x, axis, ddof, keepdims)", "rt.var_jvp(x_dot, x, axis, ddof, keepdims)",
        discrete="axis dtype out ddof keepdims")
defrule([np.std, ".std"], "x, axis=None, dtype=None, out=None, ddof=0, keepdims=False",
        "rt.var_vjp(rt.reductions.half_over(g, ans), x, axis, ddof, keepdims)",     # 0 at zero variance
        "rt.reductions.half_over(rt.var_jvp(x_dot, x, axis, ddof, keepdims), ans)", discrete="axis dtype out ddof keepdims")
# run through rt.cumsum: a float array's running sums by srcad's kernel, numpy's bits, faster
defrule([np.cumsum, ".cumsum"], "x, axis=None, dtype=None, out=None", "rt.cumsum_vjp(g, x, axis)",
        "rt.shapes.lin(rt.cumsum, x_dot, axis)", discrete="axis dtype out", primal="rt.cumsum(x, axis, dtype, out)")
defrule([np.diff], "x, n=1, axis=-1", "rt.diff_vjp(g, x, n, axis)", "rt.shapes.lin(np.diff, x_dot, n, axis)",
        discrete="n axis")
defrule([np.trace, ".trace"], "x, offset=0, axis1=0, axis2=1, dtype=None, out=None",
        "rt.shapes.trace_vjp(g, x, offset, axis1, axis2)", "rt.shapes.lin(np.trace, x_dot, offset, axis1, axis2)",
        discrete="offset axis1 axis2 dtype out")
defrule([np.outer], "x, y", ("rt.outer_vjp(g, x, y)", "rt.outer_vjp(rt.transpose_vjp(g), y, x)"),
        ("np.outer(x_dot, y)", "np.outer(x, y_dot)"))
defrule([np.vstack, np.row_stack], "tup", "rt.joined_vjp(g, tup, 'v')", "np.vstack(rt.tangent_list(tup_dot, tup))")
defrule([np.hstack], "tup", "rt.joined_vjp(g, tup, 'h')", "np.hstack(rt.tangent_list(tup_dot, tup))")
defrule([np.linalg.inv], "x", "-rt.matmul_vjp_x(rt.matmul_vjp_y(g, ans, ans), ans, ans)", "-(ans @ x_dot @ ans)")
defrule([np.linalg.det], "x", "rt.linalg.expand2(g * ans) * rt.linalg.T(np.linalg.inv(x))",
        "ans * np.sum(rt.linalg.T(np.linalg.inv(x)) * x_dot, axis=(-2, -1))")     # stacks: one det per matrix
defrule([np.linalg.solve], "a, b", ("rt.unbroadcast(rt.solve_vjp_a(g, a, ans), a)",
                                    "rt.unbroadcast(rt.solve_vjp_b(g, a), b)"),
        ("-rt.products.solve_as(a, rt.products.solve_apply(a_dot, ans))", "np.linalg.solve(a, b_dot)"))
defrule(["op:Mod", np.mod, np.remainder], "x, y", ("g", "-g * np.floor_divide(x, y)"),
        ("x_dot", "-y_dot * np.floor_divide(x, y)"), broadcast=True)

defrule([np.einsum], "subscripts, *operands", (None, "rt.einsum_vjp(g, subscripts, operands, k)"),
        (None, "rt.einsum_jvp(subscripts, operands, k, operands_dot)"))

# ---- Python containers -------------------------------------------------------------------
# (of a dict: its keys, which carry no derivative)
defrule([builtins.list, builtins.tuple], "x", "rt.as_cotangent(rt.loop_sequence_vjp(g, x), x)",
        "list(rt.loop_sequence_jvp(x_dot, x))")
defrule(builtins.sorted, "x, key=None, reverse=False", "rt.sorted_vjp(g, x, key, reverse)",
        "rt.sorted_jvp(x_dot, x, key, reverse)", discrete="key reverse")
# `a | b`: the union of two dicts (b's value wins at a shared key); of integers or masks, no derivative
defrule("op:BitOr", "x, y", ("rt.union_vjp(g, x, y, 0)", "rt.union_vjp(g, x, y, 1)"),
        ("rt.union_jvp(x_dot, x, y, 0)", "rt.union_jvp(y_dot, x, y, 1)"), jvp_join=True)
# `x[idx]` with a variable index runs as rt.getitem, which copies the rows of a large integer-array
# gather in parallel; constant indices and slices stay as written
defrule("op:Subscript", "x, idx", "rt.index_vjp(g, x, idx)", "rt.index_jvp(x_dot, x, idx)",
        accumulate="rt.add_at(__bar__, x, idx, g)", primal="rt.getitem(x, idx)",
        primal_when=lambda args: isinstance(args["idx"], ast.Name), discrete="idx", primal_array_index=True)

# ---- more elementwise functions ------------------------------------------------------------
defrule([np.arctan2, math.atan2], "x, y", ("g * y / (x ** 2 + y ** 2)", "-g * x / (x ** 2 + y ** 2)"),
        ("x_dot * y / (x ** 2 + y ** 2)", "-y_dot * x / (x ** 2 + y ** 2)"), broadcast=True)
defrule([np.hypot, math.hypot], "x, y", ("g * x / ans", "g * y / ans"), ("x_dot * x / ans", "y_dot * y / ans"),
        broadcast=True)
defrule(np.logaddexp, "x, y", ("g * np.exp(x - ans)", "g * np.exp(y - ans)"),
        ("x_dot * np.exp(x - ans)", "y_dot * np.exp(y - ans)"), broadcast=True)
defrule(np.logaddexp2, "x, y", ("g * np.exp2(x - ans)", "g * np.exp2(y - ans)"),
        ("x_dot * np.exp2(x - ans)", "y_dot * np.exp2(y - ans)"), broadcast=True)
defrule(np.fmax, "x, y", ("g * rt.pick_weight(x, y)", "g * rt.pick_weight(y, x)"),
        ("x_dot * rt.pick_weight(x, y)", "y_dot * rt.pick_weight(y, x)"), broadcast=True)
defrule(np.fmin, "x, y", ("g * rt.pick_weight(y, x)", "g * rt.pick_weight(x, y)"),
        ("x_dot * rt.pick_weight(y, x)", "y_dot * rt.pick_weight(x, y)"), broadcast=True)
defrule(np.exp2, "x", "g * ans * np.log(2.0)", "x_dot * ans * np.log(2.0)")
defrule([np.arcsinh, math.asinh], "x", "g / np.sqrt(x ** 2 + 1.0)", "x_dot / np.sqrt(x ** 2 + 1.0)")
defrule([np.arccosh, math.acosh], "x", "g / np.sqrt(x ** 2 - 1.0)", "x_dot / np.sqrt(x ** 2 - 1.0)")
defrule([np.arctanh, math.atanh], "x", "g / (1.0 - x ** 2)", "x_dot / (1.0 - x ** 2)")
defrule(np.cbrt, "x", "g / (3.0 * ans ** 2)", "x_dot / (3.0 * ans ** 2)")
defrule([np.deg2rad, np.radians], "x", "g * (np.pi / 180.0)", "x_dot * (np.pi / 180.0)")
defrule([np.rad2deg, np.degrees], "x", "g * (180.0 / np.pi)", "x_dot * (180.0 / np.pi)")
# sinc'(x) = (cos(pi x) - sinc(x)) / x, and 0 at x = 0
defrule(np.sinc, "x", "g * (np.cos(np.pi * x) - ans) / np.where(x == 0, np.inf, x)",
        "x_dot * (np.cos(np.pi * x) - ans) / np.where(x == 0, np.inf, x)")

# ---- sorting, gathering, tiling and rearranging ---------------------------------------------
defrule([np.sort], "x, axis=-1, kind=None, order=None", "rt.shapes.sort_vjp(g, x, axis)",
        "rt.shapes.sort_jvp(x_dot, x, axis)", discrete="axis kind order")
defrule(".take", "a, indices, axis=None, out=None, mode='raise'", "rt.shapes.take_vjp(g, a, indices, axis, mode)",
        "rt.shapes.lin(np.take, a_dot, indices, axis, None, mode)", discrete="indices axis out mode")
defrule(np.take_along_axis, "arr, indices, axis", "rt.shapes.take_along_axis_vjp(g, arr, indices, axis)",
        "rt.shapes.lin(np.take_along_axis, arr_dot, indices, axis)", discrete="indices axis")
defrule(np.tile, "a, reps", "rt.shapes.tile_vjp(g, a, reps)", "rt.shapes.lin(np.tile, a_dot, reps)", discrete="reps")
defrule([np.repeat, ".repeat"], "a, repeats, axis=None", "rt.shapes.repeat_vjp(g, a, repeats, axis)",
        "rt.shapes.lin(np.repeat, a_dot, repeats, axis)", discrete="repeats axis")
defrule(np.pad, "array, pad_width, mode='constant', constant_values=0",
        ("rt.shapes.pad_vjp(g, array, pad_width, mode)", "0", "0",
         "rt.unbroadcast(np.sum(g) - np.sum(rt.shapes.pad_vjp(g, array, pad_width, mode)), constant_values)"),
        ("rt.shapes.pad_jvp(array_dot, pad_width, mode)", "0", "0",
         "np.pad(np.zeros(np.shape(array)), pad_width, constant_values=constant_values_dot)"))
defrule(np.flip, "m, axis=None", "rt.shapes.lin(np.flip, g, axis)", "rt.shapes.lin(np.flip, m_dot, axis)", discrete="axis")
defrule(np.fliplr, "m", "rt.shapes.lin(np.fliplr, g)", "rt.shapes.lin(np.fliplr, m_dot)")
defrule(np.flipud, "m", "rt.shapes.lin(np.flipud, g)", "rt.shapes.lin(np.flipud, m_dot)")
defrule(np.roll, "a, shift, axis=None", "rt.shapes.lin(np.roll, g, np.negative(shift), axis)", "rt.shapes.lin(np.roll, a_dot, shift, axis)",
        discrete="shift axis")
defrule(np.rot90, "m, k=1, axes=(0, 1)", "rt.shapes.lin(np.rot90, g, np.negative(k), axes)", "rt.shapes.lin(np.rot90, m_dot, k, axes)",
        discrete="k axes")
defrule(np.diag, "v, k=0", "rt.shapes.diag_vjp(g, v, k)", "rt.shapes.lin(np.diag, v_dot, k)", discrete="k")
defrule([np.diagonal, ".diagonal"], "a, offset=0, axis1=0, axis2=1",
        "rt.shapes.diagonal_vjp(g, a, offset, axis1, axis2)", "rt.shapes.lin(np.diagonal, a_dot, offset, axis1, axis2)",
        discrete="offset axis1 axis2")
defrule(np.triu, "m, k=0", "rt.shapes.lin(np.triu, g, k)", "rt.shapes.lin(np.triu, m_dot, k)", discrete="k")
defrule(np.tril, "m, k=0", "rt.shapes.lin(np.tril, g, k)", "rt.shapes.lin(np.tril, m_dot, k)", discrete="k")
defrule(np.broadcast_to, "array, shape", "rt.unbroadcast(g, array)", "rt.shapes.lin(np.broadcast_to, array_dot, shape)",
        discrete="shape")
defrule(np.moveaxis, "a, source, destination", "rt.shapes.lin(np.moveaxis, g, destination, source)",
        "rt.shapes.lin(np.moveaxis, a_dot, source, destination)", discrete="source destination")
defrule([np.split, np.array_split], "ary, indices_or_sections, axis=0", "rt.shapes.split_vjp(g, ans, axis)",
        "np.split(ary_dot, np.cumsum([np.shape(p)[axis] for p in ans])[:-1], axis=axis)",
        discrete="indices_or_sections axis")
defrule(np.select, "condlist, choicelist, default=0",
        ("0", "rt.shapes.select_vjp(g, condlist, choicelist)", "rt.shapes.select_default_vjp(g, condlist, default)"),
        ("0", "rt.broadcast_like(np.select(condlist, rt.tangent_list(choicelist_dot, choicelist), 0.0), ans)",
         "rt.broadcast_like(np.select(condlist, [np.zeros(np.shape(ans))] * len(condlist), default_dot), ans)"))
defrule([np.cumprod, ".cumprod"], "x, axis=None, dtype=None, out=None", "rt.reductions.cumprod_vjp(g, x, axis)",
        "rt.reductions.cumprod_jvp(x_dot, x, axis)", discrete="axis dtype out")     # no division: x may hold 0

defrule(np.rollaxis, "a, axis, start=0", "rt.shapes.rollaxis_vjp(g, a, axis, start)", "rt.shapes.lin(np.rollaxis, a_dot, axis, start)",
        discrete="axis start")
defrule([np.partition], "x, kth, axis=-1", "rt.shapes.partition_vjp(g, x, kth, axis)",
        "rt.shapes.partition_jvp(x_dot, x, kth, axis)", discrete="kth axis")
defrule(np.vsplit, "ary, indices_or_sections", "rt.shapes.split_vjp(g, ans, 0)", "rt.shapes.lin(np.vsplit, ary_dot, indices_or_sections)",
        discrete="indices_or_sections")
defrule(np.hsplit, "ary, indices_or_sections", "rt.shapes.split_vjp(g, ans, min(1, np.ndim(ary) - 1))",
        "rt.shapes.lin(np.hsplit, ary_dot, indices_or_sections)", discrete="indices_or_sections")
defrule(np.dsplit, "ary, indices_or_sections", "rt.shapes.split_vjp(g, ans, 2)", "rt.shapes.lin(np.dsplit, ary_dot, indices_or_sections)",
        discrete="indices_or_sections")
defrule(np.dstack, "tup", "rt.shapes.stacked_vjp(g, tup, 'd')", "np.dstack(rt.tangent_list(tup_dot, tup))")
defrule(np.column_stack, "tup", "rt.shapes.stacked_vjp(g, tup, 'c')", "np.column_stack(rt.tangent_list(tup_dot, tup))")
defrule(np.nan_to_num, "x, copy=True, nan=0.0, posinf=None, neginf=None", "g * np.isfinite(x)",
        "x_dot * np.isfinite(x)")

# ---- parts of real arrays: np.real, np.real_if_close and np.conj are the identity there, np.imag
# and np.angle constant (a complex argument: MissingRuleError, srcad differentiates real arrays)
defrule([np.real, ".real"], "x", "rt.elementwise.real_only(g, x, 'np.real')",
        "rt.elementwise.real_only(x_dot, x, 'np.real')")
defrule([np.conj, np.conjugate, ".conj", ".conjugate"], "x", "rt.elementwise.real_only(g, x, 'np.conj')",
        "rt.elementwise.real_only(x_dot, x, 'np.conj')")
defrule(np.real_if_close, "x, tol=100", "rt.elementwise.real_only(g, x, 'np.real_if_close')",
        "rt.elementwise.real_only(x_dot, x, 'np.real_if_close')", discrete="tol")
defrule([np.imag, ".imag"], "x", "rt.elementwise.real_only(0.0 * g, x, 'np.imag')",
        "rt.elementwise.real_only(0.0 * x_dot, x, 'np.imag')")
defrule(np.angle, "x, deg=False", "rt.elementwise.real_only(0.0 * g, x, 'np.angle')",
        "rt.elementwise.real_only(0.0 * x_dot, x, 'np.angle')", discrete="deg")
defrule(np.fft.fftshift, "x, axes=None", "rt.shapes.lin(np.fft.ifftshift, g, axes)",
        "rt.shapes.lin(np.fft.fftshift, x_dot, axes)", discrete="axes")
defrule(np.fft.ifftshift, "x, axes=None", "rt.shapes.lin(np.fft.fftshift, g, axes)",
        "rt.shapes.lin(np.fft.ifftshift, x_dot, axes)", discrete="axes")
defrule(np.delete, "arr, obj, axis=None", "rt.shapes.delete_vjp(g, arr, obj, axis)",
        "rt.shapes.lin(np.delete, arr_dot, obj, axis)", discrete="obj axis")
defrule(np.append, "arr, values, axis=None",
        ("rt.shapes.append_vjp(g, arr, values, axis, 'arr')", "rt.shapes.append_vjp(g, arr, values, axis, 'values')"),
        ("rt.shapes.append_jvp(arr_dot, arr, values, axis, 'arr')",
         "rt.shapes.append_jvp(values_dot, arr, values, axis, 'values')"), jvp_join=True, discrete="axis")
# np.gradient is linear in f; the spacings (varargs) have no rule (MissingRuleError when active)
defrule(np.gradient, "f, *varargs, axis=None, edge_order=1",
        ("rt.shapes.gradient_vjp(g, f, varargs, axis, edge_order)",),
        ("rt.shapes.gradient_jvp(f_dot, f, varargs, axis, edge_order)",), discrete="axis edge_order")
# convolution: bilinear; the adjoint of an operand is the full-shaped cotangent convolved with the
# other operand flipped ('same' and 'valid' cut the full result at its centre)
defrule(np.convolve, "a, v, mode='full'",
        ("rt.shapes.convolve_vjp_a(g, a, v, mode, 'np')", "rt.shapes.convolve_vjp_v(g, a, v, mode, 'np')"),
        ("rt.shapes.convolve_jvp(a_dot, v, mode, 'np')", "rt.shapes.convolve_jvp(a, v_dot, mode, 'np')"),
        jvp_join=True, discrete="mode")
defrule(scipy.signal.convolve, "in1, in2, mode='full', method='auto'",
        ("rt.shapes.convolve_vjp_a(g, in1, in2, mode, 'sp')", "rt.shapes.convolve_vjp_v(g, in1, in2, mode, 'sp')"),
        ("rt.shapes.convolve_jvp(in1_dot, in2, mode, 'sp')", "rt.shapes.convolve_jvp(in1, in2_dot, mode, 'sp')"),
        jvp_join=True, discrete="mode method")

# ---- products -------------------------------------------------------------------------------
defrule(np.tensordot, "a, b, axes=2",
        ("rt.shapes.tensordot_vjp_a(g, a, b, axes)", "rt.shapes.tensordot_vjp_b(g, a, b, axes)"),
        ("np.tensordot(a_dot, b, axes)", "np.tensordot(a, b_dot, axes)"), discrete="axes")
defrule(np.inner, "a, b",
        ("rt.shapes.tensordot_vjp_a(g, a, b, rt.shapes.inner_axes(a, b))",
         "rt.shapes.tensordot_vjp_b(g, a, b, rt.shapes.inner_axes(a, b))"),
        ("np.inner(a_dot, b)", "np.inner(a, b_dot)"))
defrule(np.kron, "a, b", ("rt.shapes.kron_vjp_a(g, a, b)", "rt.shapes.kron_vjp_b(g, a, b)"),
        ("np.kron(a_dot, b)", "np.kron(a, b_dot)"))
# 2- and 3-vectors, along any axes (axisa/axisb/axisc, or axis for all three)
_CX = "axisa, axisb, axisc, axis"
defrule(np.cross, "a, b, axisa=-1, axisb=-1, axisc=-1, axis=None",
        (f"rt.shapes.cross_vjp_a_axes(g, a, b, {_CX})", f"rt.shapes.cross_vjp_b_axes(g, a, b, {_CX})"),
        (f"rt.shapes.cross_jvp(a_dot, b, ans, {_CX})", f"rt.shapes.cross_jvp(a, b_dot, ans, {_CX})"),
        jvp_join=True, discrete="axisa axisb axisc axis")

# their adjoint helpers: linear in the cotangent (and in the other operand of a product)
defrule(rt.shapes.sort_vjp, "g, x, axis=-1", None, ("rt.shapes.sort_vjp(g_dot, x, axis)", "0"), discrete="axis")
defrule(rt.shapes.sort_jvp, "x_dot, x, axis=-1", None, ("rt.shapes.sort_jvp(x_dot_dot, x, axis)", "0"),
        discrete="axis")
defrule(rt.shapes.take_vjp, "g, a, indices, axis=None, mode='raise'", None,
        ("rt.shapes.take_vjp(g_dot, a, indices, axis, mode)", "0"), discrete="indices axis mode")
defrule(rt.shapes.take_along_axis_vjp, "g, arr, indices, axis", None,
        ("rt.shapes.take_along_axis_vjp(g_dot, arr, indices, axis)", "0"), discrete="indices axis")
defrule(rt.shapes.tile_vjp, "g, a, reps", None, ("rt.shapes.tile_vjp(g_dot, a, reps)", "0"), discrete="reps")
defrule(rt.shapes.repeat_vjp, "g, a, repeats, axis=None", None, ("rt.shapes.repeat_vjp(g_dot, a, repeats, axis)", "0"),
        discrete="repeats axis")
defrule(rt.shapes.pad_vjp, "g, array, pad_width, mode='constant'", None,
        ("rt.shapes.pad_vjp(g_dot, array, pad_width, mode)", "0"), discrete="pad_width mode")
defrule(rt.shapes.pad_jvp, "a_dot, pad_width, mode='constant'", None, "rt.shapes.pad_jvp(a_dot_dot, pad_width, mode)",
        discrete="pad_width mode")
defrule(rt.shapes.diag_vjp, "g, v, k=0", None, ("rt.shapes.diag_vjp(g_dot, v, k)", "0"), discrete="k")
defrule(rt.shapes.diagonal_vjp, "g, a, offset=0, axis1=0, axis2=1", None,
        ("rt.shapes.diagonal_vjp(g_dot, a, offset, axis1, axis2)", "0"), discrete="offset axis1 axis2")
defrule(rt.shapes.tensordot_vjp_a, "g, a, b, axes=2", None,
        ("rt.shapes.tensordot_vjp_a(g_dot, a, b, axes)", "0", "rt.shapes.tensordot_vjp_a(g, a, b_dot, axes)"),
        discrete="axes")
defrule(rt.shapes.tensordot_vjp_b, "g, a, b, axes=2", None,
        ("rt.shapes.tensordot_vjp_b(g_dot, a, b, axes)", "rt.shapes.tensordot_vjp_b(g, a_dot, b, axes)", "0"),
        discrete="axes")
defrule(rt.shapes.kron_vjp_a, "g, a, b", None,
        ("rt.shapes.kron_vjp_a(g_dot, a, b)", "0", "rt.shapes.kron_vjp_a(g, a, b_dot)"))
defrule(rt.shapes.kron_vjp_b, "g, a, b", None,
        ("rt.shapes.kron_vjp_b(g_dot, a, b)", "rt.shapes.kron_vjp_b(g, a_dot, b)", "0"))
defrule(rt.shapes.cross_vjp_a_axes, "g, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None", None,
        (f"rt.shapes.cross_vjp_a_axes(g_dot, a, b, {_CX})", "0", f"rt.shapes.cross_vjp_a_axes(g, a, b_dot, {_CX})"),
        jvp_join=True, discrete="axisa axisb axisc axis")
defrule(rt.shapes.cross_vjp_b_axes, "g, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None", None,
        (f"rt.shapes.cross_vjp_b_axes(g_dot, a, b, {_CX})", f"rt.shapes.cross_vjp_b_axes(g, a_dot, b, {_CX})", "0"),
        jvp_join=True, discrete="axisa axisb axisc axis")
defrule(rt.shapes.cross_jvp, "a, b, like, axisa=-1, axisb=-1, axisc=-1, axis=None", None,
        (f"rt.shapes.cross_jvp(a_dot, b, like, {_CX})", f"rt.shapes.cross_jvp(a, b_dot, like, {_CX})", "0"),
        jvp_join=True, discrete="axisa axisb axisc axis")
defrule(rt.shapes.trace_vjp, "g, x, offset=0, axis1=0, axis2=1", None,
        ("rt.shapes.trace_vjp(g_dot, x, offset, axis1, axis2)", "0"), discrete="offset axis1 axis2")
defrule(rt.elementwise.real_only, "v, x, name='np.real'", None, ("rt.elementwise.real_only(v_dot, x, name)", "0"),
        discrete="name")
defrule(rt.shapes.delete_vjp, "g, arr, obj, axis=None", None,
        ("rt.shapes.delete_vjp(g_dot, arr, obj, axis)", "0"), discrete="obj axis")
defrule(rt.shapes.append_vjp, "g, arr, values, axis=None, which='arr'", None,
        ("rt.shapes.append_vjp(g_dot, arr, values, axis, which)", "0", "0"), discrete="axis which")
defrule(rt.shapes.append_jvp, "d, arr, values, axis=None, which='arr'", None,
        ("rt.shapes.append_jvp(d_dot, arr, values, axis, which)", "0", "0"), discrete="axis which")
defrule(rt.shapes.gradient_vjp, "g, f, varargs=(), axis=None, edge_order=1", None,
        ("rt.shapes.gradient_vjp(g_dot, f, varargs, axis, edge_order)", "0"), discrete="axis edge_order")
defrule(rt.shapes.gradient_jvp, "d, f, varargs=(), axis=None, edge_order=1", None,
        ("rt.shapes.gradient_jvp(d_dot, f, varargs, axis, edge_order)", "0"), discrete="axis edge_order")
defrule(rt.shapes.convolve_vjp_a, "g, a, v, mode='full', kind='np'", None,
        ("rt.shapes.convolve_vjp_a(g_dot, a, v, mode, kind)", "0", "rt.shapes.convolve_vjp_a(g, a, v_dot, mode, kind)"),
        jvp_join=True, discrete="mode kind")
defrule(rt.shapes.convolve_vjp_v, "g, a, v, mode='full', kind='np'", None,
        ("rt.shapes.convolve_vjp_v(g_dot, a, v, mode, kind)", "rt.shapes.convolve_vjp_v(g, a_dot, v, mode, kind)", "0"),
        jvp_join=True, discrete="mode kind")
defrule(rt.shapes.convolve_jvp, "a, v, mode='full', kind='np'", None,
        ("rt.shapes.convolve_jvp(a_dot, v, mode, kind)", "rt.shapes.convolve_jvp(a, v_dot, mode, kind)"),
        jvp_join=True, discrete="mode kind")
# np.add.at(y, idx, v) / np.subtract.at, written y[...] = rt.add_at_value(y, idx, v, op) by frontend/inplace.py
defrule(rt.add_at_value, "y, idx, v, op='add'", ("g", None, "rt.add_at_vjp_v(g, idx, v, op)"),
        ("y_dot", None, "rt.add_at_jvp_v(v_dot, ans, idx, op)"), jvp_join=True, discrete="idx op")
defrule(rt.add_at_vjp_v, "g, idx, v, op='add'", None, ("rt.add_at_vjp_v(g_dot, idx, v, op)", None, "0"),
        discrete="idx op")
defrule(rt.add_at_jvp_v, "d, like, idx, op='add'", None, ("rt.add_at_jvp_v(d_dot, like, idx, op)", "0"),
        discrete="idx op")
declare(np.add.at, written_as=("add_at_value", "add"))
declare(np.subtract.at, written_as=("add_at_value", "subtract"))
# ODE solvers have no rule: the error says what to write instead
declare([scipy.integrate.odeint, scipy.integrate.solve_ivp],
        refusal="write the integrator's loop in NumPy (say fixed-step Runge-Kutta over the time grid), which "
                "srcad differentiates, or put the solve in a function of your own and give it a rule with "
                "srcad.custom_vjp (the adjoint ODE): SciPy's ODE solvers have no rule in srcad")

# ---- constructors whose values come from their arguments ---------------------------------
defrule(np.full, "shape, fill_value, dtype=None, order='C'", (None, "rt.unbroadcast(g, fill_value)"),
        (None, "rt.broadcast_like(fill_value_dot, ans)"), discrete="shape dtype order")
defrule(np.full_like, "a, fill_value, dtype=None, order='K', subok=True, shape=None",
        ("0", "rt.unbroadcast(g, fill_value)"), ("0", "rt.broadcast_like(fill_value_dot, ans)"),
        discrete="dtype order subok shape")
_LIN = "num, endpoint, retstep, axis"
defrule(np.linspace, "start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0",
        (f"rt.shapes.linspace_vjp(g, start, stop, {_LIN}, 'start')",
         f"rt.shapes.linspace_vjp(g, start, stop, {_LIN}, 'stop')"),
        (f"rt.shapes.linspace_jvp(start_dot, {_LIN}, 'start', ans)",
         f"rt.shapes.linspace_jvp(stop_dot, {_LIN}, 'stop', ans)"), discrete="num endpoint retstep dtype axis")
_GEO = "num, endpoint, False, axis"      # ans = start * (stop / start) ** t
defrule(np.geomspace, "start, stop, num=50, endpoint=True, dtype=None, axis=0",
        (f"rt.shapes.linspace_vjp(g * ans, start, stop, {_GEO}, 'start') / start",
         f"rt.shapes.linspace_vjp(g * ans, start, stop, {_GEO}, 'stop') / stop"),
        (f"ans * rt.shapes.linspace_jvp(start_dot / start, {_GEO}, 'start', ans)",
         f"ans * rt.shapes.linspace_jvp(stop_dot / stop, {_GEO}, 'stop', ans)"), discrete="num endpoint dtype axis")
defrule(np.logspace, "start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0",
        (f"rt.shapes.linspace_vjp(g * ans, start, stop, {_GEO}, 'start') * np.log(base)",
         f"rt.shapes.linspace_vjp(g * ans, start, stop, {_GEO}, 'stop') * np.log(base)"),
        (f"ans * rt.shapes.linspace_jvp(start_dot * np.log(base), {_GEO}, 'start', ans)",
         f"ans * rt.shapes.linspace_jvp(stop_dot * np.log(base), {_GEO}, 'stop', ans)"),
        discrete="num endpoint dtype axis")
# np.arange(start, stop, step): start + k * step (with one argument, np.arange(stop), constant)
defrule(np.arange, "start, stop=None, step=None, dtype=None",
        ("rt.shapes.arange_vjp(g, stop, 'start')", "0", "rt.shapes.arange_vjp(g, stop, 'step')"),
        ("rt.shapes.arange_jvp(start_dot, stop, 'start', ans)", "0",
         "rt.shapes.arange_jvp(step_dot, stop, 'step', ans)"), discrete="dtype")
defrule(np.bincount, "x, weights=None, minlength=0", (None, "rt.shapes.bincount_vjp(g, x)"),
        (None, "np.bincount(x, weights_dot, minlength)"), discrete="minlength")
# their adjoint helpers (linear in their first argument; the others lend shapes)
defrule(rt.shapes.linspace_vjp, "g, start, stop, num=50, endpoint=True, retstep=False, axis=0, which='start'", None,
        ("rt.shapes.linspace_vjp(g_dot, start, stop, num, endpoint, retstep, axis, which)", "0", "0"),
        discrete="num endpoint retstep axis which")
defrule(rt.shapes.linspace_jvp, "v_dot, num=50, endpoint=True, retstep=False, axis=0, which='start', like=None", None,
        ("rt.shapes.linspace_jvp(v_dot_dot, num, endpoint, retstep, axis, which, like)",
         None, None, None, None, None, "0"), discrete="num endpoint retstep axis which")
defrule(rt.shapes.arange_vjp, "g, stop, which='start'", None, ("rt.shapes.arange_vjp(g_dot, stop, which)", "0"),
        discrete="which")
defrule(rt.shapes.arange_jvp, "v_dot, stop, which='start', like=None", None,
        ("rt.shapes.arange_jvp(v_dot_dot, stop, which, like)", "0", None, "0"), discrete="which")
defrule(rt.shapes.bincount_vjp, "g, x", None, "rt.shapes.bincount_vjp(g_dot, x)")
defrule(rt.shapes.one_if_none, "b", "g", "b_dot")
# `p.W` with no rule of its own: the field of a namedtuple (a pytree argument)
defrule("op:Field", "x, name, where", "rt.field_vjp(g, x, name, where)", "rt.field_jvp(x_dot, x, name, where)")
# `P(a, b)` for a namedtuple class P (its fields given by position or by name)
defrule("op:NamedTuple", "*items", "rt.item(g, k)", "rt.item_tangent(items_dot, k, len(items))", jvp_join=True)

# ---- outputs carry no derivative ---------------------------------------------------------
# rounding, ordering, counting and testing: piecewise constant results (no derivative)
defnondiff([np.around, ".round", ".argpartition", ".searchsorted", np.lexsort, np.isreal, np.iscomplex,
            np.isneginf, np.isposinf, np.heaviside,
            np.result_type, np.iinfo, np.finfo, np.can_cast, np.min_scalar_type])
# casts to integer or bool types: piecewise constant (no derivative)
defnondiff([np.int64, np.int32, np.int16, np.int8, np.uint64, np.uint32, np.uint16, np.uint8, np.intp,
            np.bool_, rt.discrete_result])
defnondiff([len, range, int, bool, isinstance, print, round,
            np.shape, np.ndim, np.size, np.sign, np.floor, np.ceil, np.round, np.rint,
            np.argmax, np.argmin, np.argsort, np.argwhere, np.nonzero, np.flatnonzero,
            np.zeros, np.ones, np.empty, np.eye, np.identity,
            np.zeros_like, np.ones_like, np.empty_like, np.isnan, np.isinf, np.isfinite,
            np.greater, np.less, np.equal, np.greater_equal, np.less_equal, np.not_equal,
            np.logical_and, np.logical_or, np.logical_not, np.logical_xor, np.signbit, np.trunc, np.fix,
            np.isclose, np.allclose, np.array_equal, np.argpartition, np.digitize, np.tri,
            np.tril_indices, np.triu_indices, np.diag_indices, np.indices, np.unravel_index,
            np.ravel_multi_index,
            np.any, np.all, np.count_nonzero, np.searchsorted,
            ".argmax", ".argmin", ".argsort", ".nonzero", ".any", ".all",
            ".shape", ".ndim", ".size", ".dtype", ".nnz", ".indices", ".indptr", ".row", ".col", ".keys"])
# the other operators on integers and masks (`i // 2`, `m & n`, `~m`), and `x // y`, flat almost everywhere
defnondiff(["op:FloorDiv", "op:BitAnd", "op:BitXor", "op:LShift", "op:RShift", "op:Invert"])
# strings (a dict's keys, which a loop over a dict argument makes look active)
defnondiff([".startswith", ".endswith", ".lower", ".upper", ".strip", ".split", ".isdigit",
            ".isalpha", ".isidentifier"])
# draws whose arguments are integers and shapes (np.random.normal(loc, scale) has no rule: its
# draw moves with loc and scale; write loc + scale * np.random.standard_normal(size))
defnondiff([np.random.default_rng, np.random.rand, np.random.randn, np.random.randint, np.random.seed,
            np.random.standard_normal, np.random.random])

from . import runtime_rules  # noqa: E402,F401  (rules of the helpers generated code calls)
from . import sparse_rules  # noqa: F401
from . import linalg_rules  # noqa: F401,E402
from . import special_rules  # noqa: F401,E402
from . import stats_rules  # noqa: F401,E402
from . import analysis_facts  # noqa: F401,E402  (memory, effects and kinds: what the passes know besides derivatives)

# ---- other spellings of calls srcad has rules for, rewritten by the normalizer ---------------------
# x.transpose(1, 0, 2) is x.transpose((1, 0, 2)); clip(min=, max=) is np.clip(x, min, max); einsum's
# sublist form (literal lists) is its subscripts string; a reduction with where=m reduces
# np.where(m, x, fill) (mean: the sum divided by the mask's count; max/min: `initial` joined in with
# np.maximum/np.minimum, numpy asks for it with where=)
declare(".transpose", spelling=Spelling.AXES)
declare([np.clip, ".clip"], spelling=Spelling.MIN_MAX)
declare(np.einsum, spelling=Spelling.SUBLISTS)
declare([np.sum, ".sum"], spelling=WhereReduction("sum", fill=0))
declare([np.prod, ".prod"], spelling=WhereReduction("prod", fill=1))
declare([np.mean, ".mean"], spelling=WhereReduction("sum", fill=0, mean=True))
declare([np.max, np.amax, ".max"], spelling=WhereReduction("max", joiner="maximum"))
declare([np.min, np.amin, ".min"], spelling=WhereReduction("min", joiner="minimum"))
