"""The gradient-descent solver of the saddle and particle problems (Pearlmutter and Siskind's, as
GradBench specifies it): step eta from 1e-5, doubled after 10 accepted steps, halved on a rejected
one; stop when the gradient or the step is shorter than 1e-5. `grad` is the derivative operator to
use (srcad's reverse or forward mode, or a peer's); `args` are passed on to f after x."""
import numpy as np


def argmin(grad, f, x, *args):
    g = grad(f)
    eta = 1e-5
    fx = f(x, *args)
    gx = g(x, *args)
    i = 0
    while True:
        if np.sqrt(np.sum(gx * gx)) <= 1e-5:
            return x
        if i == 10:
            eta = 2.0 * eta
            i = 0
            continue
        x_new = x - eta * gx
        if np.sqrt(np.sum((x - x_new) * (x - x_new))) <= 1e-5:
            return x
        fx_new = f(x_new, *args)
        if fx_new < fx:
            x = x_new
            fx = fx_new
            gx = g(x_new, *args)
            i = i + 1
        else:
            eta = 0.5 * eta
            i = 0
