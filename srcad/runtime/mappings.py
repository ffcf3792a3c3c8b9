"""The tape of item writes into a dict built inside a differentiated function: a write may add
a key, so what it replaced is either the old value or MISSING, and undoing it removes the key."""
import numpy as np

from .values import MISSING


def saved_item(d, key):
    """What `d[key] = v` replaces, to be put back by restore_item: a copy of the old value, or
    MISSING. On anything but a dict, a copy of d[key] (as for arrays and lists)."""
    if isinstance(d, dict):
        return np.copy(d[key]) if key in d and isinstance(d[key], np.ndarray) else d.get(key, MISSING)
    return np.copy(d[key])


def restore_item(d, key, old):
    """Undo `d[key] = v` in place: put the old value back, or remove a key the write added."""
    if old is MISSING:
        if isinstance(d, dict):
            d.pop(key, None)
        return
    d[key] = old
