"""The errors srcad raises. Each message is a finished sentence in three parts:

    file.py:line:col: what srcad met there (the construct); what to do about it (the fix).

The place is always in the user's code. An error raised while generated code runs (a runtime
helper that meets a case it has no rule for, a sparse input it cannot take) or while srcad
transforms its own generated code (a Hessian is forward mode over the generated adjoint) is
placed on the user line that generated code came from: generated modules say, in comments, which
user file each function and which user line each block comes from. An error about how srcad was
called (a bad `wrt`, a tangent of the wrong shape) is placed on the user's call of srcad.
"""
import linecache
import os
import re
import sys

_LOCATED = re.compile(r"^\S.*?:\d+:\d+: ")
_PLACE = re.compile(r"^(\S.*?):(\d+):(\d+): ")
_LINE_ONLY = re.compile(r"^(\S[^:]*):(\d+): ")
_LINE_MARK = re.compile(r"^\s*# (?:adjoint of )?L(\d+): ")
_FUNC_MARK = re.compile(r"^# srcad: from `[^`]*` \((.*):(\d+)\)\s*$")     # above each generated def


def function_mark(name, filename, lineno):
    """The comment above a generated function that says which user function it comes from."""
    return f"# srcad: from `{name}` ({filename}:{lineno})"
_HEADER = re.compile(r"^# srcad (?:reverse|forward) mode of `[^`]*` \((.*):(\d+)\)")
_LIFTED = re.compile(r"^<srcad-lifted (.*):\d+ \w+>$")
_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def is_generated(filename):
    """Is this a module srcad generated (its first line is srcad's header)?"""
    return bool(filename) and _HEADER.match(linecache.getline(filename, 1) or "") is not None


def user_place(filename, lineno):
    """(user file, user line, column) that line `lineno` of generated module `filename` came from,
    from the nearest comments above it; None when they do not say."""
    lines = linecache.getlines(filename)
    line = None
    for k in range(min(lineno, len(lines)) - 1, -1, -1):
        text = lines[k]
        if line is None:
            m = _LINE_MARK.match(text)
            if m:
                line = int(m.group(1))
        m = _FUNC_MARK.match(text) or (_HEADER.match(text) if k == 0 else None)
        if m:
            user_file = m.group(1)
            line = line or int(m.group(2))
            if is_generated(user_file):       # code generated from generated code: one more step back
                return user_place(user_file, line)
            source = linecache.getline(user_file, line)
            return user_file, line, len(source) - len(source.lstrip()) if source.strip() else 0
    return None


def _frame_column(frame):
    try:
        positions = list(frame.f_code.co_positions())
        col = positions[frame.f_lasti // 2][2]
        return col or 0
    except (AttributeError, IndexError, TypeError):
        return 0


def where_in_user_code(depth=2):
    """The user's place for an error raised now: the user line whose generated code is running,
    else the user's call into srcad (the innermost frame outside srcad)."""
    frame = sys._getframe(depth)
    f = frame
    while f is not None:
        if is_generated(f.f_code.co_filename):
            place = user_place(f.f_code.co_filename, f.f_lineno)
            if place:
                return place
        f = f.f_back
    f = frame
    while f is not None:
        name = f.f_code.co_filename
        if not name.startswith("<") and not os.path.abspath(name).startswith(_PACKAGE + os.sep) \
                and "importlib" not in name and os.sep + "pytest" not in name and os.sep + "pluggy" not in name:
            return name, f.f_lineno, _frame_column(f)
        f = f.f_back
    return None


class SrcadError(Exception):
    """Base class of every error srcad raises.

    Each message says what went wrong, where in your code (file:line:col of your source, also for
    errors raised while generated code runs), and what to do. Without an explicit place, the
    message is placed on your code.

    Examples
    --------
    >>> import numpy as np
    >>> import srcad
    >>> try:
    ...     srcad.grad(lambda x: 2.0 * x)(np.ones(3))
    ... except srcad.SrcadError as err:
    ...     print(type(err).__name__)
    NonScalarOutputError
    """

    def __init__(self, message="", filename=None, lineno=None, col=None):
        message = str(message)
        m = _LINE_ONLY.match(message)
        if m and filename is None:         # "file:line: ...": the column of the line's first character
            source = linecache.getline(m.group(1), int(m.group(2)))
            filename, lineno, col = m.group(1), int(m.group(2)), len(source) - len(source.lstrip())
            message = message[m.end():]
        located = _PLACE.match(message)
        if filename is None and located:             # the message carries its place already
            filename, lineno, col = located.group(1), int(located.group(2)), int(located.group(3))
        elif filename is None:
            place = where_in_user_code()
            if place:
                filename, lineno, col = place
        elif filename is not None and is_generated(filename):
            place = user_place(filename, lineno or 0)
            if place:
                filename, lineno, col = place
        elif filename is not None and _LIFTED.match(filename):    # a nested def, lifted: same lines
            while _LIFTED.match(filename):      # (a def nested in a lifted one: the user's file)
                filename = _LIFTED.match(filename).group(1)
        self.filename, self.lineno, self.col = filename, lineno, col
        message = _sentence(message) if message else message      # a finished sentence
        if filename and not _LOCATED.match(message):      # filename "": deliberately no place
            message = f"{filename}:{lineno or 0}:{col or 0}: {message}"
        super().__init__(message)


class UnsupportedSyntaxError(SrcadError):
    """The differentiated function contains a construct srcad cannot differentiate.

    Raised when srcad transforms the function (before anything runs), naming the construct and a
    rewrite that works: srcad never returns a derivative of code it did not understand.

    Examples
    --------
    >>> import srcad
    >>> def f(x):
    ...     with open("log.txt", "a"):
    ...         pass
    ...     return x * x
    >>> srcad.grad(f)(1.0)
    Traceback (most recent call last):
        ...
    srcad.errors.UnsupportedSyntaxError: <doctest ...>:2:4: srcad does not support `with` statements; move the context manager outside the differentiated function.
    """

    def __init__(self, construct, filename=None, lineno=None, col=None, hint=""):
        self.construct = construct
        fix = hint or ("write it with the constructs srcad's README lists under \"What it differentiates\" "
                       "(`srcad rules` prints every function srcad has a rule for)")
        super().__init__(f"srcad does not support {construct}; {_sentence(fix)}", filename, lineno, col)


_PLAIN_NAME = re.compile(r"^[A-Za-z_][\w.]*$")


class MissingRuleError(SrcadError):
    """A differentiated value flows into a function (or a form of a call) that has no derivative rule.

    `construct` says what has no rule; `func`, the function a rule can be registered for (by
    default `construct` when it is a plain name); `fix`, what to do instead when no registration
    helps (a form of a call srcad has no rule for). The message names your line, and how to add a
    rule (`srcad.register_vjp`) or declare the function non-differentiable.

    Examples
    --------
    >>> import math
    >>> import srcad
    >>> def f(x):
    ...     return math.gamma(x)
    >>> srcad.grad(f)(1.5)
    Traceback (most recent call last):
        ...
    srcad.errors.MissingRuleError: <doctest ...>:2:11: srcad has no reverse-mode derivative rule for `math.gamma`, ...
    """

    def __init__(self, construct, filename=None, lineno=None, col=None, mode="reverse", func=None, fix=None):
        self.func_name = construct
        self.construct, self.mode = construct, mode
        if func is None and fix is None and _PLAIN_NAME.match(construct):
            func = construct
        which = "register_vjp" if mode == "reverse" else "register_jvp"
        subject = f"`{construct}`" if _PLAIN_NAME.match(construct) else construct
        msg = f"srcad has no {mode}-mode derivative rule for {subject}, which is applied here to a value " \
              f"that depends on the differentiated input."
        if fix is None:
            fix = "Rewrite it with the functions `srcad rules` lists, or put it in a function of your own and give " \
                  "that function a rule with srcad.custom_vjp / srcad.custom_jvp"
        fix = fix[0].upper() + fix[1:]
        if func is not None:
            fix = (f"Add a rule with srcad.{which}({func}, rule), declare srcad.nondifferentiable({func}) if its "
                   f"output carries no derivative, or write the function in Python so srcad can transform it")
        super().__init__(f"{msg} {_sentence(fix)}", filename, lineno, col)


class NonScalarOutputError(SrcadError):
    """A gradient was asked for a function whose output is not a scalar.

    Examples
    --------
    >>> import numpy as np
    >>> import srcad
    >>> srcad.grad(lambda x: 2.0 * x)(np.ones(3))
    Traceback (most recent call last):
        ...
    srcad.errors.NonScalarOutputError: ...
    """


class GradientCheckError(SrcadError):
    """`srcad.check_grad` found a gradient that disagrees with finite differences; the message lists
    the worst entries.

    Examples
    --------
    >>> import numpy as np
    >>> import srcad
    >>> @srcad.custom_vjp
    ... def half(x):
    ...     return 0.5 * x
    >>> _ = half.defvjp(lambda x: (0.5 * x, None), lambda r, dy: (dy,))     # should be 0.5 * dy
    >>> srcad.check_grad(lambda x: np.sum(half(x)), np.ones(2))
    Traceback (most recent call last):
        ...
    srcad.errors.GradientCheckError: ...
    """


class NumericsError(SrcadError):
    """A derivative became NaN or Inf; raised with ``check_numerics=True``, naming the user line whose
    derivative did.

    Examples
    --------
    >>> import numpy as np
    >>> import srcad
    >>> def f(x):
    ...     return np.sum(np.sqrt(x))
    >>> with np.errstate(divide="ignore"):      # numpy's own warning at sqrt'(0)
    ...     srcad.grad(f, check_numerics=True)(np.array([0.0, 1.0]))
    Traceback (most recent call last):
        ...
    srcad.errors.NumericsError: ...
    """


class InputError(SrcadError, ValueError, TypeError):
    """An argument srcad cannot differentiate as given: an integer or complex array, a sparse format
    other than CSR/CSC/COO, a foreign tensor, an index or axis out of range. The message names the
    argument and the fix. Also a ValueError and a TypeError.

    Examples
    --------
    >>> import numpy as np
    >>> import srcad
    >>> srcad.grad(lambda x: np.sum(x ** 2))(np.array([1, 2]))
    Traceback (most recent call last):
        ...
    srcad.errors.InputError: ...astype(float)...
    """


class RuleError(SrcadError, TypeError):
    """A derivative rule you supplied (`srcad.register_vjp`, `srcad.register_jvp`, `srcad.custom_vjp`,
    `srcad.custom_jvp`) returned something other than its convention asks for; the message says
    what it returned and what was expected. Also a TypeError.

    Examples
    --------
    >>> import numpy as np
    >>> import srcad
    >>> def cube(x):
    ...     return x ** 3
    >>> _ = srcad.register_vjp(cube, lambda x: (cube(x), lambda dy: (np.ones(3),)))   # wrong shape
    >>> srcad.grad(lambda x: np.sum(cube(x)))(np.ones(2))
    Traceback (most recent call last):
        ...
    srcad.errors.RuleError: ... the rule for `cube` returned the cotangent of argument 0 of shape (3,), ...
    """


class StaleSourceError(SrcadError):
    """The source file of a function was edited after Python loaded the function: srcad would
    otherwise differentiate code other than what runs. Reload the module (or restart) and call
    again.

    Examples
    --------
    >>> import srcad
    >>> issubclass(srcad.StaleSourceError, srcad.SrcadError)
    True
    """


class CacheWarning(UserWarning):
    """srcad's cache directory cannot be used as it is; srcad carries on without it (generating the
    code again in every process). Set SRCAD_CACHE_DIR to a writable directory, or silence it.

    Examples
    --------
    >>> import warnings
    >>> import srcad
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", srcad.CacheWarning)
    """


def _sentence(text):
    text = text.strip()
    return text if text.endswith((".", "!", "?")) else text + "."
