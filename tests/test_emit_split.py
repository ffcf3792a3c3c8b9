"""emit shows the code grad runs: where grad's adjoint runs each callee's primal sweep once (the
split twins `<g>_split` of srcad/transform/split.py), so does the emitted module (and its
compile=True text, its cleanup stage and `srcad emit`); where grad keeps recomputation
(checkpoint=k, an @srcad.checkpoint callee) the emitted module has no twin either. The emitted
module, run standalone, gives grad's gradient and that of central finite differences."""
import re

import numpy as np

import srcad
from srcad import cache
from srcad.cli import main
from fdcheck import assert_grad_close


def h(x):
    return np.sin(x) * x


def f(x):
    return np.sum(h(x) ** 2)


@srcad.checkpoint
def hc(x):
    return np.sin(x) * x


def fc(x):
    return np.sum(hc(x) ** 2)


def _defs(text):
    """{function name: its text} of a generated module."""
    parts = re.split(r"\n(?=# srcad: from )", text)
    out = {}
    for p in parts:
        m = re.search(r"^def (\w+)\(", p, re.M)
        if m:
            out[m.group(1)] = p.strip()
    return out


def _text_grad_runs(func, x, **options):
    """The module text grad(func, **options) loaded for x (whatever variant grad chose)."""
    cache.clear_memory()
    srcad.grad(func, **options)(x)
    keys = [k for k in cache._MODULES if k[0] is func and k[1] == "reverse"]
    assert len(keys) == 1, keys
    return cache._TEXTS[keys[0]][0]


def test_emit_shows_the_split_twins_grad_runs():
    x = np.linspace(0.2, 1.1, 3)
    shown = srcad.emit(f, args=(x,))
    ran = _text_grad_runs(f, x)
    assert "def h_split(" in ran
    assert "def h_split(" in shown and "rt.split_forward(callee_frames, h_split, x)" in shown
    shown_defs, ran_defs = _defs(shown), _defs(ran)
    # every function but the main one (`f_vjp` for the API, grad's `f_value_and_vjp`) is the same text
    assert set(shown_defs) - {"f_vjp"} == set(ran_defs) - {"f_value_and_vjp"}
    for name in set(shown_defs) - {"f_vjp"}:
        assert shown_defs[name] == ran_defs[name]
    assert "split adjoint" in shown_defs["h_split"]      # says what it is


def test_emitted_split_module_runs_standalone():
    x = np.linspace(0.2, 1.1, 3)
    ns = {}
    exec(compile(str(srcad.emit(f, args=(x,))), "<emitted>", "exec"), ns)
    got = ns["f_vjp"](x)
    assert_grad_close(f, (x,), got)
    assert_grad_close(f, (x,), srcad.grad(f)(x))
    np.testing.assert_allclose(got, srcad.grad(f)(x), rtol=1e-13, atol=0)
    ns = {}
    exec(compile(str(srcad.emit(f)), "<emitted>", "exec"), ns)      # no example arguments
    assert_grad_close(f, (x,), ns["f_vjp"](x))


def test_no_twin_where_grad_recomputes():
    x = np.linspace(0.2, 1.1, 3)
    for shown, ran in ((srcad.emit(f, args=(x,), checkpoint=2), _text_grad_runs(f, x, checkpoint=2)),
                       (srcad.emit(fc, args=(x,)), _text_grad_runs(fc, x))):
        assert "_split(" not in ran
        assert "_split(" not in shown
    ns = {}
    exec(compile(str(srcad.emit(fc, args=(x,))), "<emitted>", "exec"), ns)
    assert_grad_close(fc, (x,), ns["fc_vjp"](x))
    assert "_split(" not in srcad.emit(f, mode="forward")


def test_compile_and_stage_show_the_twins():
    x = np.linspace(0.2, 1.1, 3)
    pyx = srcad.emit(f, args=(x,), compile=True)
    assert "h_split" in pyx and "split_forward" in pyx
    assert "def h_split(" in srcad.emit(f, args=(x,), stage="cleanup")
    assert "h_split" not in srcad.emit(f, args=(x,), compile=True, checkpoint=2)


def test_cli_emit_shows_the_twins(tmp_path, capsys):
    src = tmp_path / "callee_mod.py"
    src.write_text("import numpy as np\n\n\ndef h(x):\n    return np.sin(x) * x\n\n\n"
                   "def f(x):\n    return np.sum(h(x) ** 2)\n")
    assert main(["emit", f"{src}:f", "--args", "np.ones(3)"]) == 0
    out = capsys.readouterr().out
    assert "def h_split(" in out
    ns = {}
    exec(compile(out, "<emitted>", "exec"), ns)
    x = np.linspace(0.2, 1.1, 3)
    assert_grad_close(f, (x,), ns["f_vjp"](x))
    assert main(["emit", f"{src}:f", "--args", "np.ones(3)", "--checkpoint", "2"]) == 0
    assert "_split(" not in capsys.readouterr().out
