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
"""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from .. import runtime

TEMPLATE_MODULES = (
    "s2s.templates.syntax_rules",
    "s2s.templates.elementwise_rules",
    "s2s.templates.array_rules",
    "s2s.templates.runtime_rules",
)


# ---- decorators used by the template modules ---------------------------------------


def rule(*objects: Any):
    """Register the decorated template for each of these functions."""

    def mark(template):
        template.__s2s_rule__ = objects
        return template

    return mark


def nondifferentiable(*objects: Any) -> tuple:
    """Functions whose result is piecewise constant in their inputs (zero derivative)."""
    return ("nondifferentiable", objects)


def refuse_when_active(hint: str, *objects: Any) -> tuple:
    """Functions s2s does not differentiate: an active input is an S2SError."""
    return ("refuse", objects, hint)


class Case:
    """A key for the rule of a special case of a call, which the function alone does not
    name: analysis.rule_for picks one by the call's arguments (SELF_PRODUCT), the reverse
    transform one by what reads the call's result (QUOTIENT_UNREAD)."""

    def __init__(self, name: str):
        self.__name__ = name

    def __repr__(self) -> str:
        return self.__name__


SELF_PRODUCT = Case("x * x")  # operator.mul of one variable by itself
QUOTIENT_UNREAD = Case("x / y in a loop")  # operator.truediv whose result no other rule reads


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


def _parse_template(template) -> Rule:
    source = textwrap.dedent(inspect.getsource(template))
    tree = ast.parse(source).body[0]
    assert isinstance(tree, ast.FunctionDef)
    body = tree.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    signature = inspect.signature(template)
    params = list(signature.parameters)
    rule_ = Rule(template.__name__, "rule", params, signature)
    module = inspect.getmodule(template)
    rule_.helpers = frozenset(
        n for n, v in vars(module).items() if runtime.is_helper(v)
    )
    rule_.where = f"{inspect.getsourcefile(template)}:{inspect.getsourcelines(template)[1]}"
    for stmt in body:
        if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name) \
                and stmt.target.id.endswith("_bar") and isinstance(stmt.op, (ast.Add, ast.Sub)):
            rule_.reverse.append(stmt)
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                and isinstance(stmt.targets[0], ast.Name):
            name = stmt.targets[0].id
            if name.endswith("_dot"):
                rule_.forward.append(stmt)
            else:
                rule_.locals[name] = stmt.value
        else:
            raise SyntaxError(f"{rule_.where}: unsupported template statement {ast.unparse(stmt)}")
    return rule_


def _ensure_templates_package() -> None:
    """Installed, templates/ is the package s2s.templates; in a source checkout that is not
    installed (python -m pytest from the repository), load it from the checkout."""
    import importlib.util
    import os
    import sys

    try:
        importlib.import_module("s2s.templates")
        return
    except ModuleNotFoundError:
        pass
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # s2s/
    here = os.path.join(os.path.dirname(package), "templates")
    spec = importlib.util.spec_from_file_location(
        "s2s.templates", os.path.join(here, "__init__.py"), submodule_search_locations=[here])
    module = importlib.util.module_from_spec(spec)
    sys.modules["s2s.templates"] = module
    spec.loader.exec_module(module)


@lru_cache(maxsize=None)
def load_rules() -> dict:
    """The registry: {function object: Rule}, built from the template modules."""
    _ensure_templates_package()
    registry: dict[Any, Rule] = {}
    for module_name in TEMPLATE_MODULES:
        module = importlib.import_module(module_name)
        for value in vars(module).values():
            objects = getattr(value, "__s2s_rule__", None)
            if objects is not None and callable(value):
                parsed = _parse_template(value)
                for obj in objects:
                    registry[obj] = parsed
        for declaration in getattr(module, "DECLARATIONS", ()):
            kind, objects = declaration[0], declaration[1]
            hint = declaration[2] if len(declaration) > 2 else ""
            for obj in objects:
                registry[obj] = Rule(getattr(obj, "__name__", str(obj)), kind, hint=hint)
    return registry


def lookup(obj: Any) -> Rule | None:
    return load_rules().get(obj)
