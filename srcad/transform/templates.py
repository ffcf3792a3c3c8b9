"""Inline a rule's template expression: its parameter names become the call's atoms."""
import ast
import copy


def N(id_, store=False):
    """A Name node."""
    return ast.Name(id=id_, ctx=ast.Store() if store else ast.Load())


def rt(attr, *args):
    """A call of a runtime helper: rt.<attr>(*args)."""
    return ast.Call(ast.Attribute(N("rt"), attr, ast.Load()), list(args), [])


def assign(target, value):
    t = N(target, True) if isinstance(target, str) else target
    return ast.Assign(targets=[t], value=value)


def instantiate(template, mapping):
    """A copy of `template` with every name in `mapping` replaced by (a copy of) its AST."""
    class _Sub(ast.NodeTransformer):
        def visit_Name(self, node):
            if node.id in mapping:
                return copy.deepcopy(mapping[node.id])
            return node
    return _Sub().visit(copy.deepcopy(template))


def bound_mapping(rule, bound):
    """Parameter name -> argument AST, with defaults filled in for parameters not passed."""
    out = {}
    for p, param in rule.signature.parameters.items():
        if p in bound:
            v = bound[p]
            out[p] = v if isinstance(v, ast.AST) else ast.Constant(None)
        elif param.default is not param.empty:
            out[p] = ast.Constant(param.default)
    return out


def comment(text):
    """A statement that the emitter turns into a `# text` line."""
    node = ast.Expr(ast.Constant("\x00srcad-comment\x00" + text))
    return node


def names_read(nodes):
    out = set()
    for n in nodes:
        for m in ast.walk(n):
            if isinstance(m, ast.Name) and isinstance(m.ctx, ast.Load):
                out.add(m.id)
    return out
