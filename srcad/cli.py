"""The `srcad` command (also `python -m srcad`): `srcad emit FILE.py:FUNC` (or
`package.module:FUNC`) prints the derivative code srcad generates; `srcad rules` lists every
supported function with its modes; `srcad cache --info|--clear` shows or empties the directory of
generated files; `srcad --version` prints the version."""
import argparse
import importlib
import importlib.util
import os
import sys

from .api import emit
from .errors import SrcadError


def _load(target):
    if ":" not in target:
        raise SrcadError(f"the target {target!r} names no function. Write it as FILE.py:FUNC or "
                         f"package.module:FUNC.", *_nowhere())
    where, func = target.rsplit(":", 1)
    if where.endswith(".py") or os.sep in where:
        path = os.path.abspath(where)
        if not os.path.exists(path):
            raise SrcadError(f"there is no file {where}. Give the path of a Python file (FILE.py:FUNC).",
                             *_nowhere())
        sys.path.insert(0, os.path.dirname(path))
        name = os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    else:
        sys.path.insert(0, os.getcwd())
        module = importlib.import_module(where)
    obj = module
    for part in func.split("."):
        if not hasattr(obj, part):
            raise SrcadError(f"{where} has no function {func!r}. Name a function defined at the top level of "
                             f"{where} (FILE.py:FUNC).", *_place(module, func.split(".")[0]))
        obj = getattr(obj, part)
    if not callable(obj) or isinstance(obj, type):
        raise SrcadError(f"{func} is an object of type {type(obj).__name__}, not a function. Name a function defined with def "
                         f"(FILE.py:FUNC).", *_place(module, func.split(".")[0]))
    return obj


def _nowhere():
    return "", 0, 0        # an error in the command line itself: no place in user code


def _place(module, name):
    """(file, line, col) where a module binds `name` at its top level (its file's first line if not found)."""
    import ast
    path = getattr(module, "__file__", None) or "<unknown>"
    try:
        with open(path) as fh:
            tree = ast.parse(fh.read())
    except (OSError, SyntaxError, ValueError):
        return path, 1, 0
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return path, node.lineno, node.col_offset
    return path, 1, 0


def _wrt(text):
    parts = [p.strip() for p in text.split(",") if p.strip()]
    vals = tuple(int(p) if p.lstrip("-").isdigit() else p for p in parts)
    return vals[0] if len(vals) == 1 else vals


def main(argv=None):
    from . import __version__
    parser = argparse.ArgumentParser(prog="srcad", description="srcad: source-transformation AD for Python")
    parser.add_argument("--version", action="version", version=f"srcad {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("emit", help="print the derivative code srcad generates for a function")
    p.add_argument("target", help="FILE.py:FUNC or package.module:FUNC")
    p.add_argument("--mode", choices=["reverse", "forward"], default="reverse")
    p.add_argument("--wrt", default="0", help="the differentiated parameters: indices or names, comma-separated")
    p.add_argument("--stage", default="emit", metavar="NAME",
                   help="print the code after this pass instead of the module: one of "
                        "parse, fence, aliases, normalize, analyze, kinds, reverse, forward, fuse, checkpoint, "
                        "cleanup, emit")
    p.add_argument("--checkpoint", type=int, metavar="K",
                   help="the code with binomial checkpointing of range loops, K snapshots (as grad(..., checkpoint=K))")
    p.add_argument("-o", "--output", help="write the module to this file instead of printing it")
    p.add_argument("--compile", action="store_true",
                   help="print the Cython text (.pyx) that compile=True builds (no signature: untyped arguments)")
    p.add_argument("--args", metavar="EXPR",
                   help="the example arguments the code is specialised for, as Python (numpy as np), e.g. "
                        "\"np.ones(3), 0.5, 100\": their kinds, and with --compile the small arrays' lengths")
    r = sub.add_parser("rules", help="list every supported function with its derivative modes")
    r.add_argument("--all", action="store_true", help="also list the rules of srcad's runtime helpers")
    c = sub.add_parser("cache", help="show or empty the directory where srcad writes generated modules")
    what = c.add_mutually_exclusive_group()
    what.add_argument("--info", action="store_true", help="where it is, how many files and bytes (the default)")
    what.add_argument("--clear", action="store_true", help="delete srcad's generated files from it")
    args = parser.parse_args(argv)
    if args.command == "cache":
        return _cache(args)
    if args.command == "rules":
        from .rules.listing import format_rules
        sys.stdout.write(format_rules(include_internal=args.all))
        return 0
    try:
        example = None if args.args is None else _example_args(args.args)
    except ValueError as exc:
        print(f"srcad: error: {exc}", file=sys.stderr)
        return 2
    try:
        text = emit(_load(args.target), mode=args.mode, wrt=_wrt(args.wrt), stage=args.stage, compile=args.compile,
                    args=example, checkpoint=args.checkpoint)
    except SrcadError as exc:
        print(f"srcad: error: {exc}".replace("\n", " "), file=sys.stderr)
        return 2
    if args.output:
        with open(args.output, "w") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    return 0


def _example_args(text):
    import numpy as np
    try:
        value = eval(compile(f"({text},)", "<--args>", "eval"), {"np": np, "numpy": np})   # the user's own input
    except (SyntaxError, NameError, TypeError, ValueError, AttributeError, ArithmeticError, LookupError) as exc:
        raise ValueError(f"--args {text!r} is not a Python expression of the arguments ({exc}); write e.g. "
                         f"--args \"np.ones(3), 0.5\".") from None
    return tuple(value)


def _cache(args):
    from . import cache
    from .compiled import build
    if args.clear:
        n = cache.clear()
        k = build.clear()
        print(f"removed {n} file{'s' if n != 1 else ''} and {k} compiled build{'s' if k != 1 else ''} "
              f"from {cache.location()}")
        return 0
    i = cache.info()
    print(f"directory : {i['dir']}{'' if i['exists'] else ' (not created yet)'}")
    if i["problem"]:
        print(f"unusable  : {i['problem']} (srcad compiles in memory instead)")
    print(f"files     : {i['files']} (at most {i['max_files']}, env {cache.ENV_MAX_FILES})")
    print(f"size      : {i['bytes'] / 2**20:.2f} MB (at most {i['max_bytes'] / 2**20:.0f} MB, env {cache.ENV_MAX_MB})")
    b = build.info()
    print(f"compiled  : {b['builds']} build{'s' if b['builds'] != 1 else ''}, {b['bytes'] / 2**20:.2f} MB "
          f"(compile=True; removed by --clear)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
