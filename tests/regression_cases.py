"""Programs the property test found bugs with (kept as regressions)."""
import numpy as np


def scalar_times_reshaped_product(x, y):
    for t3 in x:
        v6 = (x.reshape(2, 2) @ x.reshape(2, 2)).reshape(-1) * t3
    return np.sum(v6)


def mean_of_stack_times_item(x, y):
    for t3 in x:
        v6 = np.mean(np.stack([x, y], axis=1), axis=1) * t3
    return np.sum(v6)


def loop_carried_first_use(x, y):
    v2 = np.sin(x)
    for i in range(2):
        v9 = np.sin(v2)
        v2 = np.cos(v2) + x
    return np.sum(v9)


def iterate_over_rebound_name(x, y):
    v = x * 1.0
    for t in v:
        v = np.sin(v) + t * y
    return np.sum(v)
