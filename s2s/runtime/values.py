"""Values and trees: zeros, ones, copies, sums of adjoints, in-place adds; broadcasting."""

from __future__ import annotations

import numpy as np

from ..errors import S2SError


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


class AdjointList(list):
    """The adjoint of a tuple or list (python backend): a list, so that a loop can add into
    one element, `Ws_bar[i] += g`, and a sum of adjoints, so that `+` and `+=` add element by
    element (tree_add) where a tuple or list would concatenate."""

    def __add__(self, other):
        return tree_add(self, other)

    __radd__ = __add__

    def __iadd__(self, other):
        self[:] = tree_add(self, other)
        return self


class TreeShape(tuple):
    """The shape of a tuple or list of values: the shapes of its items (its items may differ in
    shape, as the (W, b) pairs of a network do, which np.shape refuses)."""


class NamedTreeShape(tuple):
    """The shape of a named tuple of values (eigh's (eigenvalues, eigenvectors)): its items' shapes,
    and its type, which its zero adjoint is made of."""

    def __new__(cls, kind, shapes):
        made = super().__new__(cls, shapes)
        made.kind = kind
        return made


class DictShape(tuple):
    """The shape of a dict of values: (key, shape) of each item, in order."""


def tree_shape(x):
    if _is_namedtuple(x):
        return NamedTreeShape(type(x), (tree_shape(v) for v in x))
    if isinstance(x, (tuple, list)):
        return TreeShape(tree_shape(v) for v in x)
    if isinstance(x, dict):  # (np.shape of a dict is (): its zero adjoint was an array)
        return DictShape((k, tree_shape(v)) for k, v in x.items())
    return np.shape(x)


def carry_like(value, like, trips=None, *, where=None):
    """The number a loop's carry starts from, which the loop makes an array of like's shape
    (optimize/carries.py): under Numba, where like is an array, the number broadcast to that
    shape (a variable has one type there), and a refusal, naming the user's statement `where`, of
    a loop of no iteration (trips: the arguments of its range, or a while loop's test on entry),
    after which NumPy has the number; here the number itself, as NumPy has it."""
    return value


def carry_like_item(value, like, trips=None, *, where=None):
    """carry_like where the loop makes its carry an array of the shape of an item of like
    (`s = s + X[i]`): under Numba the number broadcast to like.shape[1:] (the number itself where
    like has one dimension, whose items are numbers); here the number itself, as NumPy has it."""
    return value


def number_if_0d(x):
    """x, on one path of a variable that holds a number on another (transforms/zero_d_merges.py):
    here x itself, as NumPy has it; under Numba a 0-d array's number (a variable has one type
    in compiled code, where arithmetic of 0-d arrays gives numbers and np.where a 0-d array)."""
    return x


def zeros_like(x):
    """A zero adjoint with the structure, shape and float dtype of x."""
    if isinstance(x, np.ndarray):
        dtype = x.dtype if np.issubdtype(x.dtype, np.inexact) else np.float64
        return np.zeros(x.shape, dtype)
    if _is_namedtuple(x):
        return type(x)(*(zeros_like(v) for v in x))
    if isinstance(x, (tuple, list)):
        return AdjointList(zeros_like(v) for v in x)
    if isinstance(x, dict):
        return {k: zeros_like(v) for k, v in x.items()}
    if isinstance(x, (np.floating, np.complexfloating)):
        return type(x)(0)
    return 0.0


def broadcast_like(t, c):
    """t + zeros_like(c): the tangent of a sum or difference whose operand c has a zero tangent
    (forward mode). That zero only broadcasts t to the result's shape and dtype: where c's
    shape fits into t's and the dtype stays, the result is t itself and no zeros are made."""
    z = zeros_like(c) if not isinstance(c, np.ndarray) else None
    if isinstance(t, np.ndarray) and isinstance(c, np.ndarray) and c.ndim <= t.ndim and all(
            a == b or a == 1 for a, b in zip(c.shape[::-1], t.shape[::-1])):
        if np.result_type(t.dtype, c.dtype if np.issubdtype(c.dtype, np.inexact) else np.float64) == t.dtype:
            return t
    elif isinstance(t, np.ndarray) and isinstance(z, (float, np.floating)) and np.result_type(t, z) == t.dtype:
        return t
    return t + (zeros_like(c) if z is None else z)


def zeros_shaped(shape, like):
    """Zeros of a given shape (a taped shape) with like's float dtype."""
    if isinstance(shape, TreeShape):  # of a tuple or list, from a shape tape
        likes = like if isinstance(like, (tuple, list)) and len(like) == len(shape) else [None] * len(shape)
        return AdjointList(zeros_shaped(s, item) for s, item in zip(shape, likes))
    if isinstance(shape, NamedTreeShape):
        likes = like if isinstance(like, tuple) and len(like) == len(shape) else [None] * len(shape)
        return shape.kind(*(zeros_shaped(s, item) for s, item in zip(shape, likes)))
    if isinstance(shape, DictShape):
        return {k: zeros_shaped(s, like.get(k) if isinstance(like, dict) else None) for k, s in shape}
    if shape == () and not isinstance(like, np.ndarray):
        return zeros_like(like)  # (a number's zero, not a 0-d array: without s2s.jit's facts any value may be one)
    dtype = like.dtype if isinstance(like, np.ndarray) and np.issubdtype(like.dtype, np.inexact) else np.float64
    return np.zeros(shape, dtype)


def ones_like(x):
    """The seed of a gradient: one, with x's float dtype."""
    if isinstance(x, (np.floating, np.ndarray)):
        return np.ones_like(x)[()]
    return 1.0


def copy(x):
    """A copy that later in-place writes cannot change (scalars are returned as they are)."""
    if isinstance(x, np.ndarray):
        return x.copy()
    if isinstance(x, tuple) and not _is_namedtuple(x):
        return tuple(copy(v) for v in x)
    if isinstance(x, list):  # (a list is changed in place too: `t[0] = v` must not reach a copy)
        return type(x)(copy(v) for v in x)
    if type(x) is dict:
        return {k: copy(v) for k, v in x.items()}
    return x


def tree_add(a, b):
    """a + b, leaf by leaf, for adjoints of tuples, lists and dicts."""
    if isinstance(a, dict):
        return {k: tree_add(a[k], b[k]) for k in a}
    if _is_namedtuple(a):
        return type(a)(*(tree_add(x, y) for x, y in zip(a, b)))
    if isinstance(a, AdjointList) or isinstance(b, AdjointList):
        return AdjointList(tree_add(x, y) for x, y in zip(a, b))
    if isinstance(a, (tuple, list)):
        return tuple(tree_add(x, y) for x, y in zip(a, b))
    return a + b


def add_at(c, key, value):
    """Add value to element `key` of c: in place for arrays (repeated entries of an index array
    accumulating, as the adjoint of the gather c[key] must), a new container otherwise."""
    if isinstance(c, np.ndarray):
        index_add(c, key, value)
        return c
    if key == () or key is Ellipsis:  # x[()] or x[...] of a 0-d array x, whose adjoint is a number
        return c + value
    if isinstance(c, dict):
        out = dict(c)
        out[key] = tree_add(out[key], value)
        return out
    if _is_namedtuple(c):
        return c._replace(**{c._fields[key]: tree_add(c[key], value)})
    items = list(c)
    items[key] = tree_add(items[key], value)
    return AdjointList(items) if isinstance(c, AdjointList) else tuple(items)


def pop_adjoint(bar):
    """(the adjoint of a list's last item, the adjoint of the rest): the reverse of
    `t.append(v)`. A list adjoint loses its last item in place (a loop pops one per pass); a
    tuple (what np.array's rule gives a list) becomes such a list first; an array (np.sum's
    rule of a list) gives a view."""
    if isinstance(bar, list):
        item = bar.pop()
        return item, bar
    if isinstance(bar, tuple):
        return bar[-1], AdjointList(bar[:-1])
    return bar[-1], bar[:-1]


def unpack_bar(parts, source):
    """The adjoint of `a, b, c = source` from the adjoints of a, b and c: an array of
    source's dtype where source is an array (`x[:3] += (a_bar, b_bar, c_bar)` is NumPy's,
    but Numba adds no tuple into an array), the tuple itself where source is a tuple or list.
    Only source's type is read (overloads/values.py), never its value."""
    if isinstance(source, np.ndarray):
        dtype = source.dtype if np.issubdtype(source.dtype, np.inexact) else np.float64
        return np.array(parts, dtype)
    return parts


def loop_keys(seq):
    """What `for k in d:` goes over: a dict's keys in the order Python gives them (the order
    they were inserted in: a loop whose result depends on the order computes what the NumPy
    program does); any other sequence itself. The frontend calls it only where the loop
    variable indexes something (so it is an int or a key, and carries no derivative)."""
    if isinstance(seq, dict):
        return tuple(seq)
    return seq


def sum_start(seq, *, where=None):
    """What sum(seq) starts from, as Python's sum does: 0. (Under Numba, zeros shaped like
    seq's items where they are arrays, which a 0 cannot become in compiled code; the sum of an
    empty list of arrays is refused there, naming where: the user's file:line.) No derivative
    flows through it: its value is a constant."""
    return 0


def require_not_dict(seq, where):
    """`for k in d:` whose body does not index with k goes over seq[0], seq[1], ...: the items of
    a sequence, but not the keys of a dict (a dict with int keys gave its values). where: the
    loop's file:line."""
    if isinstance(seq, dict):
        raise S2SError(f"s2s: {where}: a loop over a dict whose body does not index it with the loop variable is "
                       "not supported; loop over d.keys(), d.values() or d.items() (`for k, v in d.items():`, "
                       "`for i, (k, v) in enumerate(d.items()):` with a counter)")


def dict_keys(d):
    """What `for k, v in d.items():` (and .keys(), .values()) goes over: d's keys in the order
    Python gives them, the order they were inserted in (a loop whose result depends on the order,
    `s = s * 10 + v`, computes what the NumPy program does)."""
    if not isinstance(d, dict):
        raise ValueError(f"s2s: .items(), .keys() and .values() are dict methods; this loop got "
                         f"{type(d).__name__!r}")
    return tuple(d)


def has_key(d, key):
    """Does the dict d hold key? What `d.get("w", default)` tests (the frontend reads d["w"] where
    it does, the default elsewhere); code generated for a call whose dict's keys are known has the
    answer written in (frontend/dict_loops.py)."""
    if not isinstance(d, dict):
        raise ValueError(f"s2s: .get() is a dict method; this call got {type(d).__name__!r}")
    return key in d


def dict_of(keys, values):
    """A dict display {k0: v0, ...} of generated code: a dict here; under Numba (overload) a
    DictTuple, the form dicts take in compiled code (pytree.to_numba), which it can return."""
    return dict(zip(keys, values))


# Under s2s.jit a dict is a tuple of its values in sorted-key order (pytree.to_numba), which
# Numba reads at constant keys only: dict_keys's compiled form refuses (and `s2s check` says so).
DICT_LOOP_REASON = ("under s2s.jit a loop over a dict is not supported (Numba cannot index a dict of arrays at a "
                    "key known only at run time)")
DICT_LOOP_WAY_OUT = ("loop over it in the function s2s.jit is given, whose code s2s.jit of it, its grad, jvp, "
                     "hessian and vmap write for the call's keys (not yet jacfwd and jacrev); index it with "
                     "constant keys (d['w']), or use backend='python'")


def named_class(module: str, qualname: str) -> type:
    """The namedtuple class module.qualname (generated code names a class by where it is defined:
    its module is not one the code imports)."""
    import importlib

    found = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    return found


def named_tuple(module, qualname, *values):
    """A namedtuple of the class module.qualname holding values (`State(count, mu)` in a function
    s2s.jit compiles); under Numba (overload) the same, the class found when it compiles."""
    return named_class(module, qualname)(*values)


def with_items(d, values):
    """A container of d's kind with these values: a dict with d's keys (the values in sorted-key
    order, as pytree.flatten orders them; the dict in d's order, which a loop over it follows),
    or a namedtuple of d's class. One example of a dict or namedtuple argument whose leaves are
    mapped (the batched driver of vmap)."""
    if isinstance(d, dict):
        by_key = dict(zip(sorted(d), values))
        return {k: by_key[k] for k in d}
    return type(d)(*values)


def add_attr(c, name, value):
    """Add value to field `name` of the namedtuple c."""
    return c._replace(**{name: tree_add(getattr(c, name), value)})


def index_add(a, index, value):
    """a[index] += value in place, accumulating repeated entries of an index array."""
    if any(isinstance(i, (np.ndarray, list)) for i in (index if isinstance(index, tuple) else (index,))):
        np.add.at(a, index, value)
    else:
        a[index] += value


# (NumPy keeps one of the values written at a repeated entry, without saying which: x[idx] += v adds
# v at such an entry once, not once per repeat)
REPEATED_WRITE = ("a write x[idx] = v whose index array repeats entries has no derivative s2s can take (NumPy "
                  "keeps one of the values written there, and does not say which); remove the repeated entries "
                  "from idx, or, to add every entry's v (x[idx] += v adds each repeated one once), write "
                  "np.add.at(x, idx, v)")


def take(a, index, *, where=None):
    """a[index] as a copy, for the adjoint of a write x[index] = v.

    A write with repeated entries in an index array keeps only one of them, so its
    derivative is refused rather than summed. where: the user's statement (file:line), which
    the compiled form's refusal names (compiled code keeps no traceback).
    """
    items = index if isinstance(index, tuple) else (index,)
    for i in items:
        if isinstance(i, (np.ndarray, list)) and np.issubdtype(np.asarray(i).dtype, np.integer):
            flat = np.ravel(i)
            if len(np.unique(flat)) != len(flat):
                raise ValueError("s2s: " + REPEATED_WRITE)
    out = np.array(a[index], copy=True)
    return out if out.ndim else out[()]


def masked(a, mask):
    """a[mask]: the entries (or rows) a boolean mask picks, in order. A helper because
    numba.njit indexes with 1-D masks only; other indices are a[mask] itself."""
    return a[mask]


def masked_bar(g, a, mask):
    """Adjoint of a[mask] (masked) in a: zeros of a's shape, g where the mask picks."""
    out = zeros_like(a)
    index_add(out, mask, g)
    return out


def weighted(t, w):
    """t * w, but 0 where the weight w is 0 even where t is NaN or inf: the tangent of the
    argument that np.fmax or np.fmin does not take (a NaN there has a NaN tangent, which
    0 * t would carry into the result; JAX selects the taken tangent, as this does)."""
    product = t * w
    if np.ndim(product) == 0:
        return product if w != 0 else np.zeros_like(product)[()]
    return np.where(np.asarray(w) == 0, np.zeros_like(product), product)


def clear(a, index):
    """a[index] = 0 in place: the overwritten elements no longer reach the result."""
    a[index] = 0.0


def shape(x):
    return np.shape(x)


def range_len(start, stop, step):
    """len(range(start, stop, step)): the trip count of a loop, for its reverse."""
    return len(range(start, stop, step))


def shares_memory(item, a):
    """Whether item (read from the array a by a subscript) is a view of a's memory, which a
    later write into a changes (x[i], x[j] = x[j], x[i] of rows), rather than a number or a copy."""
    return isinstance(item, np.ndarray) and isinstance(a, np.ndarray) and np.may_share_memory(item, a)


_NO_MESSAGE = object()


def assertion_failed(message=_NO_MESSAGE):
    """`assert test, message` where test is false: Python's AssertionError, with the message
    where the statement gives one (generated code calls it under `if not test:`, so that the
    message is evaluated only then, as Python evaluates it)."""
    raise AssertionError() if message is _NO_MESSAGE else AssertionError(message)


def warn(message, category: str):
    """`warnings.warn(message, category)` of the user's code (category: the builtin warning
    class's name). Compiled code does not warn (Numba has no warnings module): its overload
    does nothing."""
    import builtins
    import warnings

    warnings.warn(message, getattr(builtins, category), stacklevel=2)


def try_outcome(probe, *args):
    """Which statements of a try the values run (ir.TryProbe): probe is the function generated
    code writes for it, which runs the try's body on args as Python runs it and returns where
    it left. Compiled code calls this in object mode (runtime.objmode): NumPy's floating-point
    errors and exceptions are Python's."""
    return probe(*args)


def runs_as_python(function):
    """Marks a function of a generated module that runs as Python under every backend (a try
    probe: backends/loading.py leaves it to the interpreter, called in object mode)."""
    function.__s2s_python__ = True
    return function


def raise_exception(kind: str, *args):
    """`raise ValueError(*args)` of the user's code (kind: the builtin exception's name), which
    generated code writes as a raise statement of its own (codegen/emit.py)."""
    import builtins

    raise getattr(builtins, kind)(*args)


def require_number(x, message):
    """Refuse `x op= v` where x is an array: the conservative form of require_unshared, for
    another name that may not be bound where the update runs (see analysis/points_to.py). A 0-d
    array is an array here: NumPy updates it in place; so is a list, which `t += [v]` extends."""
    if isinstance(x, (np.ndarray, list)):
        raise S2SError(message)


def _is_number(v, batched):
    """A number, or (batched) a batch of numbers: a value no in-place update can reach. A 0-d
    array is not one: `s += v` updates it in place (`s = np.zeros(()); t = s; s += v` changes
    t). Batched, a 1-d value may be a batch of numbers or of 0-d arrays; it counts as numbers."""
    if isinstance(v, np.ndarray):
        return bool(batched) and v.ndim <= 1
    return v is None or isinstance(v, (int, float, complex, bool, str, np.generic))


def require_unshared(x, other, message, x_batched=False, other_batched=False):
    """Refuse `x op= v` where NumPy would also change `other` (see analysis/points_to.py).

    Generated code runs `x = x op v`, a new value for x only. That is what NumPy does where
    x is a number; where x is an array NumPy updates it in place, and the rebinding is right
    only if no other live name refers to memory the update changes. Analysis names the
    others that may (`y = x[1]` is a row of a 2-d x, a number from a 1-d x); this checks
    their memory, and of what a container (tuple, list, dict) holds. x_batched and
    other_batched: the value carries a trailing batch axis (vectorised code), so its
    examples are numbers when it is 1-d. A list is updated in place too (`t += [v]` extends
    it, `t *= 2` repeats it): refused where other is it or a container that holds it.
    """
    if isinstance(x, list):
        if _holds(other, x):
            raise S2SError(message)
        return
    if _is_number(x, x_batched) or not isinstance(x, np.ndarray) or _is_number(other, other_batched):
        return
    if isinstance(other, (tuple, list, dict)):  # a container shares what it holds
        for item in (other.values() if isinstance(other, dict) else other):
            require_unshared(x, item, message, x_batched, other_batched)
        return
    if not isinstance(other, np.ndarray) or np.may_share_memory(x, other):
        raise S2SError(message)


def _holds(container, x) -> bool:
    """container is x, or holds it (at any depth of tuples, lists and dicts)."""
    if container is x:
        return True
    if isinstance(container, dict):
        container = list(container.values())
    return isinstance(container, (tuple, list)) and any(_holds(item, x) for item in container)


# ---- broadcasting -----------------------------------------------------------------


def unbroadcast(g, x):
    """Sum g over the axes along which x (a value or a shape) was broadcast."""
    if isinstance(x, (tuple, list)) and not (isinstance(x, tuple) and all(isinstance(d, (int, np.integer)) for d in x)):
        return _sequence_operand(g, x)
    target = x if isinstance(x, tuple) else np.shape(x)
    g_shape = np.shape(g)
    if g_shape == target:
        return g
    if len(target) == 0:
        total = np.sum(g)
        return total.astype(g.dtype)[()] if isinstance(g, np.ndarray) else total
    if len(g_shape) == 0 or len(g_shape) < len(target):
        return np.broadcast_to(g, target).copy()
    lead = len(g_shape) - len(target)
    axes = tuple(range(lead)) + tuple(
        lead + k for k, n in enumerate(target) if n == 1 and g_shape[lead + k] != 1
    )
    return np.sum(g, axis=axes).reshape(target)


def _sequence_operand(g, x):
    """The adjoint of a list or tuple that took part in `+` or `*`: NumPy arithmetic where the
    result has its shape (`[a, b] + v` adds v to the array [a, b]); otherwise the operation was
    Python's concatenation or repetition (`t + (v,)`, `[v] * n`, where the transform could not
    see that t is a tuple), whose adjoint is not the arithmetic one: refused at the statement."""
    if np.shape(g) == np.shape(x):
        return g
    raise ValueError("s2s: `+` or `*` here concatenates or repeats a list or tuple (or broadcasts one against a "
                     "larger array): reverse mode (grad, jacrev, vjp) does not differentiate that; write the whole "
                     "sequence as one display, make the list an array first (np.array(v)), or use forward mode "
                     "(s2s.jacfwd, s2s.jvp)")


def _expand(g, x_shape, axis, keepdims):
    """Broadcast the adjoint of a reduction over `axis` back to x's shape."""
    if axis is None:
        return np.broadcast_to(g, x_shape)
    if not keepdims:
        axes = axis if isinstance(axis, tuple) else (axis,)
        axes = tuple(sorted(a % len(x_shape) for a in axes))
        for a in axes:
            g = np.expand_dims(g, a)
    return np.broadcast_to(g, x_shape)


def _count(x_shape, axis):
    if axis is None:
        return int(np.prod(x_shape))
    axes = axis if isinstance(axis, tuple) else (axis,)
    return int(np.prod([x_shape[a] for a in axes]))


def stop_gradient(x):
    """x itself, as a value of zero derivative (s2s.lax.stop_gradient, JAX's lax.stop_gradient):
    the transforms propagate no tangent or adjoint through it (templates/runtime_rules.py)."""
    return x


DERIVATIVE_SHAPE = ("s2s: an s2s.custom_vjp or custom_jvp rule returned a derivative whose shape is not its "
                    "argument's (a cotangent from bwd) or its value's (a tangent from the jvp rule); JAX refuses "
                    "it too, and NumPy would broadcast it into a wrong derivative: give each derivative that "
                    "shape, np.sum(...) over the axes it should not have")


def derivative_like(d, x):
    """d, a derivative that a custom rule returned for x (a cotangent of an argument, or the
    tangent of the value), once it is checked to have x's shape (transforms/custom_rules.py);
    None, which JAX's bwd may return for a zero cotangent, is zeros of x's shape."""
    if d is None:
        return zeros_like(x)
    if tree_shape(d) != tree_shape(x):
        raise ValueError(DERIVATIVE_SHAPE + f" (shape {tree_shape(d)} for shape {tree_shape(x)})")
    return d


def require_fits(stack, value, message):
    """Refuse a step of s2s.lax.scan whose output a stack of the first step's dtype would cut:
    an int (or float32) initial carry that the body turns into a float (or float64) makes the
    first output an int and the later ones floats. JAX promotes such a Python-number carry
    before the loop; the stack s2s allocates from the first step cannot (its dtype is fixed).
    Before the stack is allocated (stack None), the first step's output: a tuple, list or dict
    is refused, as one array it would be stacked as rows, not as a tuple of stacks."""
    if isinstance(value, (tuple, list, dict)):
        raise S2SError(message)
    if stack is not None and not fits_dtype(value, stack.dtype):
        raise S2SError(message)


def _refusal_at_the_statement(message):
    """The refusal of a check in a helper that s2s wrote (doors/nested_derivatives.py): a
    ValueError "s2s: ...", which the python backend's call (backends/failures.located) turns
    into an S2SError at the user's statement that called the helper."""
    return ValueError(f"s2s: {message}")


def require_array(x, message):
    """Refuse a number where the code needs an array: s2s.grad(f)(x) inside a transformed
    function takes the derivative one element of x at a time (doors/nested_derivatives.py)."""
    if not isinstance(x, np.ndarray):
        raise _refusal_at_the_statement(message)


def require_updatable(x, message):
    """Refuse a number where a nested function's `p op= v` updates the caller's variable that
    was passed as p: NumPy updates an array (a 0-d one too) in place, which the caller sees,
    and Python rebinds p alone for a number (frontend/lax_forms.py, inline)."""
    if not isinstance(x, np.ndarray):
        raise S2SError(message)


def require_scalar(x, message):
    """Refuse an array of one or more dimensions where the code needs a number (or a 0-d array):
    the output of f in s2s.grad(f)(x) or s2s.hessian(f)(x) inside a transformed function."""
    if isinstance(x, np.ndarray) and x.ndim > 0:
        raise _refusal_at_the_statement(message)


def require_float_array(x, message):
    """Refuse `x[i] = v` of a v that carries a derivative where x is an array of integers (or
    bools): NumPy cuts v to x's dtype, a piecewise constant of it, whose derivative is 0 where
    the transform would pass v's on (analysis/activity.py puts this check where x may come
    from an argument, whose dtype the transform does not know)."""
    if isinstance(x, np.ndarray) and x.dtype.kind in "biu":
        raise S2SError(message)


def fits_dtype(value, dtype, casting: str = "safe") -> bool:
    """Whether an array of dtype holds value without cutting it: a NumPy value of a dtype that
    casts to it (safely; with casting="same_kind", to a narrower float too), or a Python number
    of a kind it holds (Python numbers take the array's precision, as NumPy's weak scalars do)."""
    dtype = np.dtype(dtype)
    if isinstance(value, (bool, np.bool_)):
        return True
    if isinstance(value, int):
        return dtype.kind in "iufc"
    if isinstance(value, float):
        return dtype.kind in "fc"
    if isinstance(value, complex):
        return dtype.kind == "c"
    return bool(np.can_cast(np.result_type(value), dtype, casting))


def require_distinct(items, message):
    """Refuse integer index arrays that name one element twice: x.at[idx].add(v) (and .multiply,
    .min, ...) combines every repeat in JAX, where the `y[idx] += v` s2s writes applies one."""
    arrays = [np.asarray(i) for i in items if isinstance(i, (np.ndarray, list)) and np.asarray(i).dtype.kind in "iu"]
    if arrays:
        rows = np.stack([a.ravel() for a in np.broadcast_arrays(*arrays)])
        if np.unique(rows, axis=1).shape[1] != rows.shape[1]:
            raise S2SError(message)


# ---- s2s.grad(f)(x) inside a transformed function (doors/nested_derivatives.py) ----------
# The helper s2s writes takes the derivative one number of x at a time, in forward mode; these
# give it x's numbers whatever x is: a number, an array, or a tuple, list, namedtuple or dict of
# them, nested (JAX's pytrees; a dict's values in its own order, which each of these follows).
# The gradient of a function of a number is a number, as JAX's.


def _children(x) -> list | None:
    """The items of a container of x's pytree (a dict's values), None for a leaf."""
    if isinstance(x, dict):
        return list(x.values())
    if isinstance(x, (tuple, list)):
        return list(x)
    return None


def _rebuilt(x, parts: list):
    """A container of x's kind (the same keys, the same namedtuple class) holding parts."""
    if isinstance(x, dict):
        return dict(zip(x.keys(), parts))
    if isinstance(x, tuple) and hasattr(type(x), "_fields"):
        return type(x)(*parts)
    return tuple(parts) if isinstance(x, tuple) else list(parts)


def flat_size(x) -> int:
    """How many numbers x holds: 1 for a number, an array's size, the sum over a container's items."""
    if isinstance(x, np.ndarray):
        return x.size
    children = _children(x)
    if children is not None:
        return sum(flat_size(v) for v in children)
    return 1


def unit_tangent(x, i):
    """A tangent of x's structure, 1.0 at x's number i (in flat_size's order) and 0.0 elsewhere
    (zeros where i is outside x)."""
    if isinstance(x, np.ndarray):
        unit = np.zeros(x.size)
        if 0 <= i < x.size:
            unit[i] = 1.0
        return unit.reshape(x.shape)
    children = _children(x)
    if children is not None:
        parts, start = [], 0
        for v in children:
            parts.append(unit_tangent(v, i - start))
            start += flat_size(v)
        return _rebuilt(x, parts)
    return 1.0 if i == 0 else 0.0


def gradient_like(g, x):
    """The flat gradient g (one number per number of x, in flat_size's order) in x's structure:
    a number for a number, an array of x's shape for an array, a container like x's for one."""
    if isinstance(x, np.ndarray):
        return g.reshape(x.shape)
    children = _children(x)
    if children is not None:
        parts, start = [], 0
        for v in children:
            n = flat_size(v)
            parts.append(gradient_like(g[start:start + n], v))
            start += n
        return _rebuilt(x, parts)
    return g[0]


def gradient_flat(bar, g):
    """The adjoint of gradient_like(g, x): bar's numbers (an adjoint of x's structure) in a
    1-d array of g's length and dtype."""
    children = _children(bar)
    if children is not None:
        parts = [gradient_flat(v, np.zeros(flat_size(v), g.dtype)) for v in children]
        return np.concatenate(parts) if parts else np.zeros(0, g.dtype)
    return np.array(bar, dtype=g.dtype).reshape(g.shape)
