"""The differential operators, one module per idea:

- gradients.py: grad and value_and_grad (and the program srcad.distributed sends its workers)
- directional.py: vjp and jvp (and what stands for srcad.jvp inside differentiated code)
- jacobians.py: jacobian, and the batched sweeps along unit directions that hessian uses too
- second_order.py: hvp and hessian (forward over reverse)
- emitting.py: emit, the generated code as text
- checking.py: check_grad
- passing.py: how a function reaches an operator (a lambda, method, partial or a function a srcad
  operator returned; wrt read against its parameters)
- units.py: the generated units they run: loaded (srcad/cache.py), specialised to the call's
  signature, compiled on request, called

The generated code they run comes from srcad/cache.py.
"""
from .checking import check_grad
from .directional import jvp, vjp
from .emitting import emit
from .gradients import grad, value_and_grad
from .jacobians import jacobian
from .second_order import hessian, hvp

# reached as srcad.api._name by srcad.distributed and by tests that drive the generated units directly
from ..inputs import differentiable_arg as _differentiable_arg
from .gradients import _call_checked, generated_program
from .jacobians import _forward_columns
from .passing import _as_passed, _params, _shift
from .units import _call_jvp, _module, _vjp_function

__all__ = ["check_grad", "emit", "grad", "hessian", "hvp", "jacobian", "jvp", "value_and_grad", "vjp"]
