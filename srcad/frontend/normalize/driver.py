"""The normalize pass: `Normalizer`, the state its parts share (the function's names, the fresh
names, what the code shows about dicts and sequences, the nested defs lifted), and `normalize`,
which runs it over a function's body and then lowers the jumps (jumps.py)."""
import ast
from typing import NoReturn

from ...errors import UnsupportedSyntaxError
from ...syntax import N as name, Namer
from ..jumps import lower_jumps
from ..parse import Parsed
from .calls import Calls
from .containers import Containers
from .expressions import Expressions
from .functions import Functions, Lifted
from .loops import Loops
from .names import ShownTypes, _dict_names, _sequence_names
from .spellings import Spellings
from .statements import Statements


class Normalizer(Statements, Loops, Expressions, Calls, Spellings, Containers, Functions, ShownTypes):
    """The normalize pass (see the package docstring, normalize/__init__.py).

    Input: a parsed function whose tree has been fenced and alias-checked.
    Output (through `normalize`): a new FunctionDef whose body holds one operation per
    statement on atoms (names and constants), with sugar removed (augmented assignments,
    comprehensions, dict displays, nested defs lifted), and `namer`, the fresh-name source
    later passes keep using.
    Invariants: every statement carries `user_line`, the user line it comes from; fresh names
    collide with no user name; the user's tree is copied, not changed."""

    def __init__(self, parsed: Parsed):
        self.parsed = parsed
        fn = parsed.tree
        self.params: list[str] = [a.arg for a in fn.args.args + fn.args.kwonlyargs]
        self.locals: set[str] = set(self.params)
        for node in ast.walk(fn):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                self.locals.add(node.id)
            elif isinstance(node, ast.arg):
                self.locals.add(node.arg)
        self.namer = Namer(self.locals | set(parsed.env))
        self.lifted: dict[str, Lifted] = {}         # nested def name -> the function it is lifted to
        self.dicts, self.not_dicts = _dict_names(fn, parsed, self.locals)
        self.sequences: set[str] = _sequence_names(fn, self.params)
        self.loop_rebinds: set[str] = set()         # names the body of the for loop being normalized assigns

    # -- helpers ---------------------------------------------------------------------------
    def fail(self, node: ast.AST, what: str, hint: str = "") -> NoReturn:
        raise UnsupportedSyntaxError(what, *self.parsed.where(node), hint=hint)

    def resolve(self, node: ast.expr) -> tuple[bool, object]:
        return self.parsed.try_resolve(node, self.locals)

    def is_global_ref(self, node: ast.expr) -> bool:
        return self.parsed.is_global_ref(node, self.locals)

    def temp(self, hint: str) -> str:
        return self.namer.fresh(hint)

    def runtime_helper(self, attr: str) -> ast.expr:
        """A helper of srcad.runtime as normalized code calls it: `rt.<attr>`, as in generated code,
        or under a name of its own when the function's module means something else by `rt`."""
        from ... import runtime
        if "rt" not in self.locals and self.parsed.env.setdefault("rt", runtime) is runtime:
            return ast.Attribute(name("rt"), attr, ast.Load())
        own = self.namer.fresh(attr)
        self.parsed.env[own] = getattr(runtime, attr)
        return name(own)


def normalize(parsed: Parsed) -> tuple[ast.FunctionDef, Normalizer]:
    """A normalized copy of the parsed function (see the package docstring), jumps lowered."""
    n = Normalizer(parsed)
    fn = parsed.tree
    body = n.block(fn.body)
    body = lower_jumps(body, n.namer, fn)
    new = ast.FunctionDef(name=fn.name, args=fn.args, body=body, decorator_list=[], returns=None,
                          type_params=[], lineno=fn.lineno, col_offset=0)
    new.user_line = fn.lineno
    new.dict_names = set(n.dicts)      # item writes into these may add a key: the tape says so
    return new, n
