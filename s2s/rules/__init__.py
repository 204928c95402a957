"""Derivative rules: load templates/ into one registry keyed by the real object.

A template is an ordinary Python function whose parameters are placeholders: the
first is the primal result, the others the inputs (keyword parameters with defaults
are static options such as axis). Its body says, in plain Python:

    y_dot = <expr>          the tangent of the result (forward mode)
    x_bar += <expr>         the contribution to an input's adjoint (reverse mode)
    x_bar -= <expr>
    tmp = <expr>            a local helper value, used by the lines above

Bare names that the template module imported from s2s.runtime are runtime helpers and
become `runtime.<name>` in generated code. The registry is built by `load_rules()`,
never as a side effect of importing a template module.

The same modules declare everything else the passes need to know of each primitive
(class Facts: elementwise, linear, its shape and dtype, its batching rule, its method and
kernel spellings, its Numba form, ...), next to its rule where it has one; the passes ask
here and keep no tables of NumPy's names:

    @rule(np.sum, runtime.reduce_sum, pure=True)          facts of every object named
    @primitive(np.sum, reduction=True, numba=runtime.reduce_sum, method="sum")   of np.sum alone
    def sum(y, x, axis=None, keepdims=False): ...

    DECLARATIONS = [nondifferentiable(np.floor, math.floor, cheap=True),
                    primitive(np.zeros, np.ones, creates=True)]

A rule of a special case of a call is registered against a Case whose test picks it
(`Case("np.cov", of=(np.cov,), when=lambda call: call.given("y"))`): rule_of_call asks the
cases of the called function before the function's own rule.

`load_facts()` gathers the facts; `facts(obj)` answers for one object (a NumPy ufunc or a
math function is elementwise without saying so) and `spelled(module, attr)` turns the
spelling in generated Python, ("np", "sin"), ("runtime", "sum_bar"), (None, "abs"),
into the object, for the passes that read generated code.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import importlib
import inspect
import math
import operator
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from .. import runtime
from ..ir import nodes as ir

TEMPLATE_MODULES = (
    "s2s.templates.syntax_rules",
    "s2s.templates.elementwise_rules",
    "s2s.templates.array_rules",
    "s2s.templates.runtime_rules",
    "s2s.templates.scipy_rules",
    "s2s.templates.scipy_linalg_rules",
)


# ---- decorators used by the template modules ---------------------------------------


def rule(*objects: Any, **facts: Any):
    """Register the decorated template for each of these functions; keyword arguments are
    facts (class Facts) of every one of them."""

    def mark(template):
        template.__s2s_rule__ = objects
        if facts:
            primitive(*objects, **facts)(template)
        return template

    return mark


class primitive:
    """Facts of these functions (keyword arguments: the fields of Facts). A declaration in
    a template module's DECLARATIONS, or a decorator of a rule, under its @rule. A function may be
    named by its public dotted name instead ("scipy.signal.convolve"): a SciPy function whose
    module is slow to import (importing it would cost every process that loads the rules),
    whose facts are then found by the name of the function a call reaches (facts)."""

    def __init__(self, *objects: Any, **facts: Any):
        unknown = set(facts) - {f.name for f in dataclasses.fields(Facts)}
        if unknown:
            raise TypeError(f"unknown facts {sorted(unknown)} of {objects}")
        self.objects, self.facts = objects, facts

    def __call__(self, template):
        template.__s2s_facts__ = getattr(template, "__s2s_facts__", ()) + (self,)
        return template


def nondifferentiable(*objects: Any, **facts: Any) -> tuple:
    """Functions whose result is piecewise constant in their inputs (zero derivative)."""
    return ("nondifferentiable", objects, "", primitive(*objects, **facts))


def refuse_when_active(hint: str, *objects: Any, **facts: Any) -> tuple:
    """Functions s2s does not differentiate: an active input is an S2SError."""
    return ("refuse", objects, hint, primitive(*objects, **facts))


class Case:
    """A key for the rule of a special case of a call, which the function alone does not
    name. A case declared `of` functions `when` a test of the call holds is picked for such a
    call by analysis.rule_for (np.cov of two data sets); one without (QUOTIENT_UNREAD) is
    picked by the pass that knows when (the reverse transform, by what reads the result)."""

    def __init__(self, name: str, of: tuple = (), when: Any = None):
        self.__name__ = name
        self.of, self.when = of, when

    def __repr__(self) -> str:
        return self.__name__


class CallSite:
    """A call as a case's test sees it: what is passed where, by the called function's
    parameters (so that a test reads `call.given("y")`, not positions)."""

    def __init__(self, fn: Any, args: tuple, kwargs: tuple):
        self.fn, self.args, self.kwargs = fn, tuple(args), tuple(kwargs)

    @property
    def positional(self) -> int:
        return len(self.args)

    def passed(self, parameter: str) -> Any:
        """The atom passed for this parameter of fn (by position or keyword), or None."""
        given = dict(self.kwargs)
        if parameter in given:
            return given[parameter]
        try:
            names = list(inspect.signature(self.fn).parameters)
        except (TypeError, ValueError):
            return None
        k = names.index(parameter) if parameter in names else len(self.args)
        return self.args[k] if k < len(self.args) else None

    def given(self, *parameters: str) -> bool:
        """Any of these parameters is passed, and not as the constant None."""
        return any(self.passed(p) is not None and not _is_none_constant(self.passed(p)) for p in parameters)

    def constant(self, parameter: str, default: Any = None) -> Any:
        """The value written in the call for this parameter (UPLO="U"), or default where it is
        not passed or not a constant."""
        given = self.passed(parameter)
        return given.value if isinstance(given, ir.Const) else default

    def passed_variable(self, parameter: str) -> bool:
        """This parameter is passed, as a variable (its value known only when the code runs)."""
        return isinstance(self.passed(parameter), ir.Name)

    def same_variable(self, i: int, j: int) -> bool:
        """Positional arguments i and j are one variable (x * x)."""
        a, b = (self.args[k] if k < len(self.args) else None for k in (i, j))
        return not self.kwargs and isinstance(a, ir.Name) and isinstance(b, ir.Name) and a.id == b.id

    def variable(self, k: int) -> bool:
        """Positional argument k is a variable, not a constant written in the call (x ** y, not x ** 2)."""
        return k < len(self.args) and isinstance(self.args[k], ir.Name)


def _is_none_constant(atom: Any) -> bool:
    return isinstance(atom, ir.Const) and atom.value is None


SELF_PRODUCT = Case("x * x", of=(operator.mul,),  # one contribution to x's adjoint
                    when=lambda call: call.positional == 2 and call.same_variable(0, 1))
QUOTIENT_UNREAD = Case("x / y in a loop")  # operator.truediv whose result no other rule reads
POW_OF_A_VARIABLE = Case("x ** y", of=(operator.pow, np.power, builtins.pow, math.pow),  # not x ** 2
                         when=lambda call: call.positional == 2 and call.variable(1))


# ---- facts of a primitive ----------------------------------------------------------


@dataclass(frozen=True)
class Facts:
    """What the passes know of a function besides its derivative. Every field is False, None
    or empty unless a template module declares it (NumPy ufuncs and math functions: see facts).
    The comments name the pass that reads each field."""

    # ---- what kind of function it is
    elementwise: bool = False  # applies to each element of its broadcast array arguments (ufuncs, operators)
    arity: int | None = None  # elementwise: how many arguments (a ufunc's nin); else where broadcasts says so
    pure: bool = False  # reads its arguments, returns a value, changes nothing (optimize/fuse.py)
    fusable: bool = False  # pure, and Numba fuses it into the array expression around it
    cheap: bool = False  # an instruction or two: the reverse sweep recomputes it rather than tape it
    reduction: bool = False  # of one argument alone, a whole-array reduction to a number
    # linear in its arguments (transforms/custom_rules.py: a custom_jvp rule's tangent must be):
    # "all" jointly (x + y, -x, np.sum), "each" in each alone (x * y, x @ y), or a tuple of the
    # positions it is linear in (x / y: (0,); np.where: (1, 2)); () in none (np.clip)
    linear: Any = None
    product: str | None = None  # a product of two arrays: "matmul", "dot", "inner" or "outer"
    # the positions of operands its rule has no derivative in (gammainc's shape a, which has no
    # closed form): where one varies with what is differentiated, the call is refused (analysis/activity.py)
    no_derivative: tuple = ()

    # ---- its result: shape and memory
    view: bool = False  # its result may share memory with its first argument (analysis/activity.py)
    like: bool = False  # of one array, a new array of that array's shape (copy, zeros_like)
    number_stays: bool = False  # like, and of a number a number (NumPy's give a 0-d array)
    broadcasts: bool = False  # its result has its arguments' broadcast shape (transforms/vectorize.py)
    creates: bool = False  # creates an array from shapes and values alone (np.zeros)
    copies: bool = False  # a copy of its one argument (optimize/loops.py; a list's or dict's, analysis/points_to.py)
    fresh: bool = False  # its result is a new array or a number, never a view (codegen/overlaps.py)
    first_or_new: bool = False  # its result is its first argument itself, or a new value
    sequence: bool = False  # NumPy's, and its result is a list or tuple of arrays (np.split: analysis/points_to.py)
    # its result is always an np.ndarray ("result": np.asarray, np.zeros, a 0-d one of a number), or
    # a sequence of them ("items": np.broadcast_arrays): isinstance(x, np.ndarray) of a variable it
    # binds is decided (frontend/lower.py, as a JAX trace decides it of an argument)
    ndarray: str | None = None
    array_result: bool = False  # its result is an array or a number, never a list or dict (points_to.py)
    reads_shape_of: tuple = ()  # the positions of arguments it reads only the shape and dtype of
    shape_argument: int | None = None  # runtime helpers: an argument it reads the shape of, given a shape or an array

    # ---- its result: dtype (analysis/activity.py, analysis/shapes.py)
    # "kept": ints in give ints (of an elementwise function all its operands, else its first);
    # "power": so too, but an int to a negative int power; "always": the result is an int;
    # "never": the result is floats, whatever the operands (a shape's np.zeros, x / y)
    integer: str | None = None
    boolean: bool = False  # its result holds booleans (a comparison ufunc: codegen, analysis/code_shapes.py)
    dtype_from: tuple = ()  # the positions of the arguments whose dtype its result has, where no dtype is given

    # ---- the frontend (frontend/expressions.py)
    method: Any = None  # its method spelling (or a tuple of them): x.sum(...) is np.sum(x, ...)
    operands: tuple = ()  # the positions where a list or tuple display is one array operand (as NumPy takes it)
    dtype_casts: str | None = None  # dtype=t casts its "input" (np.sum: adds in t) or its "result" (np.array)
    lowered_to: Any = None  # the function a call of it is written as (np.matmul: operator.matmul, which Numba compiles)
    # the runtime helper every call of it becomes (scipy.special.expit: runtime.expit), which has the
    # rule and a Numba form: generated code calls NumPy, math and runtime alone
    written_as: Any = None
    # checks the static options written in a call (options(**{name: value})) when it is
    # differentiated: a message of what its rule does not take, or None (analysis/activity.py)
    options: Any = None

    # ---- reverse mode (transforms/reverse/)
    # its rule has no reverse lines because no adjoint flows back (a new tape); a rule with no
    # reverse lines and without this fact is forward-only: reverse mode refuses it (reverse/instances.py)
    reverse_none: bool = False

    # ---- batching (transforms/vectorize.py): its batching rule where its facts above do not
    # give one: "example_shape" / "example_len" (of a batched array, one example's), "array" (a
    # display of batched and unbatched items), "join" (np.concatenate, np.stack), "transpose",
    # "reshape", "expand_dims", "float", "product", "extremum" (Python's max and min), "prototype"
    # (np.zeros_like: shape= gives a new shape), and along an axis: "along_axis" (axis=None
    # flattens each example), "along_every_axis" (np.flip), "along_axis_in_shape" (np.roll)
    batching: str | None = None

    # ---- backends
    scalar_safe: bool = False  # an elementwise NumPy function that never raises on Numba scalars
    numba: Any = None  # the runtime helper generated code calls instead under Numba
    numba_always: bool = False  # ... always, not only with an axis, keepdims or ddof
    numba_sequences: bool = False  # ... but not of a tuple or list (a display, or a name bound to one only)
    numpy: Any = None  # the NumPy function of the same meaning (math.sin: np.sin)
    # its spelling in a CUDA kernel's per-thread code, on numbers (codegen/cuda.py): a callee
    # ("math.exp", "abs"), or an expression of the arguments {0}, {1} ("({0} * {0})"); None: no kernel form
    kernel: str | None = None
    # in a kernel, `a = f(shape_or_array, ...)` as a statement of its own makes a local array:
    # (what fills it: "0", "1", "fill" (the second argument), "copy" or None, and "size" (the
    # first argument is a shape) or "like" (an array's shape))  (codegen/cuda.py)
    kernel_local: tuple | None = None


# Facts.kernel of a function a kernel calls as generated code spells it (np.float64, a runtime
# helper with a numba-cuda overload).
SAME_SPELLING = "as spelled"

_NOTHING = Facts()


def _is_math(obj: Any) -> bool:
    return callable(obj) and getattr(obj, "__module__", None) == "math"


def _arity(obj: Any) -> int | None:
    if isinstance(obj, np.ufunc):
        return obj.nin if obj.nout == 1 else None
    try:
        return len(inspect.signature(obj).parameters)
    except (TypeError, ValueError):  # math.log(x[, base]), min(*args): none
        return None


def _implied(obj: Any) -> dict:
    """What an object is without a declaration: a NumPy ufunc is elementwise (but not a
    generalized one, np.matmul), pure and fused by Numba, takes a display as an array in each
    operand, and its result holds booleans where every loop of it makes them (np.isnan,
    np.less); a math function is pure and fused too, but of numbers only (math.sin of an array
    raises: not elementwise), and is its own kernel spelling. NumPy's functions make arrays or
    numbers (but those declared to make sequences)."""
    if isinstance(obj, np.ufunc) and obj.signature is None:
        loops = [t for t in obj.types if "O" not in t]
        return dict(elementwise=True, pure=True, fusable=True, operands=tuple(range(obj.nin)), array_result=True,
                    boolean=bool(loops) and obj.nout == 1 and all(t.endswith("?") for t in loops))
    if _is_math(obj):
        return dict(pure=True, fusable=True, kernel=f"math.{obj.__name__}")
    if callable(obj) and (getattr(obj, "__module__", None) or "").split(".")[0] == "numpy":
        return dict(array_result=True)
    return {}


def _merge(table: dict, declaration: primitive, where: str) -> None:
    for obj in declaration.objects:
        known = table.setdefault(obj, {})
        for key, value in declaration.facts.items():
            if key in known and known[key] != value:
                raise ValueError(f"{where}: {key} of {getattr(obj, '__name__', obj)} declared twice, differently")
            known[key] = value


# ---- the registry -----------------------------------------------------------------


@dataclass
class Rule:
    name: str
    kind: str  # "rule" | "nondifferentiable" | "refuse"
    params: list[str] = field(default_factory=list)  # result first, then inputs
    signature: inspect.Signature | None = None
    forward: list[ast.stmt] = field(default_factory=list)
    reverse: list[ast.stmt] = field(default_factory=list)
    locals: dict[str, ast.expr] = field(default_factory=dict)
    helpers: frozenset = frozenset()  # bare names that are runtime helpers
    hint: str = ""
    where: str = ""  # template file:line, for messages

    @property
    def result(self) -> str:
        return self.params[0]

    @property
    def tuple_result(self) -> bool:
        """Its result is a tuple (np.linalg.slogdet's (sign, logabsdet)): its tangent is a tuple display."""
        return any(isinstance(line.value, ast.Tuple) for line in self.forward)

    def differentiable_inputs(self) -> set[str]:
        """Inputs that receive an adjoint contribution, or whose tangent the result's reads."""
        inputs = {s.target.id[: -len("_bar")] for s in self.reverse}
        for line in self.forward:
            inputs |= {n.id[: -len("_dot")] for n in ast.walk(line.value)
                       if isinstance(n, ast.Name) and n.id.endswith("_dot") and n.id[:-4] in self.params}
        return inputs

    def bind(self, args: tuple, kwargs: tuple) -> dict[str, Any]:
        """Map template placeholders (not the result) to call-site atoms or defaults."""
        bound = self.signature.bind(None, *args, **dict(kwargs))
        bound.apply_defaults()
        values = dict(bound.arguments)
        values.pop(self.result)
        return values


@lru_cache(maxsize=None)
def _template_module(module_name: str) -> tuple[dict, frozenset]:
    """A template module's top-level defs, by the line their code starts at (its first decorator's),
    parsed once for the module (not each template's source found and parsed apart: a fresh
    process loads every rule), and the runtime helpers the module names."""
    module = sys.modules[module_name]
    with open(module.__file__, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    defs = {min([node.lineno] + [d.lineno for d in node.decorator_list]): node
            for node in tree.body if isinstance(node, ast.FunctionDef)}
    return defs, frozenset(n for n, v in vars(module).items() if runtime.is_helper(v))


def _parse_template(template) -> Rule:
    defs, helpers = _template_module(template.__module__)
    tree = defs[template.__code__.co_firstlineno]
    assert isinstance(tree, ast.FunctionDef) and tree.name == template.__name__
    body = tree.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    signature = inspect.signature(template)
    params = list(signature.parameters)
    rule_ = Rule(template.__name__, "rule", params, signature)
    rule_.helpers = helpers
    rule_.where = f"{template.__code__.co_filename}:{template.__code__.co_firstlineno}"
    for stmt in body:
        if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name) \
                and stmt.target.id.endswith("_bar") and isinstance(stmt.op, (ast.Add, ast.Sub)):
            rule_.reverse.append(stmt)
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                and isinstance(stmt.targets[0], ast.Name):
            name = stmt.targets[0].id
            if name.endswith("_dot"):
                if name != f"{rule_.result}_dot":  # (a local named x_dot would be read as a tangent line)
                    raise SyntaxError(f"{rule_.where}: {name} is neither the result's tangent nor a local "
                                      "name a template may use (locals must not end in _dot)")
                rule_.forward.append(stmt)
            else:
                rule_.locals[name] = stmt.value
        else:
            raise SyntaxError(f"{rule_.where}: unsupported template statement {ast.unparse(stmt)}")
    return rule_


def _ensure_templates_package() -> None:
    """Installed, templates/ is the package s2s.templates; in a source checkout (python -m pytest
    from the repository, or an editable install) it is the checkout's templates/, next to this s2s/.
    The checkout comes first: an editable install maps s2s.templates to the tree it was installed
    from, and a second checkout (a git worktree on PYTHONPATH) would otherwise run its own s2s with
    the first tree's templates."""
    import importlib.util
    import os
    import sys

    if "s2s.templates" in sys.modules:
        return
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # s2s/
    here = os.path.join(os.path.dirname(package), "templates")
    if not os.path.isfile(os.path.join(here, "__init__.py")):
        importlib.import_module("s2s.templates")  # installed: s2s/templates
        return
    spec = importlib.util.spec_from_file_location(
        "s2s.templates", os.path.join(here, "__init__.py"), submodule_search_locations=[here])
    module = importlib.util.module_from_spec(spec)
    sys.modules["s2s.templates"] = module
    spec.loader.exec_module(module)


@lru_cache(maxsize=None)
def _load() -> tuple[dict, dict]:
    _ensure_templates_package()
    registry: dict[Any, Rule] = {}
    declared: dict[Any, dict] = {}
    for module_name in TEMPLATE_MODULES:
        module = importlib.import_module(module_name)
        for value in vars(module).values():
            objects = getattr(value, "__s2s_rule__", None)
            if objects is not None and callable(value):
                parsed = _parse_template(value)
                for obj in objects:
                    registry[obj] = parsed
                for declaration in getattr(value, "__s2s_facts__", ()):
                    _merge(declared, declaration, parsed.where)
        for declaration in getattr(module, "DECLARATIONS", ()):
            if isinstance(declaration, primitive):
                _merge(declared, declaration, module_name)
                continue
            kind, objects, hint, its_facts = declaration
            for obj in objects:
                registry[obj] = Rule(getattr(obj, "__name__", str(obj)), kind, hint=hint)
            _merge(declared, its_facts, module_name)
    table = {}
    for obj, given in declared.items():
        merged = {**_implied(obj), **given}
        if merged.get("elementwise"):
            merged.setdefault("arity", _arity(obj))
        if merged.get("sequence"):
            merged["array_result"] = False
        table[obj] = Facts(**merged)
    return registry, table


@lru_cache(maxsize=None)
def _cases() -> dict:
    """{function: the cases declared of it, in the order the template modules give them}."""
    found: dict[Any, list] = {}
    for key in load_rules():
        if isinstance(key, Case):
            for fn in key.of:
                found.setdefault(fn, []).append(key)
    return found


@lru_cache(maxsize=None)
def methods() -> dict:
    """{method name: the function x.<name>(...) calls with x first}, as the facts declare them."""
    return {name: obj for obj, known in load_facts().items() if known.method is not None
            for name in (known.method if isinstance(known.method, tuple) else (known.method,))}


def load_rules() -> dict:
    """The registry: {function object: Rule}, built from the template modules."""
    return _load()[0]


def load_facts() -> dict:
    """{function object: Facts}, as the template modules declare them (built with load_rules)."""
    return _load()[1]


def lookup(obj: Any) -> Rule | None:
    return load_rules().get(obj)


def rule_of_call(fn: Any, args: tuple, kwargs: tuple) -> Rule | None:
    """The rule of the call fn(*args, **kwargs) of IR atoms: that of the first case declared of
    fn whose test the call passes (np.cov of two data sets), else fn's own."""
    try:
        cases = _cases().get(fn, ())
    except TypeError:  # an unhashable callable
        return None
    for case in cases:
        if case.when(CallSite(fn, args, kwargs)):
            return lookup(case)
    return lookup(fn)


@lru_cache(maxsize=None)
def _dtype_parameter(fn: Any) -> int | None:
    """The position of fn's parameter `dtype`, -1 where it takes one by keyword only, None
    where it takes none (a NumPy function's result has the dtype given there)."""
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    for k, parameter in enumerate(parameters):
        if parameter.name == "dtype":
            return -1 if parameter.kind is inspect.Parameter.KEYWORD_ONLY else k
    return None


def dtype_argument(fn: Any, args: tuple, kwargs: tuple) -> Any:
    """The dtype written in a call of a NumPy function (by keyword, or at its position), or
    None: NumPy's functions give their result the dtype written there."""
    given = dict(kwargs).get("dtype")
    if given is not None or not (callable(fn) and (getattr(fn, "__module__", None) or "").startswith("numpy")):
        return given
    try:
        position = _dtype_parameter(fn)
    except TypeError:  # an unhashable callable
        return None
    return args[position] if position is not None and 0 <= position < len(args) else None


def _scipy_public_name(obj: Any) -> str | None:
    """scipy.signal.convolve for a function of SciPy's (its private modules left out), else None."""
    module, name = getattr(obj, "__module__", None), getattr(obj, "__name__", None)
    if not (isinstance(module, str) and module.startswith("scipy.") and isinstance(name, str)):
        return None
    return ".".join(part for part in module.split(".") if not part.startswith("_")) + "." + name


def facts(obj: Any) -> Facts:
    """What is known of obj: its declared facts (by the object, or for a SciPy function by its
    public name), or those of a ufunc or math function, or none."""
    try:
        found = load_facts().get(obj)
    except TypeError:  # an unhashable callable
        return _NOTHING
    if found is None and callable(obj):
        found = load_facts().get(_scipy_public_name(obj))
    if found is not None:
        return found
    implied = _implied(obj)
    if implied:
        return Facts(**implied, arity=_arity(obj))
    return _NOTHING


# The modules generated code calls functions of, by the names it imports them as (None: builtins).
_SPELLINGS = {"np": np, "math": math, "runtime": runtime, None: builtins}


def spelled(module: str | None, attr: str) -> Any:
    """The object generated code names `module.attr` (`attr` alone for builtins); None if unknown.
    (Whether the module's name is shadowed where it is read is the caller's to check.)"""
    namespace = _SPELLINGS.get(module)
    return getattr(namespace, attr, None) if namespace is not None else None
