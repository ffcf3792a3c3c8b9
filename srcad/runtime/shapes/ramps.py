"""np.linspace / np.geomspace / np.arange: values that move with their end points."""
import numpy as np

from ..broadcasting import unbroadcast
from ..values import _is_zero
from .linear import _missing


# ---- linspace / geomspace / arange: values that move with their end points ------------------------
def _ramp(num, endpoint, axis, ndim):
    """linspace(0, 1, num, endpoint) shaped to broadcast along `axis` of a result of ndim dims."""
    t = np.linspace(0.0, 1.0, num, endpoint=endpoint)
    shape = [1] * ndim
    shape[axis % ndim] = len(t)
    return t.reshape(shape)


def _no_retstep(retstep):
    if retstep:
        raise _missing("np.linspace(..., retstep=True) (compute the step as (stop - start) / (num - 1))")


def linspace_vjp(g, start, stop, num=50, endpoint=True, retstep=False, axis=0, which="start"):
    """Cotangent of `start` (or `stop`) from that of np.linspace(start, stop, num, endpoint, axis=axis):
    the output is start + (stop - start) * t with t running from 0 to 1."""
    _no_retstep(retstep)
    if _is_zero(g):
        return g
    g = np.asarray(g)
    t = _ramp(num, endpoint, axis, g.ndim)
    part = np.sum(g * (t if which == "stop" else 1.0 - t), axis=axis % g.ndim)
    return unbroadcast(part, start if which == "start" else stop)


def linspace_jvp(v_dot, num=50, endpoint=True, retstep=False, axis=0, which="start", like=None):
    """The part of np.linspace's tangent that comes from the tangent v_dot of `start` (or `stop`);
    `like` is the result."""
    _no_retstep(retstep)
    if _is_zero(v_dot):
        return v_dot
    ndim = np.ndim(like)
    t = _ramp(num, endpoint, axis, ndim)
    v = np.expand_dims(v_dot, axis % ndim) if np.ndim(v_dot) else v_dot
    return np.broadcast_to(v * (t if which == "stop" else 1.0 - t), np.shape(like))


def arange_vjp(g, stop, which="start"):
    """Cotangent of `start` (which='start') or `step` of np.arange(start, stop, step): the values
    are start + k * step. With one argument, np.arange(stop), the values do not move with it."""
    if _is_zero(g) or stop is None:
        return 0.0
    g = np.asarray(g)
    return np.sum(g) if which == "start" else np.sum(g * np.arange(g.shape[0]))


def arange_jvp(v_dot, stop, which="start", like=None):
    """Tangent of np.arange(start, stop, step) from that of `start` or `step`."""
    if _is_zero(v_dot) or stop is None:
        return np.zeros(np.shape(like))
    if which == "start":
        return np.broadcast_to(v_dot, np.shape(like)) * 1.0
    return v_dot * np.arange(np.shape(like)[0])
