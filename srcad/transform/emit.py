"""emit: the generated module as text a person reads, with a comment per user line."""
import ast
import re

from ..errors import function_mark
from ..syntax import source_lines, to_source

_COMMENT = re.compile(r"^(\s*)(['\"])\\x00srcad-comment\\x00(.*)\2\s*$")


def unparse_with_comments(tree: ast.AST) -> str:
    text = to_source(tree)
    out = []
    for line in source_lines(text, False):
        m = _COMMENT.match(line)
        if m:
            body = m.group(3).encode().decode("unicode_escape") if "\\" in m.group(3) else m.group(3)
            out.append(f"{m.group(1)}# {body}")
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def _origin(f):
    """A comment naming the user function f comes from (errors are placed on the user's code by it)."""
    origin = getattr(f, "srcad_from", None)
    return function_mark(*origin) + "\n" if origin else ""


def module_text(header: list[str], imports: list[str], functions: list[ast.FunctionDef], supplied: dict) -> str:
    lines = [f"# {h}" for h in header]
    if supplied:
        lines.append("# names that srcad supplies when it loads this module (the function's free variables): "
                     + ", ".join(sorted(supplied)))
    lines += imports
    body = "\n\n".join(_origin(f) + unparse_with_comments(f).rstrip("\n") for f in functions)
    body = body.replace("\n\ndef ", "\n\n\ndef ").replace("\n\n# srcad: from", "\n\n\n# srcad: from")
    return "\n".join(lines) + "\n\n\n" + body + "\n"
