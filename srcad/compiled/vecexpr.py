"""vecexpr: the type and the C text of one expression of a scalarised function (smallvec.py).

A type is 'd' (a number: a C double), ('v', L) (a vector of L numbers), ('t', (types...)) (a
tuple of them: a helper's result), 'const' (a number literal), 'none', 'i' (a loop index), 'o' (a
Python object the function only passes on), or None (not known yet: inference goes on). The text
of a value is the list of its numbers' C expressions (one for a number, L for a vector, the
concatenation for a tuple); an expression outside the rules raises Untypable.
"""
import ast

from .common import _HELPER, _LIBM, _MATH_MODULES, _is_call

_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
SMALL = 8        # the longest array scalarised
SUM_MAX = 7      # np.sum of at most 7 numbers is the sequential sum (NumPy's pairwise sum below 8)


class Untypable(Exception):
    """The function is outside smallvec's rules (the message says where)."""


def vec(n):
    return ("v", n)


def is_vec(t):
    return isinstance(t, tuple) and t[0] == "v"


def flat(t):
    """How many numbers a value of type t is."""
    if t in ("d", "const", "none"):
        return 1
    if is_vec(t):
        return t[1]
    if isinstance(t, tuple) and t[0] == "t":
        return sum(flat(u) for u in t[1])
    raise Untypable(f"a value of type {t} has no numbers")


def num(t):
    return t in ("d", "const")


def _const_int(e):
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
        v = _const_int(e.operand)
        return None if v is None else -v
    if isinstance(e, ast.Constant) and type(e.value) is int:
        return e.value
    return None


class VecExpr:
    """Types and renders expressions against one VecFunction's name types."""

    def __init__(self, fn):
        self.fn = fn

    def type_of(self, e):
        return self.top(e)[0]

    def top(self, e):
        """(type, text) of a statement's whole right-hand side: a helper's call is text
        ('call', C name, argument numbers), which only an assignment or a return can take."""
        return self._ev(e)

    def ev(self, e):
        t, s = self._ev(e)
        if isinstance(s, tuple):
            raise Untypable(f"a helper's call inside an expression: {ast.unparse(e)}")
        return t, s

    def names(self, name, t):
        if num(t):
            return [name]
        return [f"{name}__{k}" for k in range(flat(t))]

    def _ev(self, e):
        if isinstance(e, ast.Constant):
            if e.value is None:
                return "none", ["libc.math.NAN"]
            if type(e.value) in (int, float) and abs(e.value) < 2 ** 53:
                return "const", [repr(float(e.value))]
            raise Untypable(f"the constant {e.value!r}")
        if isinstance(e, ast.Name):
            t = self.fn.types.get(e.id)
            if t is None:
                return None, None
            if t == "z":      # a number literal so far: a vector's zero where it meets one
                return "const", [e.id]
            if t == "o":
                return "o", [e.id]
            if t == "i":
                return "i", [f"<double> {e.id}"]
            return t, self.names(e.id, t)
        if isinstance(e, ast.BinOp):
            return self._binop(e)
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
            t, s = self.ev(e.operand)
            if t is None:
                return None, None
            if not (num(t) or is_vec(t)):
                raise Untypable("a sign on a value that is not a number or vector")
            return ("d" if t == "const" else t), [f"(-{x})" if isinstance(e.op, ast.USub) else x for x in s]
        if isinstance(e, ast.List):
            return self._list(e.elts)
        if isinstance(e, ast.Tuple):
            parts = [self.ev(x) for x in e.elts]
            if any(t is None for t, _ in parts):
                return None, None
            if any(not (num(t) or is_vec(t)) for t, _ in parts):
                raise Untypable("a tuple of values that are not numbers or vectors")
            return ("t", tuple("d" if t == "const" else t for t, _ in parts)), [x for _, s in parts for x in s]
        if isinstance(e, ast.Subscript):
            k = _const_int(e.slice)
            if k is None:
                raise Untypable("an element read at an index that is not a constant")
            t, s = self.ev(e.value)
            return self._part(t, s, k)
        if isinstance(e, ast.Call):
            return self._call(e)
        raise Untypable(f"the expression {ast.unparse(e)}")

    def _list(self, elts):
        parts = [self.ev(x) for x in elts]
        if any(t is None for t, _ in parts):
            return None, None
        if not parts or any(not num(t) for t, _ in parts):
            raise Untypable("a list that is not of numbers")
        if len(parts) > SMALL:
            raise Untypable("a list of more numbers than a small vector holds")
        return vec(len(parts)), [s[0] for _, s in parts]

    def _part(self, t, s, k):
        if t is None:
            return None, None
        if is_vec(t):
            if not -t[1] <= k < t[1]:
                raise Untypable("an element read out of range")
            return "d", [s[k % t[1]]]
        if isinstance(t, tuple) and t[0] == "t":
            parts = t[1]
            if not -len(parts) <= k < len(parts):
                raise Untypable("a tuple item out of range")
            k %= len(parts)
            start = sum(flat(u) for u in parts[:k])
            return parts[k], s[start:start + flat(parts[k])]
        raise Untypable("an element read of a value that is not a vector")

    def _binop(self, e):
        a, sa = self.ev(e.left)
        b, sb = self.ev(e.right)
        if a is None or b is None:
            return None, None
        if a == "i" and num(b) or b == "i" and num(a):
            a, b = ("d" if a == "i" else a), ("d" if b == "i" else b)
        if isinstance(e.op, ast.Pow):
            if num(a) and num(b):
                return "d", [f"({sa[0]} ** {sb[0]})"]
            raise Untypable("a power of a vector")
        op = _OPS.get(type(e.op))
        if op is None or not (num(a) or is_vec(a)) or not (num(b) or is_vec(b)):
            raise Untypable(f"the operation {ast.unparse(e)}")
        if num(a) and num(b):
            return "d", [f"({sa[0]} {op} {sb[0]})"]
        n = a[1] if is_vec(a) else b[1]
        if is_vec(a) and is_vec(b) and a != b:
            raise Untypable("vectors of different lengths")
        la = sa if is_vec(a) else sa * n
        lb = sb if is_vec(b) else sb * n
        return vec(n), [f"({x} {op} {y})" for x, y in zip(la, lb)]

    def _call(self, e):
        f = e.func
        if isinstance(f, ast.Name) and f.id in self.fn.module:
            return self._helper(e)
        if e.keywords:
            raise Untypable(f"the call {ast.unparse(e)}")
        if _is_call(e, ("np", "numpy"), ("zeros",)) and len(e.args) == 1 and isinstance(e.args[0], ast.Attribute) \
                and e.args[0].attr == "shape":     # np.zeros(v.shape): a cotangent's start (float64, v's length)
            t, _ = self.ev(e.args[0].value)
            if t is None:
                return None, None
            if is_vec(t):
                return t, ["0.0"] * t[1]
        pos = e.args[:2] if _is_call(e, ("rt",), ("sum_vjp",)) else e.args[:1] if _is_call(e, ("rt",), ("sum_jvp",)) \
            else e.args       # (their axis, keepdims: constants, checked below)
        args = [self.ev(a) for a in pos]
        if any(t is None for t, _ in args):
            return None, None
        types = [t for t, _ in args]
        if _is_call(e, _MATH_MODULES, _LIBM) and len(args) == 1:
            if num(types[0]):
                return "d", [f"libc.math.{_LIBM[f.attr]}({args[0][1][0]})"]
            raise Untypable(f"{ast.unparse(f)} of a vector (NumPy's vector loop may round differently)")
        if _is_call(e, ("np", "numpy"), ("array",)) and len(args) == 1 and is_vec(types[0]):
            return args[0]
        if _is_call(e, ("np", "numpy"), ("zeros_like",)) and len(args) == 1 and (is_vec(types[0]) or num(types[0])):
            return ("d" if num(types[0]) else types[0]), ["0.0"] * flat(types[0])
        if _is_call(e, ("np", "numpy"), ("full_like",)) and len(args) == 2 and is_vec(types[0]) and num(types[1]):
            return types[0], [args[1][1][0]] * types[0][1]      # a sum's cotangent spread over a vector
        if _is_call(e, ("np", "numpy"), ("sum",)) and len(args) == 1 and is_vec(types[0]) \
                and types[0][1] <= SUM_MAX:
            s = args[0][1]
            acc = s[0]
            for x in s[1:]:
                acc = f"({acc} + {x})"
            return "d", [acc]
        if _is_call(e, ("rt",), ("seed",)) and len(args) == 2 and num(types[0]):
            return "d", [f"rt.seed({args[0][1][0]}, {self.py(e.args[1])})"]
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "rt":
            return self._rt(f.attr, e, args)
        raise Untypable(f"the call {ast.unparse(e)}")

    def _rt(self, name, e, args):
        types = [t for t, _ in args]
        t0 = types[0] if types else None
        if name == "add" and len(args) == 2:
            if num(types[0]) and num(types[1]):
                return "d", [f"{_HELPER}({args[0][1][0]}, {args[1][1][0]})"]
            if is_vec(types[0]) and types[0] == types[1]:     # (an array is never rt.add's zero: a + b)
                return types[0], [f"({x} + {y})" for x, y in zip(args[0][1], args[1][1])]
            for k in (0, 1):      # a literal (a zero so far) and a vector
                (ta, sa), (tb, sb) = args[k], args[1 - k]
                if ta == "const" and is_vec(tb):
                    pairs = zip(sa * tb[1], sb) if k == 0 else zip(sb, sa * tb[1])
                    return tb, [f"{_HELPER}({x}, {y})" for x, y in pairs]
        if name == "unbroadcast" and len(args) == 2 and (num(t0) and num(types[1]) or is_vec(t0) and t0 == types[1]):
            return ("d" if t0 == "const" else t0), args[0][1]
        if name == "cast_vjp" and len(args) == 3 and is_vec(t0) and t0 == types[1]:
            return args[0]
        if name == "item" and len(args) == 2 and _const_int(e.args[1]) is not None:
            return self._part(t0, args[0][1], _const_int(e.args[1]))
        if name == "index_vjp" and len(args) == 3 and num(t0) and is_vec(types[1]):
            k = _const_int(e.args[2])
            n = types[1][1]
            if k is not None and -n <= k < n:
                return types[1], [args[0][1][0] if j == k % n else "0.0" for j in range(n)]
        if name == "add_at" and len(args) == 4 and is_vec(t0) and t0 == types[1] and num(types[3]):
            k = _const_int(e.args[2])
            n = t0[1]
            if k is not None and -n <= k < n:
                g = args[3][1][0]
                return t0, [f"({x} + {g})" if j == k % n else x for j, x in enumerate(args[0][1])]
        if name == "index_jvp" and len(args) == 3 and is_vec(t0) and t0 == types[1]:
            k = _const_int(e.args[2])
            if k is not None and -t0[1] <= k < t0[1]:
                return "d", [args[0][1][k % t0[1]]]
        if name == "zeros_like" and len(args) == 1 and (is_vec(t0) or num(t0)):
            return ("d" if num(t0) else t0), ["0.0"] * flat(t0)
        if name == "broadcast_like" and len(args) == 2 and (t0 == types[1] or num(t0) and num(types[1])):
            return ("d" if num(t0) else t0), args[0][1]
        if name == "broadcast_like" and len(args) == 2 and num(t0) and is_vec(types[1]):
            return types[1], args[0][1] * types[1][1]
        if name == "as_tangent" and len(args) == 2 and is_vec(t0) and t0 == types[1]:
            return args[0]
        if name == "sum_jvp" and len(args) == 1 and is_vec(t0) and t0[1] <= SUM_MAX and not e.keywords \
                and all(isinstance(a, ast.Constant) and a.value in (None, False) for a in e.args[1:]):
            acc = args[0][1][0]
            for x in args[0][1][1:]:
                acc = f"({acc} + {x})"
            return "d", [acc]
        if name == "sum_vjp" and num(t0) and len(args) >= 2 and is_vec(types[1]) and not e.keywords \
                and all(isinstance(a, ast.Constant) and a.value in (None, False) for a in e.args[2:]):
            return types[1], args[0][1] * types[1][1]
        raise Untypable(f"the call {ast.unparse(e)}")

    def _helper(self, e):
        fdef = self.fn.module[e.func.id]
        names = [a.arg for a in fdef.args.args]
        given = dict(zip(names, e.args))
        for kw in e.keywords:
            if kw.arg is None or kw.arg not in names or kw.arg in given:
                raise Untypable(f"the call {ast.unparse(e)}")
            given[kw.arg] = kw.value
        defaults = dict(zip(names[len(names) - len(fdef.args.defaults):], fdef.args.defaults))
        if len(e.args) > len(names):
            raise Untypable(f"the call {ast.unparse(e)}")
        args = []
        for n in names:
            a = given.get(n, defaults.get(n))
            if a is None:
                raise Untypable(f"the call {ast.unparse(e)}")
            args.append(self.ev(a))
        if any(t is None for t, _ in args):
            return None, None
        types = tuple("d" if t == "const" else t for t, _ in args)
        if any(not (t == "d" or is_vec(t)) for t in types):
            raise Untypable(f"the call {ast.unparse(e)} passes a value that is not a number or vector")
        callee = self.fn.callee(e.func.id, types)
        ret = callee.return_type()
        return ret, ("call", callee.cname, [x for _, s in args for x in s])

    # ---- Python text (the main function's return, rt.seed's cotangent) ----
    def py(self, e):
        """e as a Python expression over the scalarised names (vectors packed into arrays)."""
        if isinstance(e, ast.Constant):
            return repr(e.value)
        if isinstance(e, ast.Name):
            t = self.fn.types.get(e.id)
            if t == "o" or num(t) or t == "z" or (is_vec(t) and e.id in self.fn.untouched):
                return e.id
            if is_vec(t):
                return f"np.array([{', '.join(self.names(e.id, t))}])"
            raise Untypable(f"{e.id} in the returned value")
        if isinstance(e, ast.Tuple):
            return "(" + "".join(self.py(x) + ", " for x in e.elts) + ")"
        if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id in ("np", "rt"):
            return ast.unparse(e)
        if isinstance(e, ast.Call) and not e.keywords and isinstance(e.func, ast.Attribute) \
                and isinstance(e.func.value, ast.Name) and e.func.value.id in ("np", "rt"):
            return f"{ast.unparse(e.func)}({', '.join(self.py(a) for a in e.args)})"
        raise Untypable(f"the returned expression {ast.unparse(e)}")
