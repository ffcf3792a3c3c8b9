"""reverse: the adjoint of a normalized function, as a primal sweep followed by an adjoint sweep.

The primal sweep is the user's code, plus a tape (a Python list) that saves what the adjoint
will need but a later statement overwrites: the old value of a re-assigned name, the entries a
subscript write replaces, trip counts of loops that can end early. The adjoint sweep visits the
statements in reverse: the adjoint of an `if` is an `if` on the same (restored) test, the adjoint
of a loop is a loop over the same range reversed. After a statement's adjoint, the values it
overwrote are popped back, so every adjoint reads the primal values of its own moment.

Cotangents are named `<name>_bar`. A cotangent that nothing has reached yet is not materialised:
the first contribution assigns it, later ones go through `rt.add`.

The package, one module per idea; the Reverse class is composed of one mixin from each:

  driver.py     the Reverse class: its state, and `run`, which writes the adjoint sweep, resolves
                the tape, writes the primal sweep and assembles `<f>_vjp`
  adjoint.py    the adjoint sweep's statements: assignments (rules, registered and custom rules,
                forward-only rules transposed, user functions' adjoints), subscript writes, appends
  control.py    the adjoint sweep's branches and loops (cotangents materialised before them,
                loops reversed over their range or taped trip count)
  primal.py     the primal sweep: the user's code with the pushes the adjoint sweep needs
  tape.py       what is saved and popped back: where names are assigned, the markers the adjoint
                sweep leaves, and their resolution (only saves some adjoint reads)
  ownership.py  cotangent names, how contributions accumulate, and which cotangent arrays are
                owned (`Own`: updated in place) where the kinds are known
  plain.py      plain NumPy where the kinds pass is sure (an int index, a full sum's adjoint, no
                unbroadcast where shapes agree, a dense product's adjoint as `x.T @ g`)
  shapes.py     values read only for their shape: read from a kept value of the same kind or
                written from the shape's token, taped as a stand-in that holds no memory; a full
                sum's or mean's cotangent as its one number where that gives the same values
"""
from .driver import Reverse
from .ownership import Own

__all__ = ["Reverse", "Own"]
