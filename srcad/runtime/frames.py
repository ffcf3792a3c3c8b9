"""Callee frames: a user function's primal sweep run once, its adjoint sweep resumed later.

By default a callee's adjoint `<g>_vjp` re-runs g's primal sweep (call-tree reversal by
recomputation): cheap on memory, but a recursion of depth L recomputes each level L times and a
loop calling g recomputes every call. grad's code (srcad/transform/split.py) calls instead g's
*split* adjoint, a generator: `split_forward` runs it up to its seed (g's primal sweep, its tape
kept in the generator's frame) and returns g's value; the caller keeps the frame on a list, and
when its adjoint sweep reaches the call, `split_backward` sends the cotangent into that frame,
which runs g's adjoint sweep only and yields g's gradients (or returns them, when g's split
adjoint has other returns: then they come with its StopIteration).

Frames are matched to adjoint calls by the split function and the identity of every argument:
the adjoint sweep calls in the reverse order of the primal sweep, with the very objects the
primal call had (restored from the tape), so the match is the top frame in practice. Where no
frame matches (an adjoint that runs without its primal call, a call whose adjoint is skipped),
the recomputing `<g>_vjp` runs, exactly as without frames: never a frame of other arguments.

A frame entry is (split, args, frame), or (split, args, frame, kwargs) for a call with keywords:
the common call, positional only, goes through split_forward/split_backward, which take no
**kwargs (CPython would make an empty dict per call); a call with keywords through the `_kw` pair.
"""
from operator import is_


def split_forward(frames, split, *args):
    """g's value from its split adjoint run up to its seed; the suspended frame joins `frames`."""
    frame = split(*args)
    value = next(frame)
    frames.append((split, args, frame))
    return value


def split_forward_kw(frames, split, args, kwargs):
    """split_forward of a call with keywords (`args` a tuple, `kwargs` a dict)."""
    frame = split(*args, **kwargs)
    value = next(frame)
    frames.append((split, args, frame, kwargs))
    return value


def _same(a, b):
    return len(a) == len(b) and all(map(is_, a, b))


def _resume(frame, seed):
    """The gradients the frame hands over when resumed with `seed`: its second yield (the frame
    is then dropped unfinished) or its return value."""
    try:
        return frame.send(seed)
    except StopIteration as done:
        return done.value


def split_backward(frames, split, vjp, seed_name, seed, *args):
    """The cotangents of g's arguments for the output cotangent `seed`: from the frame its primal
    call left (the latest with the same split function and the same argument objects), else by
    the recomputing `vjp`."""
    if frames:      # the common case: the top frame
        top = frames[-1]
        if top[0] is split and len(top) == 3:
            fargs = top[1]
            if len(fargs) == len(args) and all(map(is_, fargs, args)):
                frames.pop()
                try:            # (_resume, inline)
                    return top[2].send(seed)
                except StopIteration as done:
                    return done.value
    return split_backward_kw(frames, split, vjp, seed_name, seed, args, {})


def split_backward_kw(frames, split, vjp, seed_name, seed, args, kwargs):
    """split_backward of a call with keywords (`args` a tuple, `kwargs` a dict)."""
    for k in range(len(frames) - 1, -1, -1):
        entry = frames[k]
        fkwargs = entry[3] if len(entry) == 4 else None
        if entry[0] is split and _same(entry[1], args) and (
                not (fkwargs or kwargs) or fkwargs is not None and fkwargs.keys() == kwargs.keys() and
                _same(list(fkwargs.values()), [kwargs[n] for n in fkwargs])):
            del frames[k]
            return _resume(entry[2], seed)
    return vjp(*args, **kwargs, **{seed_name: seed})
