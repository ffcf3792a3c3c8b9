"""What the alias analysis tells the user: where, the write, the alias it reaches, and the fix."""
from ...errors import UnsupportedSyntaxError
from .domain import ITEM, VIEW, WHOLE, _Stale


class Messages:
    """Errors and stale-name messages of the alias analysis (mixed into _Aliases)."""

    def fail(self, node, construct, hint):
        raise UnsupportedSyntaxError(construct, *self.parsed.where(node), hint=hint)

    def where(self, node):
        return getattr(node, "lineno", 0)

    def stale(self, S, st, n, m, construct, target, op, value):
        """How the write through n reaches m, and what to write instead."""
        on, om = S.origin.get(n), S.origin.get(m)
        what = f"{construct} writing into "
        if n is None:
            what += f"memory that `{m}` shares"
            hint = f"write into `{m}` itself with a subscript (`{m}[...] = ...`), or copy first (`.copy()`)"
        elif on is not None and on.kind == VIEW and on.base == m:
            what += f"`{n}`, a view of `{m}` (line {on.line})" if on.text else \
                f"`{n}`, an item of `{m}` (the loop at line {on.line})"
            if op is not None and on.text:
                hint = f"write `{on.text} {op}= {value}` instead (srcad treats `{n}` as a copy of `{on.text}`)"
            elif not on.text:   # a loop's item
                hint = (f"loop over the indices and write into `{m}` itself (`{m}[i] {op or ''}= ...`), or "
                        f"write the new value to a new name")
            else:
                hint = (f"write into `{m}` itself (`{m}[...] = ...`), or make `{n}` a copy: "
                        f"`{n} = {on.text or m}.copy()`")
        elif om is not None and om.kind == VIEW and om.base == n:
            what += f"`{n}`, which `{m}` is a view of (line {om.line})"
            hint = (f"make `{m}` a copy (`{m} = {om.text}.copy()`), or take the view after the write")
        elif om is not None and om.kind == ITEM and n in om.base:
            what += f"`{n}`, which `{m}` holds (line {om.line})"
            hint = f"store a copy (`{m}.append({n}.copy())`), or finish writing `{n}` before storing it"
        elif on is not None and on.kind == WHOLE and on.base == m or om is not None and om.kind == WHOLE \
                and om.base == n:
            line = (on if on is not None and on.base == m else om).line
            what += f"`{n}`, which may be the same array as `{m}` (line {line})"
            hint = f"make it a copy where it is assigned (`{n} = {m}.copy()`)"
        else:
            what += f"`{n}`, which may share memory with `{m}`"
            hint = f"make a copy with `.copy()` before writing into `{n}`"
        return _Stale(st, what, "srcad treats every name as a value; " + hint)
