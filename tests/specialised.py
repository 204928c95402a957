"""The gradient (and jvp) that s2s.jit compiles for given arguments, run as plain NumPy.

s2s.jit generates a gradient for what its arguments are (s2s/analysis/shapes.py). The module is
valid NumPy too, so the tests can run it on the python backend: cheap (no compilation)
for every corpus program and every random program.
"""

import s2s
from s2s.doors import core
from s2s.doors.values import zero_tangent
from s2s import backends
from s2s.tree_util import pytree
from s2s.analysis.shapes import argument_facts


def specialised_grad(fun, args, argnums=0):
    g = s2s.grad(fun, argnums=argnums)
    args = g._bind(tuple(args), {}, (argnums,) if isinstance(argnums, int) else tuple(argnums))  # defaults
    source, entries = g.specialised(args)
    module = backends.load(source, fun.__name__, "python")
    vjp = getattr(module, entries["vjp"])
    _, grads = vjp(*args, core._seed(args))
    picked = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    grads = tuple(pytree.restructure(gr, args[k]) for gr, k in zip(grads, picked))
    return grads[0] if isinstance(argnums, int) else grads


def specialised_jvp(fun, primals, tangents, active=None):
    """(value, tangent) from the forward module that s2s.jvp compiles for these arguments;
    active: the arguments that have tangents (the others' are symbolic zeros), default all."""
    primals = s2s.grad(fun)._bind(tuple(primals), {}, ())  # defaults filled in
    options = {} if active is None else {"active": list(active)}
    if active is None:
        tangents = tuple(tangents) + tuple(zero_tangent(p) for p in primals[len(tangents):])
    options["facts"] = argument_facts(tuple(primals) + tuple(tangents))
    source, entries = core._generated(fun, "jvp", options)
    module = backends.load(source, fun.__name__ + "_jvp", "python")
    entry = getattr(module, entries["jvp"])
    return entry(*primals, *tangents)
