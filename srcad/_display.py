"""What `srcad.emit` returns: the generated module's text as a `str` that also renders as
highlighted Python in Jupyter (IPython's rich display), and prints as itself everywhere else."""
import functools

from .api import emit as _emit


class GeneratedCode(str):
    r"""What `srcad.emit` returns: the text of generated Python code.

    A `str` (print it, write it to a file, compare it), shown in Jupyter as a Python code block
    (``_repr_markdown_``, highlighted by the notebook), or as HTML highlighted by pygments where
    pygments is installed (``_repr_html_``); plain text everywhere else.

    Parameters
    ----------
    text : str
        The code.

    Examples
    --------
    >>> import srcad
    >>> code = srcad.GeneratedCode("def f_vjp(x):\n    return x\n")
    >>> isinstance(code, str) and code.startswith("def f_vjp")
    True
    >>> print(code._repr_markdown_())
    ```python
    def f_vjp(x):
        return x
    ```
    """

    __slots__ = ()

    def _repr_markdown_(self) -> str:
        fence = "```"
        while fence in self:
            fence += "`"
        return f"{fence}python\n{self.rstrip()}\n{fence}"

    def _repr_html_(self) -> "str | None":
        try:
            from pygments import highlight
            from pygments.formatters import HtmlFormatter
            from pygments.lexers import PythonLexer
        except ImportError:
            return None      # IPython then uses _repr_markdown_
        return highlight(str(self), PythonLexer(), HtmlFormatter(noclasses=True))

    def _repr_pretty_(self, p, cycle):  # IPython's plain-text display: the code, not its repr
        p.text(str(self))

    def __repr__(self) -> str:
        return f"GeneratedCode({str.__repr__(self)})"


@functools.wraps(_emit)
def emit(*args, **kwargs):
    return GeneratedCode(_emit(*args, **kwargs))


# (its docstring, srcad.api.emit's, says it returns a GeneratedCode)
