"""Which transforms of the user's functions a module needs: one per set of arguments.

A call helper(x, 2.0) needs the tangent (adjoint) of x only; the constant's is a symbolic
zero. So the callee gets a jvp (vjp) of its own for x, and no rule multiplies an infinite
partial (log(x) at x = 0) by a tangent of zeros, nor computes an adjoint to throw it away.
"""

from __future__ import annotations

import ast
from typing import Any

from ..codegen.emit import Emitter
from ..codegen.module import primal_function
from ..errors import S2SError
from ..ir import nodes as ir
from ..rules.custom import CustomRule, custom_jvp, custom_vjp
from .custom_rules import by_rule_function, custom_jvp_function, refuse_forward
from .forward import JVP


class Variants:
    """The transforms of user functions that their callers need, one per set of arguments.

    A call helper(x, 2.0) needs the tangent (adjoint) of x only: the constant's is a symbolic
    zero, so the callee gets a jvp (vjp) of its own for x, `helper_jvp_wrt_x`, where the
    tangent of 2.0 is never an array of zeros that a rule multiplies by an infinite partial
    (log(x) at x = 0), nor an adjoint computed and thrown away. With every argument it is
    `helper_jvp` (`helper_vjp`). Callers are transformed before their callees (`transform`;
    for reverse mode, the reverse_sweep pass: transforms/reverse/passes.py), so each callee is
    transformed for exactly the sets that its calls ask for.
    """

    def __init__(self, functions: list[ir.Function], emitter: Emitter, suffix: str):
        self.functions = functions
        self.emitter = emitter
        self.suffix = suffix
        self.wanted: dict[int, dict[tuple[str, ...], str]] = {id(f.python): {} for f in functions}
        self.params = {id(f.python): f.params for f in functions}
        self.taken = set(emitter.function_names.values())
        self.tangent_transposes: set[str] = set()  # the reverse modes of custom_jvp rules (core.vjp_function)

    def __call__(self, fn: Any, positions: tuple[int, ...]) -> str:
        """The name of fn's transform for the arguments at these positions."""
        params = self.params[id(fn)]
        return self.name(fn, tuple(dict.fromkeys(params[k] for k in positions)))

    def plain_name(self, fn: Any, active: tuple[str, ...]) -> str:
        """The name of fn's transform for these parameters, before a clash gives it a suffix."""
        base = self.emitter.function_names[id(fn)] + self.suffix
        return base if list(active) == self.params[id(fn)] else f"{base}_wrt_{'_'.join(active)}"

    def name(self, fn: Any, active: tuple[str, ...], fixed: str | None = None) -> str:
        variants = self.wanted[id(fn)]
        if active not in variants:
            candidate = fixed or self.plain_name(fn, active)
            unique, k = candidate, 1
            while unique in self.taken:
                k += 1
                unique = f"{candidate}_{k}"
            self.taken.add(unique)
            variants[active] = unique
        return variants[active]

    def by_rule(self, fn: Any) -> str:
        """The name of the function that gives an s2s.custom_vjp's or custom_jvp's value as its
        rule does (fwd's value, the jvp rule's value): what the forward sweep of reverse mode
        calls where the call is differentiated, as JAX's derivatives see the rule's value."""
        return self.name(fn, ("__by_rule__",), fixed=self.emitter.function_names[id(fn)] + "_by_rule")

    def transform(self, make) -> list:
        """make(lowered, active params, name) -> a FunctionDef, for every wanted variant: callers
        first, so that their calls are known; returned callees first, each in the order asked."""
        made: dict[int, list] = {}
        for lowered in reversed(self.functions):
            made[id(lowered.python)] = [by_rule_function(lowered, self.emitter, fname) if active == ("__by_rule__",)
                                        else make(lowered, list(active), fname)
                                        for active, fname in self.wanted[id(lowered.python)].items()]
        return [d for lowered in self.functions for d in made[id(lowered.python)]]


def argnum_params(entry: ir.Function, argnums: tuple[int, ...]) -> list[str]:
    active = []
    for k in argnums:
        if not -len(entry.params) <= k < len(entry.params):
            raise S2SError(f"argnums {k} is out of range for {entry.name}, which takes "
                           f"{len(entry.params)} arguments")
        active.append(entry.params[k])
    if len(set(active)) != len(active):
        raise S2SError(f"argnums {argnums} repeats an argument")
    return active


def jvp_functions(functions: list[ir.Function], emitter: Emitter,
                  entry_active: list[list[str]]) -> tuple[list, list[str]]:
    """Forward-mode functions: the entry's for each list of active parameters in entry_active
    (`<name>_jvp` for all of them, `<name>_jvp_wrt_x` for x alone), those of its callees that
    these call, and the primals of the callees that they call without tangents; and the names
    of the entry's, in the order of entry_active."""
    entry = functions[-1]
    variants = Variants(functions, emitter, "_jvp")
    entry_names = [variants.name(entry.python, tuple(active)) for active in entry_active]

    def make(lowered, params, fname):
        if isinstance(lowered.python, custom_vjp):
            refuse_forward(lowered)
        if isinstance(lowered.python, custom_jvp):
            return custom_jvp_function(lowered, functions, emitter, params, fname)
        return JVP(lowered, emitter, params, fname, variants, entry=lowered is entry).build()

    defs = variants.transform(make)
    # (the entry too where it is an s2s.custom_jvp: its rule may call it)
    with_primals = functions if isinstance(entry.python, CustomRule) else functions[:-1]
    primals = {emitter.function_names[id(f.python)]: f for f in with_primals}
    called = {n.id for d in defs for n in ast.walk(d) if isinstance(n, ast.Name) and n.id in primals}
    pending = list(called)
    while pending:  # and the callees of those
        for callee in primals[pending.pop()].callees.values():
            cname = emitter.function_names[id(callee)]
            if cname not in called:
                called.add(cname)
                pending.append(cname)
    return [primal_function(f, emitter) for f in with_primals
            if emitter.function_names[id(f.python)] in called] + defs, entry_names
