"""Op: what one normalized statement does, the record the analysis fills in (classify.py) and
the modes read (its kind, target, the rule that differentiates it, its operands)."""
import ast
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Callable, NamedTuple

from ..rules.registry import Rule


class OpKind(StrEnum):
    """What kind of statement an Op is (compared by member: `op.kind is OpKind.ASSIGN`)."""
    ASSIGN = "assign"               # name = operation
    DISPLAY = "display"             # name = a tuple, list or dict display (operands keyed by position)
    SETITEM = "setitem"             # name[index] = value
    APPEND = "append"               # name.append(value)
    POP = "pop"                     # name.pop(): undoing an append (generated adjoints)
    MUTATE = "mutate"               # an in-place method or function on name
    RESTORE_ITEM = "restore_item"   # generated adjoints undoing a dict item write
    CALL = "call"                   # a call for its effect
    IF = "if"
    FOR = "for"
    WHILE = "while"
    RETURN = "return"
    BREAK = "break"
    OTHER = "other"


class Unsupported(NamedTuple):
    """A construct srcad has no rule for, refused (UnsupportedSyntaxError) if a derivative flows through it."""
    construct: str      # what it is, quoting the user's text
    hint: str           # what to write instead


@dataclass
class Op:
    """What one normalized statement does: its kind, target, the rule that differentiates it,
    and the operands that may carry a derivative."""
    kind: OpKind
    node: ast.AST
    target: str | None = None
    rhs: ast.AST | None = None
    rule: Rule | None = None
    bound: dict[str, object] = field(default_factory=dict)   # rule parameter -> argument atom (a tuple: *args)
    operands: list[tuple[object, str]] = field(default_factory=list)  # [(param, name)] arguments that may carry derivatives
    callee: Callable | None = None                # a user function, transformed too
    missing: str | None = None                    # a called function that has no rule
    missing_fix: str | None = None                # what to write instead (the registry's `refusal` fact)
    unsupported: Unsupported | None = None        # refused if it carries a derivative
    receiver: ast.expr | None = None              # what a method callee takes first (an atom)

    def __post_init__(self):
        self.kind = OpKind(self.kind)     # a kind that is none of OpKind's is an error here
