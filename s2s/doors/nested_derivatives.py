"""s2s.grad, s2s.hessian, s2s.jacfwd and s2s.jacrev called inside a transformed function, as JAX
code writes them (the gradient of a Laplacian, a physics-informed loss, a gradient penalty):

    def loss(x):
        return np.trace(s2s.hessian(f)(x))

The call becomes a call of a small Python function that s2s writes for f, which takes the
derivative in forward mode, with nested s2s.jvp calls, one per element of the argument (and
per pair of elements for the Hessian):

    def f_hessian_x(a0):
        n = a0.size
        hessian = np.zeros((n, n))
        for i in range(n):
            ...
                hessian[i, j] = s2s.jvp(lambda u: f_slope_x(u, t), (a0,), (other,))[1]
        return hessian.reshape(a0.shape + a0.shape)

The transform around it reads that function like the user's code. Forward mode is the one
s2s can nest under every transform: reverse mode over it is reverse over forward code, which
has no tapes; the reverse-mode code that s2s.grad(f) outside would run has tapes, and reverse
mode of generated reverse-mode code is refused (transforms/reverse/core.py). The price is one
jvp per element (n for grad and jacfwd, n^2 for the Hessian) instead of one reverse sweep.

Where the function around is compiled and not differentiated (s2s.jit of a train_step that
takes s2s.grad(loss_fn)(params)), grad and value_and_grad are one reverse sweep instead: the
call becomes a call of a helper that calls f's generated reverse mode with the seed 1.0,

    def loss_fn_grad_params(a0, a1):
        value, adjoints = vjp(a0, a1, 1.0)
        runtime.require_scalar(value, "...")
        return adjoints[0]

and s2s.jit reads that generated code like the user's (as forward mode reads it for a second
derivative). has_aux=True is taken there too (the vjp's value is then (value, aux)).

grad (and value_and_grad) take x a number, an array, or a tuple, list, namedtuple or dict of
them, nested, one number of x at a time (runtime.flat_size, unit_tangent, gradient_like): the
gradient has x's structure, and the gradient of a function of a number is a number, as JAX's.
hessian, jacfwd and jacrev are written for array arguments (x.size, x.reshape). grad,
value_and_grad and hessian take a function with a number output, jacfwd and jacrev one with an
array output. A module of them is written once per function to the cache directory, with f in
its namespace as `fun`.

f may be a helper written here (s2s.grad(s2s.grad(f))), or a lambda or def nested in the
transformed function: the frontend writes that as a module-level def with the variables it
reads of the transformed function as parameters after its own (frontend/nested_calls.py), and
local_function makes it a function of its own, in a file of the cache directory, with the
transformed function's globals and closure cells. The call passes those variables on, so the
transform around differentiates through them too: d/dx of x * s2s.grad(lambda y: x * y)(2.0)
is 2x.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import math
import os
import re
import sys
import types
import weakref
from typing import Callable

from .. import backends
from ..driver import cache
from ..errors import S2SError
from ..frontend.nested import register_local_function, register_nested_call, register_nested_object
from .api import grad, value_and_grad
from .core import Transformed, _generated_manifest
from .forward import _nested_entry
from .jacobians import Jacobian, SecondOrder, hessian, jacfwd, jacrev

_MEMO: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_LOCAL: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # fn -> {its source: the function}


def _signature(fun: Callable) -> list[str]:
    """The helper's parameters, a0, a1, ... (never the names the helper uses itself), with
    fun's constant defaults."""
    params = []
    for k, param in enumerate(inspect.signature(fun).parameters.values()):
        if param.kind not in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            raise S2SError(f"{fun.__name__} has *args or keyword-only parameters",
                           hint="give it plain positional parameters")
        default = param.default
        if default is param.empty:
            params.append(f"a{k}")
        elif isinstance(default, (bool, int, str, type(None))) or isinstance(default, float) and math.isfinite(default):
            params.append(f"a{k}={default!r}")
        else:
            raise S2SError(f"the default of {fun.__name__}({param.name}=...) is not a number",
                           hint="pass the argument explicitly")
    return params


def _call(function: str, names: list[str], k: int, replacement: str, extra: str = "") -> str:
    """function(a0, ..., u, ..., extra): argument k replaced."""
    args = [replacement if j == k else name for j, name in enumerate(names)]
    return f"{function}({', '.join(args + ([extra] if extra else []))})"


def _helper_source(fun: Callable, kind: str, k: int) -> tuple[str, str]:
    """(module source, the helper's name) for s2s.<kind>(fun, argnums=k)."""
    params = _signature(fun)
    names = [p.partition("=")[0] for p in params]
    x = names[k]
    name = re.sub(r"\W", "_", fun.__name__).strip("_") or "fun"  # (a lambda's is <lambda>)
    shown = getattr(fun, "__s2s_shown__", fun.__name__)  # (in messages: the name the user wrote)
    label = list(inspect.signature(fun).parameters)[k]  # (the user's name of the argument, for the names)
    slope = f"{name}_slope_{label}"
    helper = f"{name}_{kind}_{label}"
    lines = [
        f'"""s2s.{kind}({name}, argnums={k}) called inside a transformed function, in forward mode with nested',
        'calls of s2s.jvp, which every transform takes (written by s2s.doors.nested_derivatives)."""',
        "",
        "import numpy as np",
        "",
        "import s2s",
        "from s2s import runtime",
        "",
    ]
    refusal = (f"s2s.{kind}({shown}) inside a transformed function takes an array as its argument {label}, not a "
               f"number; for a number t write the derivative with s2s.jvp: s2s.jvp(lambda u: {shown}(..., u, ...), "
               "(t,), (1.0,))[1]")
    check = f"    runtime.require_array({x}, {refusal!r})"
    number = (f"s2s.{kind}({shown}) inside a transformed function takes a function with a number output; for an "
              f"array output use s2s.jacfwd({shown})(...)")
    array = (f"s2s.{kind}({shown}) inside a transformed function takes a function with an array output; for a "
             f"number output use s2s.grad({shown})(...)")
    tangent_of = f"s2s.jvp(lambda u: {_call('fun', names, k, 'u')}, ({x},), ({{}},))[1]"
    if kind == "hessian":
        lines += [
            "",
            f"def {slope}({', '.join(names + ['t'])}):",
            f"    return {tangent_of.format('t')}",
            "",
            "",
            f"def {helper}({', '.join(params)}):",
            check,
            f"    n = {x}.size",
            "    hessian = np.zeros((n, n))",
            "    for i in range(n):",
            "        unit = np.zeros(n)",
            "        unit[i] = 1.0",
            f"        t = unit.reshape({x}.shape)",
            "        for j in range(n):",
            "            other = np.zeros(n)",
            "            other[j] = 1.0",
            f"            value = s2s.jvp(lambda u: {_call(slope, names, k, 'u', 't')}, ({x},), "
            f"(other.reshape({x}.shape),))[1]",
            f"            runtime.require_scalar(value, {number!r})",
            "            hessian[i, j] = value",
            f"    return hessian.reshape({x}.shape + {x}.shape)",
        ]
    elif kind in ("grad", "value_and_grad"):
        # (x a number, an array, or a container of them: runtime.unit_tangent gives the
        # tangent of its number i, runtime.gradient_like the gradient in x's structure)
        gradient = f"runtime.gradient_like(gradient, {x})"
        lines += [
            "",
            f"def {helper}({', '.join(params)}):",
            f"    n = runtime.flat_size({x})",
            "    gradient = np.zeros(n)",
            "    for i in range(n):",
            f"        value = {tangent_of.format(f'runtime.unit_tangent({x}, i)')}",
            f"        runtime.require_scalar(value, {number!r})",
            "        gradient[i] = value",
            f"    return {gradient}" if kind == "grad" else f"    return ({_call('fun', names, k, x)}, {gradient})",
        ]
    else:  # jacfwd, jacrev: the first column gives the output's shape
        lines += [
            "",
            f"def {helper}({', '.join(params)}):",
            check,
            f"    n = {x}.size",
            "    first_unit = np.zeros(n)",
            "    first_unit[0] = 1.0",
            f"    first = {tangent_of.format(f'first_unit.reshape({x}.shape)')}",
            f"    runtime.require_array(first, {array!r})",
            "    columns = np.zeros((n, first.size))",
            "    columns[0] = first.reshape(first.size)",
            "    for i in range(1, n):",
            "        unit = np.zeros(n)",
            "        unit[i] = 1.0",
            f"        column = {tangent_of.format(f'unit.reshape({x}.shape)')}",
            "        columns[i] = column.reshape(first.size)",
            f"    return np.transpose(columns).reshape(first.shape + {x}.shape)",
        ]
    return "\n".join(lines) + "\n", helper


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def _reverse_helper_source(fun: Callable, kind: str, k: int, has_aux: bool) -> tuple[str, str]:
    """(module source, the helper's name) for s2s.<kind>(fun, argnums=k, has_aux=...) (grad,
    value_and_grad) in a function that is compiled and not differentiated: one call of fun's
    generated reverse mode, `vjp`, with the seed 1.0."""
    params = _signature(fun)
    names = [p.partition("=")[0] for p in params]
    name = re.sub(r"\W", "_", fun.__name__).strip("_") or "fun"
    shown = getattr(fun, "__s2s_shown__", fun.__name__)
    label = list(inspect.signature(fun).parameters)[k]
    helper = f"{name}_{kind}_{label}" + ("_with_aux" if has_aux else "")
    number = (f"s2s.{kind}({shown}) inside a transformed function takes a function with a number output; for an "
              f"array output use s2s.jacrev({shown})(...)")
    value = "(value, aux)" if has_aux else "value"
    returned = {("grad", False): "adjoints[0]", ("grad", True): "(adjoints[0], aux)",
                ("value_and_grad", False): "(value, adjoints[0])",
                ("value_and_grad", True): "((value, aux), adjoints[0])"}[kind, has_aux]
    lines = [
        f'"""s2s.{kind}({name}, argnums={k}) called inside a function that s2s.jit compiles: one reverse sweep of',
        f'{name}\'s generated reverse mode, vjp (written by s2s.doors.nested_derivatives)."""',
        "",
        "from s2s import runtime",
        "",
        "",
        f"def {helper}({', '.join(params)}):",
        f"    {value}, adjoints = vjp({', '.join(names)}, 1.0)",
        f"    runtime.require_scalar(value, {number!r})",
        f"    return {returned}",
    ]
    return "\n".join(lines) + "\n", helper


def _reverse_entry(fun: Callable, kind: str, k: int, has_aux: bool) -> Callable:
    """The helper s2s.<kind>(fun, argnums=k, has_aux=...) (grad, value_and_grad) calls where it is
    compiled and not differentiated: fun's reverse mode, generated once, read by the transform
    around it as the generated code it is (as forward mode reads it for a second derivative)."""
    source, manifest = _generated_manifest(fun, "grad", {"argnums": [k], "has_aux": has_aux})
    vjp = getattr(backends.load(source, fun.__name__, "python"), f"{manifest['entries']['name']}_vjp")
    text, helper_name = _reverse_helper_source(fun, kind, k, has_aux)
    helper = _helper_module(fun, text, helper_name, vjp=vjp)
    setattr(helper, cache.NESTED_MANIFEST, cache.nested_manifest(fun, [manifest]))
    return helper


def _nested_file(fun: Callable, source: str, name: str) -> tuple[str, str]:
    """(module name, path) of source written for fun in a file of the cache directory, named by
    name and a digest of fun's place and the source."""
    digest = hashlib.sha256(f"{fun.__module__}.{fun.__qualname__}\0{source}".encode()).hexdigest()[:16]
    directory = cache.usable_dir(os.path.join(cache.user_cache_dir(), "nested"))
    path = os.path.join(directory, f"{name}_{digest}.py")
    if not os.path.exists(path) or _read(path) != source:
        cache.write_atomic(path, source)
    return f"s2s_nested.{name}_{digest}", path


def _helper_module(fun: Callable, source: str, helper_name: str, **names) -> Callable:
    """The function helper_name of a module of the cache directory holding source, with fun
    (and names) in its namespace before it runs."""
    module_name, path = _nested_file(fun, source, helper_name)
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    module.fun = fun  # (before it runs: its functions read fun when the frontend reads them)
    for key, value in names.items():
        setattr(module, key, value)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return getattr(module, helper_name)


def nested_derivative(kind: str) -> Callable:
    """What s2s.<kind>(fun, argnums)(...) inside a transformed function calls: reverse, where the
    function around it is compiled and not differentiated (grad and value_and_grad)."""

    def entry_of(fun: Callable, argnums, reverse: bool = False, has_aux: bool = False) -> Callable:
        if not isinstance(argnums, int):
            raise S2SError(f"s2s.{kind} inside a transformed function takes one int argnums",
                           hint="differentiate with respect to one argument per call")
        count = len(inspect.signature(fun).parameters)
        if not -count <= argnums < count:
            raise S2SError(f"argnums {argnums} is out of range for the {count} parameters of {fun.__name__}")
        k = argnums % count
        reverse = reverse and kind in ("grad", "value_and_grad")
        memo = _MEMO.setdefault(fun, {})
        stamp = (cache.source_hash(fun), cache.baked_state(fun))  # (its defaults are written into the helper)
        found = memo.get((kind, k, reverse, has_aux))
        if found is not None and found[0] == stamp:
            return found[1]
        if reverse:
            helper = _reverse_entry(fun, kind, k, has_aux)
        else:
            source, helper_name = _helper_source(fun, kind, k)
            helper = _helper_module(fun, source, helper_name)
            # The caller's module is made from fun and what fun's forward mode was made from (the
            # helper itself is s2s's: the implementation fingerprint covers it).
            forward = _nested_entry(fun)
            setattr(helper, cache.NESTED_MANIFEST, getattr(forward, cache.NESTED_MANIFEST))
        helper.__s2s_shown__ = f"s2s.{kind}({getattr(fun, '__s2s_shown__', fun.__name__)})"  # (grad of grad's messages)
        memo[(kind, k, reverse, has_aux)] = (stamp, helper)
        return helper

    return entry_of


for _public, _kind in ((grad, "grad"), (value_and_grad, "value_and_grad"), (hessian, "hessian"), (jacfwd, "jacfwd"),
                      (jacrev, "jacrev")):
    register_nested_call(_public, nested_derivative(_kind))


def _entry_of_object(made, reverse: bool = False) -> Callable | None:
    """The function a call of a transform's result g = s2s.grad(f) (jacfwd, jacrev, hessian; also
    jitted) becomes inside a transformed function, or None where it is not one of those."""
    if isinstance(made, Transformed) and made.kind == "grad" and not made.has_aux and not made.rows \
            and isinstance(made.argnums, int):
        kind, argnums = "grad", made.argnums
    elif isinstance(made, Jacobian) and not made.has_aux and isinstance(made.argnums, int):
        kind, argnums = ("jacfwd" if made.forward else "jacrev"), made.argnums
    elif isinstance(made, SecondOrder) and not made.scalar and not made.has_aux \
            and made.outer_argnums == made.inner_argnum:
        kind, argnums = "hessian", made.inner_argnum
    else:
        return None
    if not inspect.isfunction(made.fun):
        return None
    return nested_derivative(kind)(made.fun, argnums, reverse)


register_nested_object(_entry_of_object)


def local_function(fn: Callable, name: str, text: str, cells: list[str], about: str, shown: str) -> Callable:
    """A lambda or def nested in fn that s2s.grad(...) is given inside fn, as a function of its
    own: text, the source of a module-level def `name` (the frontend writes it, with the
    variables of fn that it reads as parameters after its own), in a file of the cache
    directory, with fn's globals and the cells of fn's closure named in cells (read when it
    runs, as the nested function reads them). shown: its name in messages (the user's)."""
    # (the header frontend/source.py knows generated files by)
    source = f"# Generated by s2s from {about} (written by s2s.doors.nested_derivatives).\n"
    if cells:  # (a def in a function whose locals they are: its code reads them as closure cells)
        body = "\n".join("    " + line if line else line for line in text.splitlines())
        source += f"def _closure():\n    {' = '.join(cells)} = None\n\n{body}\n    return {name}\n"
    else:
        source += text
    memo = _LOCAL.setdefault(fn, {})
    found = memo.get(source)
    if found is not None:
        return found
    module_name, path = _nested_file(fn, source, name)
    code = compile(source, path, "exec")
    made = next(c for c in code.co_consts
                if isinstance(c, types.CodeType) and c.co_name == ("_closure" if cells else name))
    if cells:
        made = next(c for c in made.co_consts if isinstance(c, types.CodeType) and c.co_name == name)
        outer = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
        closure = tuple(outer[free] for free in made.co_freevars)
    else:
        closure = None
    function = types.FunctionType(made, fn.__globals__, name, None, closure)
    function.__module__ = module_name
    function.__qualname__ = name
    function.__s2s_shown__ = shown
    module = types.ModuleType(module_name)
    module.__file__ = path
    setattr(module, name, function)
    sys.modules[module_name] = module
    memo[source] = function
    return function


register_local_function(local_function)
