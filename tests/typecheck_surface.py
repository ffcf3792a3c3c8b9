"""A user's program against srcad's public surface, for `mypy --strict` (see [tool.mypy] in
pyproject.toml): every public function called as the README shows it, with no cast and no
`type: ignore`. Also run by test_typed_surface.py, so it runs and computes right."""
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

import srcad

Array = npt.NDArray[np.float64]


def loss(w: Array, X: Array, y: Array) -> float:
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    return float(-np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p)))


def cube(x: Array) -> Array:
    return x ** 3


@srcad.custom_vjp
def square(x: Array) -> Array:
    return x * x


def square_fwd(x: Array) -> tuple[Array, Array]:
    return x * x, x


def square_bwd(x: Array, g: Array) -> tuple[Array]:
    return (2.0 * x * g,)


square.defvjp(square_fwd, square_bwd)


def run() -> dict[str, Any]:
    rng = np.random.default_rng(0)
    X, y, w = rng.normal(size=(20, 3)), (rng.random(20) > 0.5).astype(float), np.zeros(3)
    g: Callable[..., Any] = srcad.grad(loss)
    value, gw = srcad.value_and_grad(loss, wrt=0)(w, X, y)
    code: srcad.GeneratedCode = srcad.emit(loss)
    text: str = code
    _, pullback = srcad.vjp(cube, np.ones(3))
    (ct,) = pullback(np.ones(3))
    y3, t3 = srcad.jvp(cube, (np.ones(3),), (np.ones(3),))
    J = srcad.jacobian(cube)(np.arange(3.0))
    H = srcad.hessian(lambda v: np.sum(v ** 4))(np.ones(2))
    err: float = srcad.check_grad(loss, w, X, y)
    leaves, treedef = srcad.tree_flatten({"a": w, "b": (X, y)})
    back = srcad.tree_unflatten(treedef, leaves)
    srcad.set_num_threads(srcad.get_num_threads())
    sg = srcad.grad(lambda v: np.sum(square(v)))(np.arange(3.0))
    try:
        srcad.grad(lambda v: v)(np.ones(2))
    except srcad.SrcadError as exc:
        message = str(exc)
    return {"g": g(w, X, y), "value": value, "gw": gw, "text": text, "ct": ct, "t3": t3, "J": J, "H": H,
            "err": err, "back": back, "sg": sg, "message": message, "version": srcad.__version__}
