"""The loop-heavy workloads of benchmarks/compiled.py (a file of their own: srcad reads their source)."""
import numpy as np


def scalar(x):
    y = x
    for i in range(200):
        y = np.sin(y) * 0.9 + 0.1 * y * y
    return y


def rhs(s, p):
    return np.array([p[0] * (s[1] - s[0]), s[0] * (p[1] - s[2]) - s[1], s[0] * s[1] - p[2] * s[2]])


def rk4(p, s0, h, n):
    s = s0
    for i in range(n):
        k1 = rhs(s, p)
        k2 = rhs(s + 0.5 * h * k1, p)
        k3 = rhs(s + 0.5 * h * k2, p)
        k4 = rhs(s + h * k3, p)
        s = s + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return np.sum(s)


def rk4s(a, b, c, x, y, z, h, n):
    for i in range(n):
        k1x = a * (y - x)
        k1y = x * (b - z) - y
        k1z = x * y - c * z
        x2 = x + 0.5 * h * k1x
        y2 = y + 0.5 * h * k1y
        z2 = z + 0.5 * h * k1z
        k2x = a * (y2 - x2)
        k2y = x2 * (b - z2) - y2
        k2z = x2 * y2 - c * z2
        x3 = x + 0.5 * h * k2x
        y3 = y + 0.5 * h * k2y
        z3 = z + 0.5 * h * k2z
        k3x = a * (y3 - x3)
        k3y = x3 * (b - z3) - y3
        k3z = x3 * y3 - c * z3
        x4 = x + h * k3x
        y4 = y + h * k3y
        z4 = z + h * k3z
        k4x = a * (y4 - x4)
        k4y = x4 * (b - z4) - y4
        k4z = x4 * y4 - c * z4
        x = x + h / 6.0 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x)
        y = y + h / 6.0 * (k1y + 2.0 * k2y + 2.0 * k3y + k4y)
        z = z + h / 6.0 * (k1z + 2.0 * k2z + 2.0 * k3z + k4z)
    return x + y + z


def elem(x):
    n = x.shape[0]
    t = 0.0
    for i in range(n):
        t = t + np.sin(x[i]) * x[i]
    return t


def loss(x, y):
    r = np.exp(-x * y) * (x - y) + np.sin(x) / (1.0 + y * y)
    return np.sum(r * r)
