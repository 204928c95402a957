"""Rules a user gives for one of their functions: s2s.custom_vjp, and s2s.checkpoint.

`@s2s.custom_vjp` marks a function whose reverse mode is the user's own, as jax.custom_vjp:

    @s2s.custom_vjp
    def clip_gradient(x, lo, hi):
        return x

    def clip_gradient_fwd(x, lo, hi):
        return x, (lo, hi)                    # the value, and what the backward pass needs

    def clip_gradient_bwd(residuals, g):
        lo, hi = residuals
        return (np.clip(g, lo, hi), 0.0, 0.0)  # one cotangent per argument

    clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)

Called from Python, the object runs the function. Inside a transformed function (and
transformed itself), reverse mode calls the rule instead of differentiating the body: the
frontend keeps the object as the callee (frontend/collect.py lowers its body for the value
and collects fwd and bwd as callees), and transforms/variants.py writes its vjp as a call of
fwd then bwd. Forward mode has no rule to use, as in JAX: jvp and jacfwd of it are refused;
second derivatives differentiate the generated reverse code, fwd and bwd included, forward.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from ..errors import S2SError


class custom_vjp:  # noqa: N801  (JAX's spelling)
    """A function with a reverse-mode rule of the user's: f.defvjp(fwd, bwd)."""

    def __init__(self, fun: Callable, nondiff_argnums: tuple[int, ...] = ()):
        if nondiff_argnums:
            raise S2SError(f"s2s.custom_vjp({getattr(fun, '__name__', 'fun')}, nondiff_argnums=...) is not "
                           "supported",
                           hint="pass those arguments as ordinary ones, and have bwd return a zero "
                                "cotangent (0.0, or np.zeros_like of the argument) for each")
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None

    def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False) -> None:
        """fwd(*args) -> (value, residuals); bwd(residuals, cotangent of the value) -> a tuple
        with one cotangent per argument of the function, each of its argument's shape."""
        if symbolic_zeros:
            raise S2SError("custom_vjp.defvjp(..., symbolic_zeros=True) is not supported",
                           hint="leave symbolic_zeros out: bwd receives the cotangent as an array or number")
        for part, rule in (("fwd", fwd), ("bwd", bwd)):
            if not callable(rule):
                raise S2SError(f"custom_vjp.defvjp: {part} is not a function")
        self.fwd, self.bwd = fwd, bwd

    def rule(self) -> tuple[Callable, Callable]:
        """(fwd, bwd), for the transforms; an S2SError where defvjp was not called."""
        if self.fwd is None or self.bwd is None:
            raise S2SError(f"{self.__name__} is an s2s.custom_vjp with no rule",
                           hint=f"call {self.__name__}.defvjp(fwd, bwd) before transforming it")
        return self.fwd, self.bwd

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fun(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<s2s.custom_vjp of {self.__name__}>"


def checkpoint(fun: Callable | None = None, *, prevent_cse: bool = True, policy: Any = None,
               static_argnums: tuple[int, ...] = ()) -> Callable:
    """jax.checkpoint (jax.remat): fun itself. s2s's reverse mode already does what it asks of a
    function that the differentiated code calls: the forward sweep stores only the call's
    arguments (on a loop's tape where a loop calls it), and the backward sweep runs fun's body
    again before its adjoints. No policy saves more; prevent_cse and static_argnums change
    nothing here. As a decorator, with or without arguments."""
    if fun is None:
        return lambda f: checkpoint(f, prevent_cse=prevent_cse, policy=policy, static_argnums=static_argnums)
    return fun


remat = checkpoint
