"""Regressions from the property test, each checked against central finite differences."""
import numpy as np
import pytest

import srcad
import regression_cases as rc
from fdcheck import assert_grad_close

CASES = [rc.scalar_times_reshaped_product, rc.mean_of_stack_times_item, rc.loop_carried_first_use,
         rc.iterate_over_rebound_name]


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_regression(f):
    x = np.array([0.41, -0.69, -1.37, -1.45])
    y = np.array([0.94, 1.24, 0.32, 0.69])
    gx, gy = srcad.grad(f, wrt=(0, 1))(x, y)
    assert_grad_close(f, (x, y), gx, wrt=0)
    assert_grad_close(f, (x, y), gy, wrt=1)
