"""Syntax-tree helpers every part of normalize uses: what an atom is, and the user line a new
node keeps."""
import ast


def _is_atom(node):
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant):
        return True
    if isinstance(node, ast.Tuple):
        return all(isinstance(e, ast.Constant) or _is_atom(e) and not isinstance(e, ast.Name) for e in node.elts)
    return False


def _has_call(node):
    return any(isinstance(n, ast.Call) for n in ast.walk(node))


def _loc(new, old):
    for n in ast.walk(new):
        n.lineno = getattr(old, "lineno", 1)
        n.col_offset = getattr(old, "col_offset", 0)
        n.end_lineno, n.end_col_offset = n.lineno, n.col_offset
    return new


def _keep_line(node, src):
    """Give a generated statement (and its parts) the user line it came from, unless it has one."""
    for n in ast.walk(node):
        if isinstance(n, (ast.stmt, ast.expr)) and not hasattr(n, "lineno"):
            n.lineno, n.col_offset = src.lineno, src.col_offset
            n.end_lineno, n.end_col_offset = src.lineno, src.col_offset
        if isinstance(n, ast.stmt) and not hasattr(n, "user_line"):
            # (statements made inside this one's expression too: a nested conditional
            # expression becomes an if within the if of the outer one)
            n.user_line = src.lineno
    return node
