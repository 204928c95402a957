"""Rules a user gives for one of their functions: s2s.custom_vjp, s2s.custom_jvp, s2s.checkpoint.

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

`@s2s.custom_jvp` gives a function's forward mode, as jax.custom_jvp: f.defjvp(f_jvp), where
f_jvp(primals, tangents) returns (value, tangent), the tangent linear in the tangents. Forward
mode calls the rule (transforms/custom_rules.py); reverse mode calls its transpose: the reverse
mode of the rule with respect to its tangents, which is exact because the tangent is linear in
them (JAX transposes the rule's linear part too).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from ..errors import S2SError


class CustomRule:
    """A user function with a derivative rule of the user's: what the transforms share of
    custom_vjp and custom_jvp. Called from Python, it runs the function."""

    kind = ""

    def __init__(self, fun: Callable, nondiff_argnums: tuple[int, ...] = ()):
        if nondiff_argnums:
            raise S2SError(f"s2s.{self.kind}({getattr(fun, '__name__', 'fun')}, nondiff_argnums=...) is not "
                           "supported",
                           hint="pass those arguments as ordinary ones (their derivatives are then asked of "
                                "the rule: a zero for each, 0.0 or np.zeros_like of the argument)")
        functools.update_wrapper(self, fun)
        self.fun = fun

    def rule_functions(self) -> tuple[Callable, ...]:
        raise NotImplementedError

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fun(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<s2s.{self.kind} of {self.__name__}>"


class custom_vjp(CustomRule):  # noqa: N801  (JAX's spelling)
    """A function with a reverse-mode rule of the user's: f.defvjp(fwd, bwd)."""

    kind = "custom_vjp"

    def __init__(self, fun: Callable, nondiff_argnums: tuple[int, ...] = ()):
        super().__init__(fun, nondiff_argnums)
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

    def rule_functions(self) -> tuple[Callable, Callable]:
        """(fwd, bwd), for the transforms; an S2SError where defvjp was not called."""
        if self.fwd is None or self.bwd is None:
            raise S2SError(f"{self.__name__} is an s2s.custom_vjp with no rule",
                           hint=f"call {self.__name__}.defvjp(fwd, bwd) before transforming it")
        return self.fwd, self.bwd


class custom_jvp(CustomRule):  # noqa: N801  (JAX's spelling)
    """A function with a forward-mode rule of the user's: f.defjvp(f_jvp), also as a decorator."""

    kind = "custom_jvp"

    def __init__(self, fun: Callable, nondiff_argnums: tuple[int, ...] = ()):
        super().__init__(fun, nondiff_argnums)
        self.jvp: Callable | None = None

    def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
        """jvp(primals, tangents) -> (value, tangent): primals and tangents are tuples with one
        entry per argument; the tangent must be linear in the tangents. Returns jvp."""
        if symbolic_zeros:
            raise S2SError("custom_jvp.defjvp(..., symbolic_zeros=True) is not supported",
                           hint="leave symbolic_zeros out: the rule receives zeros for arguments without tangents")
        if not callable(jvp):
            raise S2SError("custom_jvp.defjvp: the rule is not a function")
        self.jvp = jvp
        return jvp

    def defjvps(self, *jvps: Callable) -> None:
        raise S2SError("custom_jvp.defjvps is not supported", hint="write one rule with f.defjvp")

    def rule_functions(self) -> tuple[Callable]:
        """(jvp,), for the transforms; an S2SError where defjvp was not called."""
        if self.jvp is None:
            raise S2SError(f"{self.__name__} is an s2s.custom_jvp with no rule",
                           hint=f"define its rule with @{self.__name__}.defjvp before transforming it")
        return (self.jvp,)


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
