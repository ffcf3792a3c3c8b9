"""views: a float64 array's numbers in the Cython text without Cython's typed memoryviews.

A typed memoryview (`double[:]`) brings Cython's whole memoryview support into the module: about
21,000 lines of C, which cost the C compiler more than the rest of a typical derivative module
(13 s of a 20 s build on a loaded 2-core machine). The generated code needs much less: an array's
data pointer, shape and strides, read once through the buffer protocol (`_SrcadView`), and an
element's address from its indices (`_srcad_at<ndim>`: negative indices counted from the end and
bounds checked, raising IndexError as Python does; `_srcad_at<ndim>_proven`: the indices proven
in range where the code was written, no test but the unbound one).

A view holds the buffer (and so the array) until it is dropped; the number format must be a
native float64 ('d') and the rank the one the signature gives, else ValueError, as a typed
memoryview would raise.
"""

VIEW = "_SrcadView"
RESERVED = (VIEW, "PyObject_GetBuffer", "PyBuffer_Release", "PyBUF_STRIDES", "PyBUF_FORMAT", "PyBUF_WRITABLE")

VIEW_TEXT = f'''
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_STRIDES, PyBUF_FORMAT, PyBUF_WRITABLE


@cython.final
cdef class {VIEW}:
    """A float64 array's numbers, shape and strides, held through the buffer protocol."""
    cdef Py_buffer buf
    cdef bint held

    def __cinit__(self, obj, int ndim, bint write):
        self.held = False
        PyObject_GetBuffer(obj, &self.buf, PyBUF_STRIDES | PyBUF_FORMAT | (PyBUF_WRITABLE if write else 0))
        self.held = True
        cdef bytes fmt = self.buf.format if self.buf.format != NULL else b"B"
        if self.buf.itemsize != 8 or fmt not in (b"d", b"<d", b"=d", b"@d"):
            raise ValueError(f"Buffer dtype mismatch, expected 'double' but got {{fmt.decode()!r}}")
        if self.buf.ndim != ndim:
            raise ValueError(f"Buffer has wrong number of dimensions (expected {{ndim}}, got {{self.buf.ndim}})")

    def __dealloc__(self):
        if self.held:
            PyBuffer_Release(&self.buf)
'''


def accessors(ndims):
    """The Cython text of the element accessors for arrays of these ranks."""
    out = []
    for n in sorted(ndims):
        idx = [f"i{k}" for k in range(n)]
        params = ", ".join(f"Py_ssize_t {i}" for i in idx)
        offset = " + ".join(f"{i} * v.buf.strides[{k}]" for k, i in enumerate(idx))
        out += ["", "",
                f"cdef inline double* _srcad_at{n}({VIEW} v, {params}) except NULL:",
                f'    """The address of v[{", ".join(idx)}]: negative indices from the end, bounds checked."""',
                "    if v is None:",
                '        raise UnboundLocalError("an array read before it was assigned")']
        for k, i in enumerate(idx):
            out += [f"    if {i} < 0:",
                    f"        {i} += v.buf.shape[{k}]",
                    f"    if not 0 <= {i} < v.buf.shape[{k}]:",
                    f'        raise IndexError("Out of bounds on buffer access (axis {k})")']
        out += [f"    return <double*> (<char*> v.buf.buf + {offset})",
                "", "",
                f"cdef inline double* _srcad_at{n}_proven({VIEW} v, {params}) except NULL:",
                f'    """The address of v[{", ".join(idx)}], the indices proven in range where the code was written."""',
                "    if v is None:",
                '        raise UnboundLocalError("an array read before it was assigned")',
                f"    return <double*> (<char*> v.buf.buf + {offset})"]
    return out
