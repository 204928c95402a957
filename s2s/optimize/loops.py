"""Explicit elementwise loops, for code specialised to its arguments (s2s.jit of a gradient).

Each NumPy statement of the generated code allocates and fills an array of its own; Numba
fuses a nested array expression into one loop, but not a chain of statements, and not a
slice update `x_bar[:-1] += e` with its expression. Where the arguments' facts prove it
(s2s/shapes.py: which parameters are 1-d arrays, which are numbers), this pass turns a run
of elementwise statements over 1-d arrays of one length into one `for` loop over scalars:

    _t4 = x[1:] - _t2 ** 2             for k in range(max(0, x.shape[0] - 1)):
    x_bar[:-1] += _t4 * _t2      ->        _t4 = x[k + 1] - _t2 ** 2
    x_bar[1:] += _t4                       x_bar[k] += _t4 * _t2
                                           x_bar[k + 1] += _t4

Lengths: a 1-d array parameter x that the function never rebinds has n elements; x[a:],
x[:-b] and x[a:-b] (constants a, b >= 0) have max(0, n - a - b), their element k is x[k + a];
elementwise results, copies and zeros_like keep their operand's length; numbers broadcast.
A run is a sequence of statements of one block whose arrays all have the run's length:

- `t = <elementwise expression>`: t becomes a scalar of the loop (t must be a temporary
  the run alone reads, and not a view of an array the code writes);
- `s = np.sum(<elementwise expression>)`: s accumulates, from 0, and is read after the loop
  (Numba types it as its terms: an int where they are, as np.sum of ints is);
- `s = np.dot(a, b)` of 1-d arrays: s accumulates a[k] * b[k] from runtime.dot_zero(a, b), a
  zero of np.dot's dtype (which refuses booleans and narrow integers, where np.dot is no sum);
- `w[a:-b] += e`, `w[a:-b] = e`, `w += e`: w[k + a] is updated, where w was allocated in
  this block (zeros_like, copy...) and nothing since made another name for it.

Statements between them that only bind a name to a pure value reading nothing the run
wrote so far (`x_bar = runtime.zeros_like(x)`, `_t11_bar = out_bar`) move before the loop.
The order of the statements inside one element is kept, so a read of an array that the run
writes is allowed only where the loop gives it the value the NumPy code gives it: a later
statement reads or writes an array no further ahead than an earlier statement wrote or read
it (offsets b <= a); several `+=` and `-=` into one array are free, as addition commutes
(up to rounding). Where the loop only adds into an adjoint (an array of runtime.zeros_like)
at several offsets, the terms for the elements ahead of the loop's wait in numbers until
the loop reaches them (`_Looper.carry`): `x_bar[k + 1] += t` would be read back by the next
iteration, and that dependency through memory keeps LLVM from vectorising the loop (unless
the loop also sums, which keeps it from vectorising in any case).
Division, `%` and unknown calls stay NumPy (Numba raises on a scalar division by zero, NumPy
gives inf), and so does a sum of two booleans (a logical or in NumPy, 2 for two numbers).
Anything not proven stays as it was.
"""

from __future__ import annotations

import ast

from ..analysis.emitted import call_kind, changes_nothing, is_comment
from ..analysis.code_shapes import TOP, boolean_names, dotted_call, is_boolean, is_number, slice_trim
from .elements import (DOT_BARS, ElementShapes, Refuse, aliasing_loads, allocation, declared_facts, element_index,
                       lengths, names_read, names_written, one_d, scalar_elementwise)


class _Run:
    def __init__(self, fresh: set[str]):
        self.fresh = set(fresh)  # the fresh arrays before the run, to scan it again
        self.items: list[tuple[str, ast.stmt, ast.stmt | None]] = []  # (kind, original, in-loop)
        self.length = None
        self.temps: dict[str, int] = {}  # scalar temporary -> item index of its definition
        self.accumulators: list[str] = []
        self.starts: dict[str, ast.expr] = {}  # accumulator -> the value it starts from (0 unless named)
        self.accesses: list[tuple[str, int, str]] = []  # (array, offset, "read" | "write" | "add")
        self.stored: set[str] = set()  # names the loop statements bind or write
        self.loaded: set[str] = set()  # names the loop statements read
        self.zeroed: set[str] = set()  # arrays it writes that runtime.zeros_like made (a float dtype)


class _Looper:
    def __init__(self, function: ast.FunctionDef, facts: dict, shadowed: set[str], comment, lone_dots: bool = False):
        self.function = function
        self.shadowed = shadowed
        self.comment = comment
        self.lone_dots = lone_dots
        # which names are numbers and which 1-d arrays of which length (the shape analysis)
        self.classes, self.roots, self.dot_pairs = lengths(function, facts, shadowed)
        # destinations (a row of an array the caller just allocated, which no other name refers
        # to): fresh arrays on entry
        self.rows = {p for p, fact in facts.items()
                     if isinstance(fact, (list, tuple)) and len(fact) == 2 and fact[0] == "row"}
        self.cls = ElementShapes(self.classes.get, shadowed).of
        used = {n.id for n in ast.walk(function) if isinstance(n, ast.Name)} | {a.arg for a in function.args.args}
        self.index = next(c for c in ["k"] + [f"k{j}" for j in range(1, 1000)] if c not in used)
        self.used = used | set(shadowed) | {self.index}  # names a carry (fresh_name) must not take
        self.store_count: dict[str, int] = {}
        for node in ast.walk(function):
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                self.store_count[node.id] = self.store_count.get(node.id, 0) + 1
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                self.store_count[node.target.id] = self.store_count.get(node.target.id, 0) + 2
        self.load_count: dict[str, int] = {}
        for node in ast.walk(function):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                self.load_count[node.id] = self.load_count.get(node.id, 0) + 1
        self.params = {a.arg for a in function.args.args}
        self.booleans = boolean_names(function, shadowed)
        self.loops = 0
        self._private_cache: dict = {}
        self._block_loads: dict = {}

    # ---- blocks ---------------------------------------------------------------------

    def block(self, body: list) -> list:
        for stmt in body:
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    setattr(stmt, field, self.block(inner))
        out: list = []
        refused: set[int] = set()  # statements whose temporary is read after their run
        fresh: set[str] = set(self.rows) if body is self.function.body else set()
        queue = list(body)
        run = _Run(fresh)
        while queue or run.items:
            if not queue:
                back = self.close(run, out, refused)
                queue, fresh = back, run.fresh
                run = _Run(fresh)
                continue
            stmt = queue.pop(0)
            if is_comment(stmt):
                (run.items.append(("comment", stmt, stmt)) if run.items else out.append(stmt))
                continue
            converted = self.loopable(stmt, run, fresh, body, refused)
            if converted is not None:
                run.items.append(("loop", stmt, converted))
            elif run.items and self.hoistable(stmt, run, body):
                run.items.append(("hoist", stmt, None))
            else:
                back = self.close(run, out, refused)
                if back:  # scan the run's statements again, now that one of them is refused
                    queue, fresh = back + [stmt] + queue, run.fresh
                    run = _Run(fresh)
                    continue
                run = _Run(fresh)
                converted = self.loopable(stmt, run, fresh, body, refused)
                if converted is not None:
                    run.items.append(("loop", stmt, converted))
                else:
                    out.append(stmt)
            self._update_fresh(stmt, fresh, in_loop=converted is not None)
        return out

    def _update_fresh(self, stmt, fresh: set, in_loop: bool) -> None:
        """fresh: arrays allocated in this block that no other name refers to; with each
        name w of them that runtime.zeros_like made (an array of a float dtype), ("zeros", w)."""
        if is_comment(stmt):
            return
        if not in_loop:
            fresh -= aliasing_loads(stmt, self.shadowed)
        stores = names_written(stmt)
        if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id in fresh:
            stores.discard(stmt.target.id)  # w += e on an array changes w in place
        fresh -= stores | {("zeros", name) for name in stores}
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            value = stmt.value
            dotted = dotted_call(value)
            new_array = isinstance(value, (ast.BinOp, ast.UnaryOp)) or (
                dotted is not None and dotted[0] not in self.shadowed and not value.keywords
                and (allocation(dotted) or dotted == ("runtime", "sum_bar") or scalar_elementwise(dotted)))
            c = self.cls(value)
            if new_array and c is not None and not is_number(c) and c is not TOP:
                fresh.add(stmt.targets[0].id)  # arithmetic on arrays makes a new array
                if dotted == ("runtime", "zeros_like"):
                    fresh.add(("zeros", stmt.targets[0].id))
        fresh -= {mark for mark in fresh if isinstance(mark, tuple) and mark[1] not in fresh}

    # ---- what may join a run ------------------------------------------------------

    def _private(self, name: str, stmt, body: list) -> bool:
        """name is bound by stmt alone and read only by later simple statements of body."""
        key = (name, id(stmt), id(body))
        if key not in self._private_cache:  # (the statement and block are kept, so ids stay theirs)
            self._private_cache[key] = (self._find_private(name, stmt, body), stmt, body)
        return self._private_cache[key][0]

    def _find_private(self, name: str, stmt, body: list) -> bool:
        if name in self.params or self.store_count.get(name, 0) != 1:
            return False
        if id(body) not in self._block_loads:  # name -> [(position, simple statement)] per load
            table: dict[str, list] = {}
            for position, s in enumerate(body):
                simple = isinstance(s, (ast.Assign, ast.AugAssign, ast.Expr))
                for n in ast.walk(s):
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                        table.setdefault(n.id, []).append((position, simple))
            self._block_loads[id(body)] = (table, {id(s): position for position, s in enumerate(body)}, body)
        table, positions, _ = self._block_loads[id(body)]
        position = positions.get(id(stmt))
        loads = table.get(name, [])
        if position is None or any(at <= position or not simple for at, simple in loads):
            return False
        return len(loads) == self.load_count.get(name, 0)

    def loopable(self, stmt, run: _Run, fresh: set[str], body: list, refused: set[int]) -> ast.stmt | None:
        """stmt as the loop's statement for element k, or None where it may not join run."""
        if id(stmt) in refused:
            return None
        if not run.items:
            run.fresh = set(fresh)
        try:
            return self._loopable(stmt, run, fresh, body)
        except Refuse:
            return None

    def _same_length(self, cls, run: _Run, new: dict) -> None:
        if cls is None or cls is TOP or cls[0] != "arr" or len(cls[2]) != 1 or cls[1] not in self.roots:
            raise Refuse
        length = run.length or new.get("length")
        if length is None:
            new["length"] = cls
        elif cls != length:
            raise Refuse

    def _loopable(self, stmt, run: _Run, fresh: set[str], body: list) -> ast.stmt:
        new: dict = {"accesses": []}
        k = self.index
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            target = stmt.targets[0].id
            value = stmt.value
            if target in run.loaded or target in run.stored:
                raise Refuse
            dotted = dotted_call(value)
            if dotted == ("np", "sum") and len(value.args) == 1 and not value.keywords and "np" not in self.shadowed:
                self._same_length(self.cls(value.args[0]), run, new)
                element = self.element(value.args[0], run, new)
                kind, converted = "accumulator", ast.AugAssign(ast.Name(target, ast.Store()), ast.Add(), element)
            elif dotted == ("np", "dot") and is_number(self.cls(value)) and not {"np", "runtime"} & self.shadowed:
                # np.dot of two 1-d arrays of one length (ElementShapes.dot): the sum of their product,
                # from a zero of np.dot's dtype (runtime.dot_zero of the operands' arrays, before the
                # loop: not a number of the loop). A sum from the int 0 was an int for booleans,
                # where np.dot is a logical or (a count for True), and float64 for float32.
                arrays = [a.value if isinstance(a, ast.Subscript) else a for a in value.args]
                if not all(isinstance(a, ast.Name) and a.id not in run.temps for a in arrays):
                    raise Refuse
                new["start"] = ast.Call(ast.Attribute(ast.Name("runtime", ast.Load()), "dot_zero", ast.Load()),
                                        [ast.Name(a.id, ast.Load()) for a in arrays], [])
                self._same_length(self.cls(value.args[0]), run, new)
                element = ast.BinOp(self.element(value.args[0], run, new), ast.Mult(),
                                    self.element(value.args[1], run, new))
                kind, converted = "accumulator", ast.AugAssign(ast.Name(target, ast.Store()), ast.Add(), element)
            else:
                if declared_facts(dotted).copies and len(value.args) == 1 and not value.keywords and dotted[0] not in self.shadowed:
                    value = value.args[0]
                elif isinstance(value, (ast.Name, ast.Subscript)):
                    # a view: its later uses would see later writes into the array
                    base = value.value if isinstance(value, ast.Subscript) else value
                    if not (isinstance(base, ast.Name) and base.id in self.params):
                        raise Refuse
                self._same_length(self.cls(value), run, new)
                if not self._private(target, stmt, body):
                    raise Refuse
                element = self.element(value, run, new)
                kind, converted = "temp", ast.Assign([ast.Name(target, ast.Store())], element, lineno=0)
            stored = {target}
        elif isinstance(stmt, (ast.Assign, ast.AugAssign)):
            target = stmt.targets[0] if isinstance(stmt, ast.Assign) else stmt.target
            if isinstance(stmt, ast.Assign) and len(stmt.targets) != 1:
                raise Refuse
            if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                array = target.value.id
                bounds = slice_trim(target.slice)
                if bounds is None:
                    raise Refuse
                offset = bounds[0]
            elif isinstance(target, ast.Name) and isinstance(stmt, ast.AugAssign):
                array, offset = target.id, 0
            else:
                raise Refuse
            if array not in fresh or array in run.temps or array in run.accumulators:
                raise Refuse
            whole = target if isinstance(target, ast.Subscript) else ast.Name(array, ast.Load())
            self._same_length(self.cls(whole), run, new)
            if array in names_read(stmt.value):
                raise Refuse
            if isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, (ast.Div, ast.FloorDiv, ast.Mod, ast.Pow,
                                                                        ast.MatMult)):
                raise Refuse
            element = self.element(stmt.value, run, new)
            value_cls = self.cls(stmt.value)
            if not is_number(value_cls):
                self._same_length(value_cls, run, new)
            index = element_index(k, offset)
            place = ast.Subscript(ast.Name(array, ast.Load()), index, ast.Store())
            if isinstance(stmt, ast.AugAssign):
                converted = ast.AugAssign(place, stmt.op, element)
                mode = "add" if isinstance(stmt.op, (ast.Add, ast.Sub)) else "write"
            else:
                converted = ast.Assign([place], element, lineno=0)
                mode = "write"
            new["accesses"].append((array, offset, mode))
            if ("zeros", array) in fresh:
                new["zeroed"] = array
            kind, stored = "write", {array}
        else:
            raise Refuse
        # hazards: a later statement touches an array no further ahead than an earlier one
        for array, b, mode in new["accesses"]:
            for other, a, other_mode in run.accesses:
                if other != array or (mode == "read" and other_mode == "read"):
                    continue
                if mode == "add" and other_mode == "add":
                    continue
                if b > a:
                    raise Refuse
        reads = names_read(stmt.value) | ({stmt.targets[0].value.id} if kind == "write" and isinstance(stmt, ast.Assign)
                                      else set())
        if reads & set(run.accumulators):
            raise Refuse
        # commit
        if run.length is None:
            run.length = new["length"]
        run.accesses += new["accesses"]
        if kind == "temp":
            run.temps[target] = len(run.items)
        elif kind == "accumulator":
            run.accumulators.append(target)
            if "start" in new:
                run.starts[target] = new["start"]
        if "zeroed" in new:
            run.zeroed.add(new["zeroed"])
        run.stored |= stored
        run.loaded |= names_read(stmt)
        return converted

    def element(self, node, run: _Run, new: dict) -> ast.expr:
        """Element k of an elementwise expression (scalars for arrays), recording its reads."""
        k = self.index
        cls = self.cls(node)
        if is_number(cls) and not any(isinstance(n, ast.Subscript) for n in ast.walk(node)):
            if not changes_nothing(node, self.shadowed) or names_read(node) & run.stored:
                raise Refuse
            if any(isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Div, ast.FloorDiv, ast.Mod, ast.Pow))
                   for n in ast.walk(node)):
                raise Refuse  # kept NumPy: a scalar division by zero raises under Numba
            return node
        if isinstance(node, ast.Name):
            if node.id in run.temps:
                return ast.Name(node.id, ast.Load())
            self._same_length(cls, run, new)
            if node.id in run.stored:
                raise Refuse
            new["accesses"].append((node.id, 0, "read"))
            return ast.Subscript(ast.Name(node.id, ast.Load()), ast.Name(k, ast.Load()), ast.Load())
        if isinstance(node, ast.Subscript):
            if not isinstance(node.value, ast.Name) or node.value.id in run.temps:
                raise Refuse
            self._same_length(cls, run, new)
            offset = slice_trim(node.slice)[0]
            new["accesses"].append((node.value.id, offset, "read"))
            index = element_index(k, offset)
            return ast.Subscript(ast.Name(node.value.id, ast.Load()), index, ast.Load())
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod, ast.MatMult)):
                raise Refuse
            if isinstance(node.op, ast.Add) and all(is_boolean(side, self.booleans, self.shadowed)
                                                    for side in (node.left, node.right)):
                raise Refuse  # NumPy's bool + bool is a logical or (True); Numba's, of two numbers, 2
            if isinstance(node.op, ast.Pow) and not (isinstance(node.right, ast.Constant)
                                                     and type(node.right.value) in (int, float)
                                                     and float(node.right.value).is_integer()
                                                     and node.right.value >= 0):
                raise Refuse  # a whole power, as a number, means the same in NumPy and Numba
            return ast.BinOp(self.element(node.left, run, new), node.op, self.element(node.right, run, new))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            return ast.UnaryOp(node.op, self.element(node.operand, run, new))
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            return ast.Compare(self.element(node.left, run, new), node.ops,
                               [self.element(node.comparators[0], run, new)])
        if isinstance(node, ast.Call) and not node.keywords:
            dotted = dotted_call(node)
            if (scalar_elementwise(dotted) and "np" not in self.shadowed
                    and call_kind(node, self.shadowed) == "fusable"):
                return ast.Call(node.func, [self.element(a, run, new) for a in node.args], [])
            if dotted == ("runtime", "sum_bar") and "runtime" not in self.shadowed and len(node.args) == 2:
                # the adjoint of a sum: g in every element of an array shaped like its operand
                self._same_length(self.cls(node.args[1]), run, new)
                if not is_number(self.cls(node.args[0])):
                    raise Refuse
                return self.element(node.args[0], run, new)
            if dotted in DOT_BARS and "runtime" not in self.shadowed and one_d(cls):
                # the adjoint of np.dot(a, b) of 1-d arrays (ElementShapes.dot): g * b for a, g * a for b
                other = node.args[2] if dotted == DOT_BARS[0] else node.args[1]
                return ast.BinOp(self.element(node.args[0], run, new), ast.Mult(), self.element(other, run, new))
        raise Refuse

    def hoistable(self, stmt, run: _Run, body: list) -> bool:
        """A statement that binds a name to a pure value and may run before the loop."""
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            target = stmt.targets[0].id
        elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
            target = stmt.target.id  # a counter, such as a tape's length
            if not is_number(self.classes.get(target)):
                return False
        else:
            return False
        if not changes_nothing(stmt.value, self.shadowed):
            return False
        c = self.cls(stmt.value)
        if isinstance(stmt, ast.Assign) and c is not None and c is not TOP and not is_number(c) and c != run.length \
                and not allocation(dotted_call(stmt.value)) and self._private(target, stmt, body):
            return False  # better a number of a loop of its own length
        return not (names_read(stmt.value) & run.stored) and target not in run.loaded | run.stored

    # ---- a finished run ------------------------------------------------------------

    def fresh_name(self, base: str) -> str:
        """base, or base with underscores after it, bound nowhere in the module so far."""
        name = base
        while name in self.used:
            name += "_"
        self.used.add(name)
        return name

    def carry(self, array: str, run: _Run, loop_body: list, root: str, trim: int) -> tuple[list, list, list]:
        """Updates of array ahead of the loop's element, carried in numbers instead.

        Where the loop only adds into array (a float array of runtime.zeros_like that no other
        name refers to), at offsets low .. low + depth, iteration k adds into array[k + low + 1]
        what iteration k + 1 reads back to add to: a dependency through memory from one
        iteration to the next, which keeps LLVM from vectorising the loop. Instead, the terms
        of each iteration for array[k + low + d] go into a number, array_k<low + d>, and reach
        array[k + low] d iterations later through d numbers shifted once per iteration (the
        previous iteration's, the one before...); the last ones go in after the loop. Each
        element is then written by one iteration alone. (LLVM vectorises such delays, "fixed
        order recurrences", where each is a copy of the next and all are read at the end of the
        body; a sum of two delays carried as one number would not vectorise.)

        Returns (statements before the loop, its body, statements after it); the body as it
        was where this does not apply."""
        k = self.index
        if any(a == array and mode != "add" for a, _, mode in run.accesses):
            return [], loop_body, []
        updates = {}
        for stmt in loop_body:
            if isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, (ast.Add, ast.Sub)) \
                    and isinstance(stmt.target, ast.Subscript) and isinstance(stmt.target.value, ast.Name) \
                    and stmt.target.value.id == array:
                offset = _offset(stmt.target.slice, k)
                if offset is None:
                    return [], loop_body, []
                updates[id(stmt)] = offset
        mentions = sum(1 for stmt in loop_body for n in ast.walk(stmt) if isinstance(n, ast.Name) and n.id == array)
        if mentions != len(updates) or len(set(updates.values())) < 2:
            return [], loop_body, []  # read in the loop, or one offset: nothing to carry
        low, depth = min(updates.values()), max(updates.values()) - min(updates.values())
        if low + depth > trim:
            return [], loop_body, []  # (the length rule allows no such offsets)
        distances = sorted({offset - low for offset in updates.values()} - {0})
        terms = {d: self.fresh_name(f"{array}_{k}{low + d}") for d in distances}  # this iteration's
        delayed = {d: [self.fresh_name(f"{terms[d]}_prev{j if j > 1 else ''}") for j in range(1, d + 1)]
                   for d in distances}  # delayed[d][j - 1]: terms[d] of iteration k - j

        def name(n, store=False):
            return ast.Name(n, ast.Store() if store else ast.Load())

        def element(index):
            return ast.Subscript(name(array), index, ast.Store())

        def total(names):
            expr = name(names[0])
            for n in names[1:]:
                expr = ast.BinOp(expr, ast.Add(), name(n))
            return expr

        body, started = [], set()
        for stmt in loop_body:
            d = updates[id(stmt)] - low if id(stmt) in updates else 0
            if d == 0:
                body.append(stmt)
            elif d not in started:
                started.add(d)
                value = stmt.value if isinstance(stmt.op, ast.Add) else ast.UnaryOp(ast.USub(), stmt.value)
                body.append(ast.Assign([name(terms[d], True)], value, lineno=0))
            else:
                body.append(ast.AugAssign(name(terms[d], True), stmt.op, stmt.value))
        # at the end of the body (LLVM needs the delays read after the terms are computed)
        body.append(ast.AugAssign(element(element_index(k, low)), ast.Add(), total([delayed[d][-1] for d in distances])))
        for d in distances:
            for j in range(d - 1, 0, -1):
                body.append(ast.Assign([name(delayed[d][j], True)], name(delayed[d][j - 1]), lineno=0))
            body.append(ast.Assign([name(delayed[d][0], True)], name(terms[d]), lineno=0))
        before = []
        if self.comment is not None:
            def listed(words):
                return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"

            words = {2: "two", 3: "three", 4: "four"}
            delays = [f"{delayed[d][-1]} {'is ' if d == distances[0] else ''}{terms[d]} of "
                      + ("the previous iteration" if d == 1 else f"{words.get(d, d)} iterations back")
                      for d in distances]
            several = len(distances) > 1
            before.append(self.comment(
                f"{listed([terms[d] for d in distances])} {'are' if several else 'is'} what this iteration adds to"
                f" {listed([f'{array}[{k} + {low + d}]' for d in distances])},"
                f" {'elements' if several else 'an element'} the loop has not reached yet:"
                f" {'they are' if several else 'it is'} added when the loop gets there ({listed(delays)}, for"
                f" {array}[{k}{f' + {low}' if low else ''}]), or after the loop for the last"
                f" element{'s' if depth > 1 else ''}. Each element of {array} is so written by one iteration only, and"
                f" the loop can be vectorised; an element's terms are summed in another order than in the NumPy code"
                f" (up to rounding)."))
        for d in distances:
            for n in delayed[d]:
                before.append(ast.Assign([name(n, True)], ast.Constant(0.0), lineno=0))
        length = ast.Subscript(ast.Attribute(name(root), "shape", ast.Load()), ast.Constant(0), ast.Load())
        flush = []
        for m in range(depth):  # the element low + m past the loop's last: delays of distance > m
            pending = [delayed[d][d - m - 1] for d in distances if d > m]
            flush.append(ast.AugAssign(element(ast.BinOp(length, ast.Sub(), ast.Constant(trim - low - m))),
                                       ast.Add(), total(pending)))
        after = [ast.If(ast.Compare(length, [ast.Gt()], [ast.Constant(trim)]), flush, [])]
        return before, body, after

    def _drop_unread(self, run: _Run) -> None:
        """Temporaries of the run that nothing reads (their one reader was
        `runtime.sum_bar(g, t)`, which is g in the loop) go, and then what only they read."""
        while True:
            read = {n.id for kind, _, c in run.items if kind == "loop" for n in ast.walk(c)
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
            unread = {id(c): c.targets[0].id for kind, _, c in run.items
                      if kind == "loop" and isinstance(c, ast.Assign) and len(c.targets) == 1
                      and isinstance(c.targets[0], ast.Name) and c.targets[0].id in run.temps
                      and c.targets[0].id not in read and changes_nothing(c.value, self.shadowed)}
            if not unread:
                return
            run.items = [item for item in run.items if id(item[2]) not in unread]
            for name in unread.values():
                del run.temps[name]

    def close(self, run: _Run, out: list, refused: set[int]) -> list:
        """Write the run out (as a loop where worth it); statements to scan again where a
        temporary of the run is read after it (its definition is then refused)."""
        if not run.items:
            return []
        escaping = []
        for name, position in run.temps.items():
            loads = sum(1 for kind, s, _ in run.items if kind == "loop"
                        for n in ast.walk(s) if isinstance(n, ast.Name) and n.id == name
                        and isinstance(n.ctx, ast.Load))
            if loads != self.load_count.get(name, 0):
                escaping.append(position)
        if escaping:
            cut = min(escaping)
            refused.add(id(run.items[cut][1]))
            return [s for _, s, _ in run.items]
        self._drop_unread(run)
        loops = [(kind, s, c) for kind, s, c in run.items if kind == "loop"]
        # one statement is worth a loop where it updates a slice with an expression that Numba
        # would compute into an array of its own first
        worth = len(loops) >= 2 or self.lone_dots and len(loops) == 1 and dotted_call(loops[0][1].value) == ("np", "dot") or (
            len(loops) == 1 and isinstance(loops[0][1], (ast.Assign, ast.AugAssign))
            and isinstance(loops[0][1].targets[0] if isinstance(loops[0][1], ast.Assign) else loops[0][1].target,
                           ast.Subscript)
            and not isinstance(loops[0][1].value, (ast.Name, ast.Subscript, ast.Constant)))
        if not worth:  # the first statement stays NumPy; the others may start a run of their own
            first = run.items[0][1]
            out.append(first)
            self._update_fresh(first, run.fresh, in_loop=False)
            return [s for _, s, _ in run.items[1:]]
        # comments after the last statement of the loop go after it
        last = max(j for j, (kind, _, _) in enumerate(run.items) if kind == "loop")
        items = run.items[:last + 1] + [item for item in run.items[last + 1:] if item[0] == "hoist"]
        trailing = [s for kind, s, _ in run.items[last + 1:] if kind == "comment"]
        hoisted = [s for kind, s, _ in items if kind == "hoist"]
        out.extend(hoisted)
        for name in run.accumulators:
            out.append(ast.Assign([ast.Name(name, ast.Store())], run.starts.get(name, ast.Constant(0)), lineno=0))
        root, trim = run.length[1], run.length[2][0][1]
        size = ast.Subscript(ast.Attribute(ast.Name(root, ast.Load()), "shape", ast.Load()), ast.Constant(0),
                             ast.Load())
        if trim:
            size = ast.Call(ast.Name("max", ast.Load()),
                            [ast.Constant(0), ast.BinOp(size, ast.Sub(), ast.Constant(trim))], [])
        scalars = list(run.temps)
        what = f"{root}.shape[0] - {trim}" if trim else f"{root}.shape[0]"
        k = self.index
        note = (f"One loop for the elementwise statements below: {k} runs over their {what} elements"
                f" (v[a:] -> v[{k} + a])")
        if scalars:
            note += f"; {', '.join(scalars)} {'are numbers' if len(scalars) > 1 else 'is a number'} here"
        if run.accumulators:
            note += f"; {', '.join(run.accumulators)} {'sums' if len(run.accumulators) == 1 else 'sum'} their terms"
        loop_body = [c for kind, _, c in items if kind in ("loop", "comment")]
        after = []
        # (not beside a sum: LLVM keeps a sum of floats in order, so such a loop is not vectorised
        # anyway, and the delays would only cost a few moves per element, about 5% on Rosenbrock)
        carried = run.zeroed if not run.accumulators else set()
        for array in dict.fromkeys(array for array, _, _ in run.accesses if array in carried):
            before, loop_body, flush = self.carry(array, run, loop_body, root, trim)
            out.extend(before)
            after.extend(flush)
        if self.comment is not None:
            out.append(self.comment(note))
        loop = ast.For(ast.Name(self.index, ast.Store()), ast.Call(ast.Name("range", ast.Load()), [size], []),
                       loop_body, [], lineno=0)
        out.append(loop)
        out.extend(after)
        out.extend(trailing)
        self.loops += 1
        return []


def _offset(index, k: str) -> int | None:
    """o of an index k + o (element_index), or None."""
    if isinstance(index, ast.Name) and index.id == k:
        return 0
    if isinstance(index, ast.BinOp) and isinstance(index.op, ast.Add) and isinstance(index.left, ast.Name) \
            and index.left.id == k and isinstance(index.right, ast.Constant) and type(index.right.value) is int:
        return index.right.value
    return None


def _named_scales(function: ast.FunctionDef, looper: _Looper) -> bool:
    """`a_bar = runtime.dot_bar_y(<number expression>, x, a)` of 1-d arrays becomes
    `a_bar_scale = <number expression>` and `a_bar = runtime.dot_bar_y(a_bar_scale, x, a)`:
    in a loop the number is then computed once, before it (the loops keep a division out of
    their elements: a scalar division by zero raises under Numba). Whether anything changed."""
    changed = False

    def visit(body: list) -> list:
        nonlocal changed
        out = []
        for stmt in body:
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    setattr(stmt, field, visit(inner))
            value = getattr(stmt, "value", None)
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                    and dotted_call(value) in DOT_BARS and "runtime" not in looper.shadowed and not value.keywords \
                    and len(value.args) == 3 and not isinstance(value.args[0], (ast.Name, ast.Constant)) \
                    and one_d(looper.cls(value)) and changes_nothing(value.args[0], looper.shadowed):
                scale = looper.fresh_name(f"{stmt.targets[0].id}_scale")
                out.append(ast.Assign([ast.Name(scale, ast.Store())], value.args[0], lineno=0))
                value.args[0] = ast.Name(scale, ast.Load())
                changed = True
            out.append(stmt)
        return out

    function.body = visit(function.body)
    return changed


def _length_checks(looper: _Looper, pairs: list) -> list[ast.stmt]:
    """Statements that raise, as np.dot(a, b) would, unless each pair of arrays has one length."""
    out = []
    if looper.comment is not None:
        out.append(looper.comment("The loops take the operands of np.dot to have one length, as np.dot raises "
                                  "otherwise; an element past the end of the shorter would be read: check first."))
    for a, b in pairs:
        test = ast.Compare(ast.Subscript(ast.Attribute(ast.Name(a, ast.Load()), "shape", ast.Load()), ast.Constant(0),
                                         ast.Load()), [ast.NotEq()],
                           [ast.Subscript(ast.Attribute(ast.Name(b, ast.Load()), "shape", ast.Load()), ast.Constant(0),
                                          ast.Load())])
        error = ast.Call(ast.Name("ValueError", ast.Load()),
                         [ast.Constant(f"np.dot({a}, {b}): the arrays have different lengths")], [])
        out.append(ast.If(test, [ast.Raise(error, None)], []))
    return out


def loop_function(function: ast.FunctionDef, facts: dict, shadowed: set[str] = frozenset(), comment=None,
                  lone_dots: bool = False) -> int:
    """Apply the pass to one function in place; facts: its parameters' (shapes.argument_facts,
    and ("row", p) for a destination of p's shape that nothing else refers to). lone_dots:
    np.dot of 1-d arrays is worth a loop of its own (small arrays, where a call of BLAS costs
    more than the loop: the code of one example of a vmap). Returns how many loops it wrote."""
    if {"range", "max", "ValueError"} & set(shadowed):
        return 0
    looper = _Looper(function, facts, set(shadowed), comment, lone_dots)
    if not looper.roots:
        return 0
    if _named_scales(function, looper):
        looper = _Looper(function, facts, set(shadowed), comment, lone_dots)
    body = looper.block(function.body)
    if looper.loops and looper.dot_pairs:
        at = 1 if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) else 0
        body[at:at] = _length_checks(looper, looper.dot_pairs)
    function.body = body
    return looper.loops


def loop_module(body: list[ast.stmt], facts: dict[str, dict], comment=None) -> list[ast.stmt]:
    """The pass on the functions of a generated module named in facts (function name ->
    {parameter: fact})."""
    defined = {stmt.name for stmt in body if isinstance(stmt, ast.FunctionDef)}
    defined |= {t.id for stmt in body if isinstance(stmt, ast.Assign) for t in stmt.targets if isinstance(t, ast.Name)}
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name in facts:
            loop_function(stmt, facts[stmt.name], defined, comment)
    return body
