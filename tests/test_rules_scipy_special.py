"""scipy.special in a differentiated function, as JAX offers jax.scipy.special: the functions
s2s declares (templates/scipy_rules.py) are primitives with their derivative rules and a compiled
form, called as users write them (`from scipy.special import logsumexp`, `scipy.special.expit(x)`,
`import scipy.special as sp`); one it does not declare is refused at the user's line, before
anything reads SciPy's own source."""

import re

import numpy as np
import pytest
import scipy.special
import scipy.special as sp
from scipy.special import j0, zeta

import s2s

# ---- refusals -----------------------------------------------------------------------------


def bessel_loss(x):
    return np.sum(sp.j0(x) * x)


def bessel_imported_loss(x):
    return np.sum(j0(x))


def zeta_loss(x):
    return np.sum(zeta(x + 2.0, 1.0))  # a Python function of SciPy's, not a ufunc


def bessel_value(x):
    return scipy.special.j0(x) * 2.0


def _line_of(fun, text: str) -> int:
    import inspect

    lines, first = inspect.getsourcelines(fun)
    return first + next(k for k, line in enumerate(lines) if text in line)


@pytest.mark.parametrize("fun, called", [(bessel_loss, "scipy.special.j0"), (bessel_imported_loss, "scipy.special.j0"),
                                         (zeta_loss, "scipy.special.zeta"), (bessel_value, "scipy.special.j0")])
@pytest.mark.parametrize("transform", ["grad", "jit", "jit_grad"], ids=str)
def test_an_uncovered_function_is_refused_at_the_users_line(fun, called, transform):
    x = np.array([0.5, 1.0, 2.0])
    made = {"grad": lambda: s2s.grad(fun), "jit": lambda: s2s.jit(fun),
            "jit_grad": lambda: s2s.jit(s2s.grad(fun))}[transform]
    with pytest.raises(s2s.S2SError) as refused:
        made()(x)
    message = str(refused.value)
    assert re.search(rf"test_rules_scipy_special\.py:{_line_of(fun, 'return')}:\d+", message), message
    assert f"no rule for {called}" in message and "s2s.custom_vjp" in message
    assert "site-packages" not in message  # never a line of SciPy's own source
