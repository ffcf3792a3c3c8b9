"""srcad.emit(f, stage=NAME): the code after each named pass of the pipeline
(srcad/transform/pipeline.py). Each stage is valid Python; a pass that does something to the
function changes the text; the last stage is exactly what emit(f) prints."""
import ast
import subprocess
import sys

import numpy as np
import pytest

import srcad
from srcad.transform.pipeline import FORWARD_STAGES, REVERSE_STAGES, STAGES


def loss(w, x):
    z = np.tanh(x @ w) * 2.0
    total = 0.0
    for i in range(3):
        total += np.sum(z * z) / (i + 1)
    return total


def scaled(x):
    y = np.empty_like(x)
    np.multiply(x, 2.0, out=y)      # desugared by the aliases pass
    return np.sum(y)


def _texts(f, mode, **kw):
    stages = REVERSE_STAGES if mode == "reverse" else FORWARD_STAGES
    return {s: srcad.emit(f, mode=mode, stage=s, **kw) for s in stages}


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_every_stage_is_python_and_the_last_is_emit(mode):
    texts = _texts(loss, mode)
    for stage, text in texts.items():
        ast.parse(text)         # valid Python
        assert text.strip(), stage
    assert texts["emit"] == srcad.emit(loss, mode=mode)


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_a_pass_that_does_something_changes_the_text(mode):
    texts = _texts(loss, mode)
    changed = ["normalize", "analyze", mode, "cleanup", "emit"] + (["kinds"] if mode == "reverse" else [])
    stages = list(texts)
    for stage in changed:
        prev = stages[stages.index(stage) - 1]
        assert texts[stage] != texts[prev], f"{stage} printed the same code as {prev}"
    assert "total +=" in texts["parse"] and "total +=" not in texts["normalize"]   # `+=` desugared
    assert "def loss_vjp" in texts["reverse"] if mode == "reverse" else "def loss_jvp" in texts["forward"]
    assert "import numpy as np" in texts["emit"] and "import numpy" not in texts["cleanup"]


def test_aliases_and_checkpoint_stages_show_their_pass():
    texts = _texts(scaled, "reverse")
    assert "out=" in texts["fence"] and "out=" not in texts["aliases"]
    ck = {s: srcad.emit(loss, stage=s, checkpoint=2) for s in ("fuse", "checkpoint")}
    assert ck["checkpoint"] != ck["fuse"] and "_step" in ck["checkpoint"]
    plain = {s: srcad.emit(loss, stage=s) for s in ("fuse", "checkpoint")}
    assert plain["checkpoint"] == plain["fuse"]      # checkpoint=None: the pass does nothing


def test_kinds_stage_shows_what_example_arguments_fix():
    text = srcad.emit(loss, stage="kinds", args=(np.ones(3), np.ones((2, 3))))
    assert "# w: array d ndim=1" in text


def test_an_unknown_stage_names_the_valid_ones():
    with pytest.raises(srcad.SrcadError) as e:
        srcad.emit(loss, stage="normalise")
    assert "normalize" in str(e.value) and "cleanup" in str(e.value)
    with pytest.raises(srcad.SrcadError, match="mode='reverse'"):
        srcad.emit(loss, mode="forward", stage="kinds")
    assert set(REVERSE_STAGES) | set(FORWARD_STAGES) == set(STAGES)


def test_the_stage_text_still_differentiates_right():
    """The stages are views: asking for them leaves the cached module (and its gradient) as it was."""
    w, x = np.array([0.3, -0.2, 0.5]), np.array([[1.0, 2.0, -1.0], [0.5, 0.1, 0.2]])
    for s in REVERSE_STAGES:
        srcad.emit(loss, stage=s)
    g = srcad.grad(loss)(w, x)
    eps, ref = 1e-6, np.zeros(3)
    for k in range(3):
        e = np.zeros(3)
        e[k] = eps
        ref[k] = (loss(w + e, x) - loss(w - e, x)) / (2 * eps)
    np.testing.assert_allclose(g, ref, rtol=1e-6, atol=1e-8)


def test_cli_stage(tmp_path, capsys):
    from srcad import cli
    src = tmp_path / "m.py"
    src.write_text("import numpy as np\n\ndef f(x):\n    return np.sum(np.sin(x) ** 2)\n")
    out = subprocess.run([sys.executable, "-m", "srcad", "emit", f"{src}:f", "--stage", "normalize"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "sin_x = np.sin(x)" in out.stdout and "def f(x)" in out.stdout
    # an unknown stage: the same main(), in this process (a process costs an import of srcad)
    assert cli.main(["emit", f"{src}:f", "--stage", "nope"]) == 2
    assert "normalize" in capsys.readouterr().err
