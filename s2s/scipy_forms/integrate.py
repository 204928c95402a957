"""scipy.integrate.odeint written as NumPy code, which s2s reads like a user's helper: a call
`odeint(func, y0, t, args=(a, b))` in a transformed function is lowered as a call of
`odeint(func, y0, t, (a, b), rtol, atol, mxstep, "y, t")` here (frontend/nested_calls.py,
odeint_call), so the user's dynamics are differentiated, batched and compiled with the rest (a
lambda or a def nested in the transformed function is made a function of its own, the variables
it reads passed after args).

The solver is Dormand and Prince's explicit Runge-Kutta pair of orders 5 and 4 (the one of
scipy.integrate.solve_ivp's RK45 and jax.experimental.ode.odeint) with an adaptive step, which
lands exactly on every requested time. It meets the tolerances odeint is given (rtol and atol,
SciPy's 1.49012e-8 by default), so its values agree with LSODA's to about them; they are not
LSODA's digits. Derivatives are those of the steps taken ("discretise, then differentiate"): the
step sizes the error control chooses are constants of the derivative (stop_gradient), the span
of each last step to a requested time is not, so derivatives in t come out as f(y(t), t).

A stiff system takes many small steps here, where LSODA would switch to an implicit method.
"""

from __future__ import annotations

import numpy as np

from ..runtime import stop_gradient

DEFAULT_TOLERANCE = 1.49012e-8  # odeint's rtol and atol when they are not given
MAX_STEPS = 100_000  # steps between two requested times before giving up (mxstep when given)

# Dormand-Prince 5(4): the stages' weights (c, a), the fifth-order solution's (b) and the
# difference of the fifth- and fourth-order solutions' (e), which estimates the step's error.
C2, C3, C4, C5 = 1 / 5, 3 / 10, 4 / 5, 8 / 9
A21 = 1 / 5
A31, A32 = 3 / 40, 9 / 40
A41, A42, A43 = 44 / 45, -56 / 15, 32 / 9
A51, A52, A53, A54 = 19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729
A61, A62, A63, A64, A65 = 9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656
B1, B3, B4, B5, B6 = 35 / 384, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84
E1, E3, E4, E5, E6, E7 = 71 / 57600, -71 / 16695, 71 / 1920, -17253 / 339200, 22 / 525, -1 / 40


def scaled_rms(v, y, y_new, rtol, atol):
    """The root mean square of v against the tolerance at y and y_new."""
    scale = atol + rtol * np.maximum(np.abs(y), np.abs(y_new))
    return np.sqrt(np.mean((v / scale) ** 2))


def odeint(func, y0, t, args, rtol, atol, mxstep, order):
    """The solution of dy/ds = func(y, s, *args) (func(s, y, *args) where order is "t, y",
    odeint's tfirst=True), y(t[0]) = y0, at the times t (monotonic), one row per time, as
    scipy.integrate.odeint returns it."""

    def rhs(y, s):
        if order == "t, y":
            return func(s, y, *args)
        return func(y, s, *args)

    y = np.atleast_1d(y0) + 0.0  # (a number is a state of one component, as SciPy takes it)
    out = np.zeros((len(t),) + np.shape(y))
    out[0] = y
    f = rhs(y, t[0])
    # The first step: Hairer, Norsett and Wanner's estimate, from the sizes of y0 and f
    d0 = scaled_rms(y, y, y, rtol, atol)
    d1 = scaled_rms(f, y, y, rtol, atol)
    h = stop_gradient(0.01 * d0 / d1 if d0 > 1e-5 and d1 > 1e-5 else 1e-6)
    for k in range(1, len(t)):
        s = t[k - 1]
        span = t[k] - s
        direction = 1.0 if span >= 0 else -1.0
        remaining = np.abs(span)  # of the way to t[k], which the last step covers exactly
        steps = 0
        while remaining > 0:
            steps += 1
            if steps > mxstep:
                raise RuntimeError("odeint took mxstep steps between two requested times without reaching the "
                                   "second; the system may be stiff: pass a larger mxstep, or looser rtol/atol")
            last = h >= remaining
            step = remaining if last else h
            dt = direction * step
            k1 = f  # (the last stage of the step accepted before, at the same point)
            k2 = rhs(y + dt * (A21 * k1), s + C2 * dt)
            k3 = rhs(y + dt * (A31 * k1 + A32 * k2), s + C3 * dt)
            k4 = rhs(y + dt * (A41 * k1 + A42 * k2 + A43 * k3), s + C4 * dt)
            k5 = rhs(y + dt * (A51 * k1 + A52 * k2 + A53 * k3 + A54 * k4), s + C5 * dt)
            k6 = rhs(y + dt * (A61 * k1 + A62 * k2 + A63 * k3 + A64 * k4 + A65 * k5), s + dt)
            y_new = y + dt * (B1 * k1 + B3 * k3 + B4 * k4 + B5 * k5 + B6 * k6)
            k7 = rhs(y_new, s + dt)
            error = dt * (E1 * k1 + E3 * k3 + E4 * k4 + E5 * k5 + E6 * k6 + E7 * k7)
            size = stop_gradient(scaled_rms(error, y, y_new, rtol, atol))
            if size <= 1.0:
                y = y_new
                f = k7
                s = s + dt
                remaining = remaining - step if not last else 0.0
            # the next step, from the error of this one (a fifth-order method: its fifth root)
            h = stop_gradient(step * min(10.0, max(0.2, 0.9 * (size + 1e-300) ** -0.2)))
        out[k] = y
    return out
