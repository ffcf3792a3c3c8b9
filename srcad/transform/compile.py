"""compile: turn generated text into a module. The text is registered with `linecache` under the
module's file name, so tracebacks, pdb and `inspect.getsource` show the generated lines that
actually run (even if the file on disk is later edited or evicted; srcad/cache.py owns the file)."""
import linecache
import types

from ..syntax import source_lines


def compile_module(source: str, modname: str, filename: str, supplied: dict) -> types.ModuleType:
    """A fresh module `modname` running `source` (as if read from `filename`), with the names
    srcad supplies (free variables of the user's code) set before it runs."""
    code = compile(source, filename, "exec", dont_inherit=True)
    linecache.cache[filename] = (len(source), None, source_lines(source), filename)
    module = types.ModuleType(modname)
    module.__file__ = filename
    module.__dict__.update(supplied)
    exec(code, module.__dict__)
    return module


def is_generated(func) -> bool:
    """Is func srcad's own generated code (a module that srcad/cache.py loaded)? Generated code is trusted input
    to the next transformation (forward mode over an adjoint), not user code."""
    return (getattr(func, "__module__", None) or "").startswith("srcad_generated.")
