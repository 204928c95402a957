"""Static facts about a normalized function that the transforms rely on.

- positions and enclosing loops of every statement (what may run after what),
- activity: varied (depends on a differentiated input) and useful (reaches the output),
- liveness, used to refuse in-place writes through aliases that would make a
  derivative wrong (the flow-sensitive check of what each name may refer to is points_to.py's),
- which variables are subscripted, containers, or integer-valued.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import runtime
from ..ir import nodes as ir
from ..errors import S2SError
from .liveness import Branches, Liveness, Loop
from .points_to import PointsToCheck, value_reads
from ..frontend.source import is_user_function
from ..scipy_forms import stats as scipy_stats_forms
from ..rules import Rule, dtype_argument, facts, rule_of_call


@dataclass
class StmtInfo:
    pos: int
    loops: tuple  # id() of enclosing For/While statements, outermost first
    parent: Any  # enclosing compound statement, or None at function level
    block_id: int  # id() of the list that holds the statement


def rule_for(call: ir.Call, origin) -> Rule | None:
    """The rule of a call: of a special case the registry declares for its arguments (x * x,
    np.cov of two data sets), else of its function; None for the user's functions."""
    if is_user_function(call.fn):
        return None
    return rule_of_call(call.fn, call.args, call.kwargs)


def bind(call: ir.Call, found: Rule, origin) -> dict:
    try:
        return found.bind(call.args, call.kwargs)
    except TypeError as exc:
        raise S2SError(f"call to {found.name} does not match its derivative rule ({exc})", origin,
                       "pass the arguments as NumPy documents them") from None


# builtins.complex and NumPy's complex types make complex numbers; the functions below take their real part
_MAKES_COMPLEX = (complex, np.complex64, np.complex128, np.clongdouble)
_REAL_OF_COMPLEX = (np.real, np.imag, np.abs, abs, np.angle)


def _atoms_of(value) -> list:
    if isinstance(value, ir.Call):
        return list(value.args) + [a for _, a in value.kwargs]
    if isinstance(value, ir.Build):
        return list(value.elts)
    return [value] if isinstance(value, (ir.Name, ir.Const)) else []


def _complex_atom(atom, complex_values: set) -> bool:
    if isinstance(atom, ir.Const):
        return isinstance(atom.value, (complex, np.complexfloating))
    return isinstance(atom, ir.Name) and atom.id in complex_values


def differentiable_sources(stmt) -> list[str]:
    """Variables whose values flow differentiably into what the statement defines."""
    if isinstance(stmt, ir.SetItem):
        return [stmt.value.id] if isinstance(stmt.value, ir.Name) else []
    if isinstance(stmt, ir.Push):
        return [stmt.value.id] if isinstance(stmt.value, ir.Name) else []
    if isinstance(stmt, ir.ExprStmt) and stmt.mutates:
        # runtime.index_add(a, index, value) adds value into a; runtime.clear(a, index) zeroes.
        return [a.id for a in stmt.value.args[2:3] if isinstance(a, ir.Name)]
    if not isinstance(stmt, ir.Assign):
        return []
    value = stmt.value
    if isinstance(value, ir.Pop):
        return [value.tape]
    if isinstance(value, ir.Name):
        return [value.id]
    if isinstance(value, ir.Const):
        return []
    if isinstance(value, ir.Subscript):
        return ir.names_in(value.value)
    if isinstance(value, ir.Attribute):
        return [] if value.attr in ir.SHAPE_ATTRIBUTES else ir.names_in(value.value)
    if isinstance(value, ir.Build):
        return ir.names_in(value)
    if isinstance(value, ir.Call):
        found = rule_for(value, stmt.origin)
        if found is None or found.kind == "refuse":
            return ir.names_in(value)  # user functions; unknown and refused ones are checked later
        if found.kind == "nondifferentiable":
            return []
        bound = bind(value, found, stmt.origin)
        out = []
        for param in found.differentiable_inputs():
            atom = bound.get(param)
            if isinstance(atom, ir.Name):
                out.append(atom.id)
        return out
    return []


def _known_float(call: ir.Call) -> bool:
    """The call's result is floats whatever its operands: a function declared so (Facts.integer
    "never": a shape's np.zeros, a true quotient, a cast to a float type, where the frontend
    writes runtime.astype_integer for the others) called without keywords, or arithmetic that
    keeps integers with a float constant among its operands (v * 2.0)."""
    known = facts(call.fn)
    if known.integer == "never" and not call.kwargs and dtype_argument(call.fn, call.args, ()) is None:
        return True
    operands = list(call.args) + [atom for _, atom in call.kwargs]
    return known.elementwise and known.integer in ("kept", "power") and any(
        isinstance(a, ir.Const) and isinstance(a.value, float) for a in operands)


def _dtype_operands(value) -> list[str] | None:
    """The names an expression's result may take an integer dtype from: every name among a
    call's operands (v + 0, np.sort(v), a helper that may return its argument), an attribute's
    owner (v.T), a display's items; None where the result is known to be floats."""
    if isinstance(value, ir.Attribute):
        return [value.value.id] if isinstance(value.value, ir.Name) else None
    if isinstance(value, ir.Build):
        return [e.id for e in value.elts if isinstance(e, ir.Name)]
    if not isinstance(value, ir.Call) or _known_float(value):
        return None
    operands = list(value.args) + [atom for _, atom in value.kwargs]
    return [a.id for a in operands if isinstance(a, ir.Name)]


def _dtype_sources(call: ir.Call) -> list | None:
    """The arguments whose dtype the call's result has (Facts.dtype_from: np.copy(x), np.full(n,
    k)'s k, np.roll(w, 1)'s w), where it is given no dtype; None for other calls."""
    positions = facts(call.fn).dtype_from
    if not positions or dtype_argument(call.fn, call.args, call.kwargs) is not None:
        return None
    atoms = [call.args[k] for k in positions if k < len(call.args)]
    return atoms or None


def _integer_dtype_call(call: ir.Call) -> bool:
    """np.zeros(..., dtype=int) and the like: a call of a NumPy function that makes its result of
    the integer or bool dtype written as its argument."""
    dtype = dtype_argument(call.fn, call.args, call.kwargs)
    if not isinstance(dtype, ir.Const) or dtype.value is None:
        return False
    try:
        kind = np.dtype(dtype.value).kind
    except TypeError:
        return False
    return kind in "biu"


def _tuple_rule(call: ir.Call) -> bool:
    """Is the call's result a tuple by its rule (np.linalg.slogdet, scipy.linalg.cho_factor)?"""
    found = rule_of_call(call.fn, call.args, call.kwargs)
    return isinstance(found, Rule) and found.tuple_result


@dataclass
class Analysis:
    fn: ir.Function
    active_params: list[str]
    seeds: list[str]  # variables whose adjoints are seeded (the result)
    # parameters known to hold floats: the arguments the doors differentiate (they refuse integers)
    float_params: tuple = ()
    info: dict = field(default_factory=dict)
    defs: dict = field(default_factory=dict)  # var -> [stmt] (params map to "param")
    occurrences: dict = field(default_factory=dict)  # var -> [stmt]
    varied: set = field(default_factory=set)
    useful: set = field(default_factory=set)
    subscripted: set = field(default_factory=set)
    containers: set = field(default_factory=set)
    int_like: set = field(default_factory=set)
    integer_arrays: set = field(default_factory=set)  # arrays of integers the function makes (_integer_arrays)
    mutated: set = field(default_factory=set)
    alias_of: dict = field(default_factory=dict)
    live_after: dict = field(default_factory=dict)

    def run(self) -> "Analysis":
        self._index(self.fn.body, (), None)
        for p in self.fn.params:
            self.defs.setdefault(p, []).insert(0, "param")
        self._kinds()  # (int_like first: the activity of writes into integer arrays reads it)
        self._activity()
        self._writes_into_arguments()
        self._check_calls()
        self._aliases()
        return self

    # ---- structure --------------------------------------------------------------

    def _index(self, block, loops, parent):
        for stmt in block:
            self.info[id(stmt)] = StmtInfo(len(self.info), loops, parent, id(block))
            for var in ir.stmt_writes(stmt):
                self.defs.setdefault(var, []).append(stmt)
            for var in set(ir.stmt_reads(stmt)) | set(ir.stmt_writes(stmt)):
                self.occurrences.setdefault(var, []).append(stmt)
            inner = loops + (id(stmt),) if isinstance(stmt, (ir.For, ir.While)) else loops
            for child in ir.child_blocks(stmt):
                self._index(child, inner, stmt)

    def statements(self):
        return ir.walk(self.fn.body)

    def is_active(self, var: str) -> bool:
        return var in self.varied and var in self.useful

    def atom_active(self, atom) -> bool:
        return isinstance(atom, ir.Name) and self.is_active(atom.id)

    def may_run_after(self, later, earlier) -> bool:
        """Can statement `later` execute after statement `earlier` has executed?"""
        if later == "param":
            return False
        a, b = self.info[id(later)], self.info[id(earlier)]
        if set(a.loops) & set(b.loops):
            return True
        return a.pos > b.pos

    def enclosing_loops(self, stmt) -> tuple:
        return self.info[id(stmt)].loops

    # ---- activity ---------------------------------------------------------------

    def _array_sources(self, var: str, d) -> list[str] | None:
        """The names var takes its array (and so its dtype) from at d: y = x, y op= v (y itself),
        np.copy(x), x.copy(), np.asarray(x), np.zeros_like(x) and the other like-functions without
        a dtype, np.full(n, k) (k's), or `a, y = t` where t is only ever a tuple display (a loop's
        packed carry)."""
        if not isinstance(d, ir.Assign):
            return None
        value = d.value
        if d.inplace and len(d.targets) == 1:
            return [var]  # x op= v updates an array in place: its dtype stays (NumPy casts, or refuses)
        if d.unpack:
            items = self._display_items(d)
            if items is None:
                return None
            item = items[d.targets.index(var)]
            return [e.id for e in item] if all(isinstance(e, ir.Name) for e in item) else None
        if len(d.targets) != 1:
            return None
        if isinstance(value, ir.Name):
            return [value.id]
        if not isinstance(value, ir.Call):
            return None
        sources = _dtype_sources(value)
        if sources is None or not all(isinstance(a, ir.Name) for a in sources):
            return None
        return [a.id for a in sources]

    def _writes_into_arguments(self) -> None:
        """Mark each write of a value that carries a derivative into an array that may be (a
        copy of, or made like) an argument's array (stmt.dtype_check): the transform does not
        know that array's dtype, and where it holds integers NumPy cuts the value to a piecewise
        constant whose derivative is 0. Run time refuses there (runtime.require_float_array);
        integer arrays the function makes itself are known (_integer_arrays), and so are the
        arguments in float_params, which the doors check."""
        reached = {p for p in self.fn.params if p not in self.float_params}
        # and arrays of integers the function makes, where what is made of them later may be
        # integers too (w = np.zeros(4, dtype=int); w = w + 1): the ones only ever integers are
        # known (integer_arrays) and take no check
        reached |= {var for var, defs in self.defs.items() if any(self._makes_integers(d) for d in defs)}
        changed = True
        while changed:
            changed = False
            for var, defs in self.defs.items():
                if var in reached:
                    continue
                for d in defs:
                    sources = self._array_sources(var, d)
                    if sources is None and isinstance(d, ir.Assign) and len(d.targets) == 1 \
                            and isinstance(d.value, ir.Subscript) and isinstance(d.value.value, ir.Name):
                        sources = [d.value.value.id]  # a view (a row, a slice) of the array
                    if sources is None and isinstance(d, ir.Assign) and len(d.targets) == 1:
                        sources = _dtype_operands(d.value)  # v + 0, np.sort(v), a helper's result
                    if sources and any(s in reached for s in sources):
                        reached.add(var)
                        changed = True
                        break
        for stmt in self.statements():
            if not isinstance(stmt, ir.SetItem):
                continue
            stmt.dtype_check = ""
            if stmt.base in reached and stmt.base not in self.integer_arrays and self.is_active(stmt.base) \
                    and self.atom_active(stmt.value):
                shown = self.fn.display.get(stmt.base, stmt.base)
                error = S2SError(f"writing a value that carries a derivative into {shown}, an array of integers "
                                 "(or bools), cuts it to an integer, whose derivative (0) s2s does not give",
                                 stmt.origin, f"make {shown} floats (pass the argument it comes from as floats, "
                                 f"or write {shown} = {shown}.astype(float)), or write int(...) where the cut is meant")
                stmt.dtype_check = str(error).splitlines()[0]

    def _integer_sources(self, var: str, d) -> list[str] | None:
        """_array_sources, and the arrays whose dtype var keeps where they hold integers:
        arithmetic of them and int constants (w + 1, -w, 2 * w // 3) and NumPy functions that keep
        their first argument's dtype (np.roll(w, 1), np.sort(w), w.reshape(...))."""
        sources = self._array_sources(var, d)
        if sources is not None or not (isinstance(d, ir.Assign) and len(d.targets) == 1
                                       and isinstance(d.value, ir.Call) and not d.value.kwargs):
            return sources
        call = d.value

        def name_or_int(atom) -> bool:  # (a name's own dtype is the caller's to check)
            return isinstance(atom, ir.Name) or isinstance(atom, ir.Const) and isinstance(
                atom.value, (int, np.integer)) and not isinstance(atom.value, bool)
        known = facts(call.fn)
        if known.elementwise and known.integer == "kept" and all(name_or_int(a) for a in call.args):
            return [a.id for a in call.args if isinstance(a, ir.Name)]
        return None

    def _makes_integers(self, d) -> bool:
        """d makes an array of integers or bools: a dtype written in the call (np.zeros(n,
        dtype=int), x.astype(int)), or ints where its result takes their dtype (np.full(n, 3),
        np.arange of ints, np.array of a display of int constants)."""
        def int_atom(atom) -> bool:
            return isinstance(atom, ir.Const) and isinstance(atom.value, (int, np.integer)) \
                and not isinstance(atom.value, bool) or isinstance(atom, ir.Name) and atom.id in self.int_like

        def int_display(atom) -> bool:  # a tuple or list display of int constants
            defs = self.defs.get(atom.id, []) if isinstance(atom, ir.Name) else []
            return len(defs) == 1 and isinstance(defs[0], ir.Assign) and isinstance(defs[0].value, ir.Build) \
                and defs[0].value.kind in ("tuple", "list") and defs[0].value.elts \
                and all(int_atom(e) for e in defs[0].value.elts)

        if not (isinstance(d, ir.Assign) and isinstance(d.value, ir.Call)):
            return False
        call = d.value
        if _integer_dtype_call(call) or facts(call.fn).integer == "always":  # (x.astype(int))
            return True
        if call.kwargs:
            return False
        sources = _dtype_sources(call)  # np.full(n, 3), np.arange(n) of ints, np.array((1, 2))
        return sources is not None and all(int_atom(a) or int_display(a) for a in sources)

    def _integer_arrays(self) -> set[str]:
        """Names bound only to arrays that NumPy makes with an integer or bool dtype written in the
        call (np.zeros(n, dtype=int), np.full(n, 3, np.int64)): a float written into one is cut
        to an integer, a piecewise constant of it, so the write carries no derivative."""
        copied, made = self._integer_sources, self._makes_integers
        assigns = {var: [d for d in defs if not isinstance(d, ir.SetItem)] for var, defs in self.defs.items()}
        out = {var for var, ds in assigns.items()
               if ds and all(made(d) or copied(var, d) is not None for d in ds)}
        changed = True
        while changed:  # (the greatest such set: a loop's carry is assigned from itself)
            changed = False
            for var in list(out):
                if not all(made(d) or all(c in out for c in copied(var, d)) for d in assigns[var]):
                    out.discard(var)
                    changed = True
        reached = {var for var in out if any(made(d) for d in assigns[var])}
        changed = True
        while changed:  # (and of those, the ones an integer array made in the function reaches)
            changed = False
            for var in out - reached:
                if any(not made(d) and any(c in reached for c in copied(var, d)) for d in assigns[var]):
                    reached.add(var)
                    changed = True
        return reached

    def _display_items(self, stmt) -> list[list] | None:
        """For `a, b = t` where t is only ever bound to tuple or list displays of as many items
        (a loop's packed carry, t = (x, 3)): for each target, its item of every display; None for
        other statements."""
        if not (isinstance(stmt, ir.Assign) and stmt.unpack and isinstance(stmt.value, ir.Name)):
            return None
        packs = self.defs.get(stmt.value.id, [])
        if not packs or not all(isinstance(p, ir.Assign) and not p.unpack and isinstance(p.value, ir.Build)
                                and p.value.kind in ("tuple", "list") and len(p.value.elts) == len(stmt.targets)
                                for p in packs):
            return None
        return [[p.value.elts[k] for p in packs] for k in range(len(stmt.targets))]

    def _unpacked_items(self, stmt) -> dict[str, list[str]] | None:
        """For `a, b = t` of _display_items: each target's names (those in its item of every
        display); None for other statements."""
        items = self._display_items(stmt)
        if items is None:
            return None
        return {t: [n for e in item for n in ir.names_in(e)] for t, item in zip(stmt.targets, items)}

    def _activity(self):
        stmts = list(self.statements())
        self.integer_arrays = integer_arrays = self._integer_arrays()
        unpacked_items = {id(stmt): items for stmt in stmts if (items := self._unpacked_items(stmt)) is not None}
        self.varied = set(self.active_params)
        changed = True
        while changed:
            changed = False
            for stmt in stmts:
                if isinstance(stmt, ir.SetItem) and stmt.base in integer_arrays:
                    continue  # (the value written is cut to an integer)
                sources = differentiable_sources(stmt)
                items = unpacked_items.get(id(stmt))
                if items is not None and any(s in self.varied for s in sources):
                    # a, n = t of a display t = (x, 3): n holds the 3, which does not vary with x
                    # (a zero tangent for it met log(x) of a negative x in x ** n: NaN)
                    for target, read in items.items():
                        if target not in self.varied and any(s in self.varied for s in read):
                            self.varied.add(target)
                            changed = True
                    continue
                if any(s in self.varied for s in sources):
                    for target in ir.stmt_writes(stmt):
                        if not isinstance(stmt, ir.For) and target not in self.varied:
                            self.varied.add(target)
                            changed = True
        self.useful = set(self.seeds)
        changed = True
        while changed:
            changed = False
            for stmt in stmts:
                if isinstance(stmt, ir.For) or isinstance(stmt, ir.SetItem) and stmt.base in integer_arrays:
                    continue
                if any(t in self.useful for t in ir.stmt_writes(stmt)):
                    for source in differentiable_sources(stmt):
                        if source not in self.useful:
                            self.useful.add(source)
                            changed = True

    def _complex_values(self) -> set:
        """The variables that hold complex numbers the function makes of constants (1j, complex(1, 2)
        and what is computed from them), less their real parts (np.real, np.abs, ...)."""
        found: set = set()
        changed = True
        while changed:
            changed = False
            for stmt in self.statements():
                if not isinstance(stmt, ir.Assign) or all(t in found for t in stmt.targets):
                    continue
                value = stmt.value
                if isinstance(value, ir.Call) and any(value.fn is f for f in _REAL_OF_COMPLEX):
                    continue
                if isinstance(value, ir.Call) and any(value.fn is f for f in _MAKES_COMPLEX) \
                        or any(_complex_atom(a, found) for a in _atoms_of(value)):
                    found.update(stmt.targets)
                    changed = True
        return found

    def _check_calls(self):
        complex_values = self._complex_values()
        for stmt in self.statements():
            if not (isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Call)):
                continue
            call = stmt.value
            self._check_form_parameters(stmt, call)
            self._check_no_derivative(stmt, call)
            if not any(self.atom_active(a) for a in list(call.args) + [a for _, a in call.kwargs]):
                continue
            if not any(self.is_active(t) for t in stmt.targets):
                continue
            if any(_complex_atom(a, complex_values) for a in list(call.args) + [a for _, a in call.kwargs]):
                raise S2SError("a complex number meets a differentiated value here: s2s differentiates real "
                               "programs (a complex value's derivative is not the real gradient it returns)",
                               stmt.origin, "write the computation with real numbers: carry the real and the "
                                            "imaginary parts as two real arrays")
            if is_user_function(call.fn):
                continue
            found = rule_for(call, stmt.origin)
            name = getattr(call.fn, "__name__", repr(call.fn))
            if found is None and getattr(call.fn, "__module__", "").startswith("s2s.runtime"):
                # A helper of generated code (a second derivative being differentiated again);
                # the pipeline names the user's statement it came from (driver/origins.py)
                raise S2SError(f"s2s has no derivative of runtime.{name}, which computes a derivative of this "
                               "statement: derivatives of this order are not implemented for it",
                               stmt.origin,
                               "take one derivative fewer through this statement, or write it with functions "
                               "s2s differentiates to any order (a loop of products for np.prod and np.cumprod)")
            if found is None:
                raise S2SError(f"no derivative rule for {name}", stmt.origin,
                               "write the computation with functions s2s differentiates, or give it a "
                               "derivative: a function of yours that calls it, decorated with s2s.custom_vjp "
                               "(or s2s.custom_jvp)")
            if found.kind == "refuse":
                raise S2SError(f"s2s does not differentiate {name} with respect to its arguments",
                               stmt.origin, found.hint)
            check = facts(call.fn).options
            if check is not None and found.signature is not None:
                # Options written as constants are known now: refuse here, not when the code runs.
                try:
                    bound = found.bind(call.args, call.kwargs)
                except TypeError:
                    continue
                static = {k: v.value if isinstance(v, ir.Const) else v for k, v in list(bound.items())[1:]
                          if not isinstance(v, ir.Name)}
                problem = check(**static)
                if problem:
                    how = ", or compute the norm from np.abs, np.sum, np.max" if name.endswith("norm") else ""
                    raise S2SError(problem, stmt.origin, f"write one of the options s2s differentiates for {name} "
                                                         f"(the message names them){how}")

    def _check_form_parameters(self, stmt, call):
        """A scipy.stats form (scipy_forms/stats.py) called with a shape parameter it has no
        derivative in (t.cdf's df) that varies with what is differentiated: refused here, at the
        user's line, rather than at the special function's call inside the form."""
        if getattr(call.fn, "__module__", None) != "s2s.scipy_forms.stats":
            return
        params = scipy_stats_forms.no_derivative(call.fn)
        if not params or not any(t in self.useful for t in stmt.targets):
            return
        try:
            bound = inspect.signature(call.fn).bind(*call.args, **dict(call.kwargs)).arguments
        except TypeError:
            return
        for param in params:
            atom = bound.get(param)
            if isinstance(atom, ir.Name) and atom.id in self.varied:
                raise S2SError(f"s2s has no derivative of {scipy_stats_forms.spelling(call.fn)} with respect to its shape "
                               f"parameter {param} (it has no closed form), and {param} here varies with the "
                               "arguments differentiated", stmt.origin,
                               f"pass {param} as a constant: a number, or an argument not differentiated (not in "
                               "argnums); for a derivative with respect to it, give the function one of your own "
                               "with s2s.custom_vjp")

    def _check_no_derivative(self, stmt, call):
        """An operand a rule has no derivative in (Facts.no_derivative: gammainc's a) that varies
        with what is differentiated, where the result reaches the output: refused, as a zero
        derivative would be a wrong one (the operand is not one of the rule's differentiable
        sources, so it is varied here but never active)."""
        positions = facts(call.fn).no_derivative
        if not positions or not any(t in self.useful for t in stmt.targets):
            return
        found = rule_for(call, stmt.origin)
        if found is None or found.signature is None:
            return
        bound = bind(call, found, stmt.origin)
        for k in positions:
            param = found.params[k + 1]
            atom = bound.get(param)
            if isinstance(atom, ir.Name) and atom.id in self.varied:
                name = getattr(call.fn, "__name__", repr(call.fn))
                raise S2SError(f"s2s has no derivative of {name} with respect to its parameter {param} (it has no "
                               f"closed form), and {param} here varies with the arguments differentiated",
                               stmt.origin,
                               f"pass {param} as a constant: a number, or an argument not differentiated (not in "
                               "argnums); for a derivative with respect to it, give the function one of your own "
                               "with s2s.custom_vjp")

    # ---- kinds of variables -----------------------------------------------------

    def _kinds(self):
        for stmt in self.statements():
            if isinstance(stmt, ir.SetItem):
                self.subscripted.add(stmt.base)
            elif isinstance(stmt, ir.Assign):
                value = stmt.value
                if isinstance(value, ir.Subscript) and isinstance(value.value, ir.Name):
                    self.subscripted.add(value.value.id)
                    if all(isinstance(a, ir.Const) and isinstance(a.value, str) for a in value.index.items):
                        self.containers.add(value.value.id)
                elif isinstance(value, ir.Build):
                    self.containers.update(stmt.targets)
                elif isinstance(value, ir.Call) and is_user_function(value.fn):
                    # A helper may take or return a tuple, list, dict or namedtuple: adjoints that
                    # meet there are added leaf by leaf (tree_add), never concatenated.
                    self.containers.update(a.id for a in value.args if isinstance(a, ir.Name))
                    self.containers.update(stmt.targets)
                elif isinstance(value, ir.Call) and _tuple_rule(value):
                    # scipy.linalg.cho_factor's (c, lower), held and passed on whole: the adjoints
                    # that meet there are added item by item (tree_add), as Numba adds no tuples
                    self.containers.update(stmt.targets)
                elif isinstance(value, ir.Attribute) and value.attr not in ir.SHAPE_ATTRIBUTES:
                    if isinstance(value.value, ir.Name):
                        self.containers.add(value.value.id)
                        self.subscripted.add(value.value.id)
                if stmt.unpack and isinstance(value, ir.Name):
                    self.containers.add(value.id)
            elif isinstance(stmt, ir.For):
                self.int_like.add(stmt.var)
        self._dict_loop_containers()
        changed = True
        while changed:
            changed = False
            for stmt in self.statements():
                if not isinstance(stmt, ir.Assign) or len(stmt.targets) != 1 or stmt.targets[0] in self.int_like:
                    continue
                if self._int_valued(stmt.value):
                    self.int_like.add(stmt.targets[0])
                    changed = True
        # A variable assigned anything else is not known to be an int.
        for stmt in self.statements():
            if isinstance(stmt, ir.Assign) and len(stmt.targets) == 1 and not self._int_valued(stmt.value):
                self.int_like.discard(stmt.targets[0])

    def _dict_loop_containers(self):
        """What a loop over a dict goes over (`for k, v in d.items()`, `for k in d:` as the
        frontend lowers them: runtime.dict_keys, runtime.loop_keys of `_seq = d`) may be a dict,
        and so may every name copied to or from it or from another container: their adjoints are
        containers, added leaf by leaf (tree_add). `d_bar += _seq_bar` of two dicts was a raw
        TypeError where d was also indexed (a dict comprehension over d.items() and then d[k] in a
        loop)."""
        looped = {a.id for stmt in self.statements() if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Call)
                  and stmt.value.fn in (runtime.dict_keys, runtime.loop_keys)
                  for a in stmt.value.args if isinstance(a, ir.Name)}
        self.containers |= looped
        # A copy of a container is one too, and so is what is copied into one: s2s.lax.scan's
        # initial carry, a dict display, held as `carry_init = carry` (their adjoints meet there).
        copies = [(stmt.targets[0], stmt.value.id) for stmt in self.statements() if isinstance(stmt, ir.Assign)
                  and len(stmt.targets) == 1 and not stmt.unpack and isinstance(stmt.value, ir.Name)]
        changed = True
        while changed:
            changed = False
            for target, source in copies:
                if (target in self.containers) != (source in self.containers):
                    self.containers |= {target, source}
                    changed = True

    def _int_valued(self, value) -> bool:
        def ok(atom):
            return (isinstance(atom, ir.Const) and isinstance(atom.value, (int, np.integer))
                    and not isinstance(atom.value, bool)) or (
                isinstance(atom, ir.Name) and atom.id in self.int_like)

        if isinstance(value, (ir.Name, ir.Const)):
            return ok(value)
        if isinstance(value, ir.Call):
            # Facts.integer: "always" an int (len, int, math.floor; not np.argmax with an axis,
            # round or // of arrays), or "kept" from int arguments (+, -, *, //, %, -x, +x, abs, min, max)
            known = facts(value.fn)
            integer = known.integer
            if integer == "always":
                # (of one that broadcasts, x.astype(int), an int only of an int: of an array, an array
                # of ints, whose repeated entries an index must add up, not an int)
                return not known.broadcasts or bool(value.args) and ok(value.args[0])
            if integer == "kept":
                return all(ok(a) for a in value.args)
        if isinstance(value, ir.Attribute) and value.attr in ("ndim", "size"):
            return True
        if isinstance(value, ir.Subscript) and isinstance(value.value, ir.Name):
            defs = [d for d in self.defs.get(value.value.id, []) if d != "param"]
            return bool(defs) and all(isinstance(d, ir.Assign) and isinstance(d.value, ir.Attribute)
                                      and d.value.attr == "shape" for d in defs)
        return False

    def is_container(self, var: str) -> bool:
        return var in self.containers

    # ---- aliasing ---------------------------------------------------------------

    def _aliases(self):
        """Refuse in-place writes that another live name could observe."""
        parent: dict[str, str] = {}

        def find(v):
            while parent.get(v, v) != v:
                v = parent[v]
            return v

        def union(a, b):
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)

        for stmt in self.statements():
            if not isinstance(stmt, ir.Assign):
                continue
            value = stmt.value
            sources: list[str] = []
            if isinstance(value, ir.Name):
                sources = [value.id]
            elif isinstance(value, ir.Subscript) and isinstance(value.value, ir.Name):
                sources = [value.value.id]
            elif isinstance(value, ir.Attribute) and isinstance(value.value, ir.Name):
                sources = [value.value.id]
            elif isinstance(value, ir.Build):
                sources = ir.names_in(value)
            elif isinstance(value, ir.Call) and (facts(value.fn).view or is_user_function(value.fn)):
                sources = ir.names_in(value) if is_user_function(value.fn) else ir.names_in(value.args[0])
            for source in sources:
                for target in stmt.targets:
                    union(target, source)
        for stmt in self.statements():
            # `t[k] = a` into a list or dict stores a itself: a write into a changes t[k]
            if isinstance(stmt, ir.SetItem) and stmt.base in self.containers and isinstance(stmt.value, ir.Name):
                union(stmt.base, stmt.value.id)
            # and `t.append(a)` stores a itself, as a display [a] does
            if isinstance(stmt, ir.Push) and isinstance(stmt.value, ir.Name):
                union(stmt.tape, stmt.value.id)
        mutations = [s for s in self.statements()
                     if isinstance(s, ir.SetItem) or (isinstance(s, ir.Assign) and s.inplace)]
        if not mutations:
            return
        self._liveness(params_live_at_exit=False)
        read_later = dict(self.live_after)
        self.live_after = {}
        self._liveness(params_live_at_exit=True)
        classes: dict[str, set] = {}
        for var in set(self.occurrences) | set(self.fn.params):
            classes.setdefault(find(var), set()).add(var)
        for var in {s.base if isinstance(s, ir.SetItem) else s.targets[0] for s in mutations}:
            self.mutated.add(var)
            for member in classes.get(find(var), {var}):
                self.alias_of[member] = classes.get(find(var), {var})
        self.list_slice_writes = PointsToCheck(self).run(read_later).list_slice_writes

    def _liveness(self, params_live_at_exit: bool = True):
        result = self.fn.result
        exit_live = set(ir.names_in(result)) | (set(self.fn.params) if params_live_at_exit else set())
        _IRLiveness(self.live_after).block(self.fn.body, exit_live)

    def defs_may_clobber(self, var: str, at, *, operand: bool) -> bool:
        """May `var` change between statement `at` and the reverse sweep's visit of it?

        operand: the value is read by `at` (so `at` itself overwriting var clobbers it);
        otherwise the value is the one `at` produced.
        """
        sites = list(self.defs.get(var, []))
        for other in self.alias_of.get(var, ()):  # in-place writes through aliases
            if other != var:
                sites += [d for d in self.defs.get(other, []) if isinstance(d, ir.SetItem)]
        for site in sites:
            if site == "param" or isinstance(site, ir.Push):
                continue  # (the reverse sweep undoes each t.append(v) with t.pop(): t is as it was)
            if isinstance(site, ir.For) and site.var == var and id(site) in self.enclosing_loops(at):
                continue  # the reverse loop reconstructs its own loop variable
            if site is at:
                if operand or self.enclosing_loops(at):
                    return True
                continue
            if self.may_run_after(site, at):
                return True
        return False


def analyse(fn: ir.Function, active_params: list[str], float_params=()) -> Analysis:
    """The analysis a transform starts from: derivatives flow from the returned value.
    float_params: the parameters known to hold floats (the entry's differentiated arguments)."""
    result = fn.result
    return Analysis(fn, active_params, [result.id] if isinstance(result, ir.Name) else [],
                    tuple(float_params)).run()


class _IRLiveness(Liveness):
    """Liveness on the IR, recording what is live after each statement (by id)."""

    def __init__(self, live_after: dict):
        self.live_after = live_after

    def after(self, stmt, live: set) -> None:
        self.live_after[id(stmt)] = set(live)

    def structure(self, stmt, live: set) -> Branches | Loop | None:
        if isinstance(stmt, ir.If):
            return Branches(set(ir.stmt_reads(stmt)), [stmt.body, stmt.orelse])
        if isinstance(stmt, ir.For):
            return Loop(stmt.body, reads=set(ir.stmt_reads(stmt)), bound={stmt.var})
        if isinstance(stmt, ir.While):
            return Loop(stmt.body, reads=set(ir.stmt_reads(stmt)), test=set(ir.names_in(stmt.test)), pre=stmt.cond)
        return None

    def simple(self, stmt, live: set, record: bool) -> set:
        kills = set(stmt.targets) if isinstance(stmt, ir.Assign) and not stmt.inplace else set()
        return (live - kills) | set(value_reads(stmt))
