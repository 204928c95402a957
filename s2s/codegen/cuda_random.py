"""s2s.random's draws in CUDA kernel text (codegen/cuda.py calls these).

A draw of one number becomes a call of runtime.kernels.<draw><bits>, on the numbers of the
call (the key's two words are hashed in the thread: counter-based, no state):

    random.normal(key)                         -> runtime.kernels.normal64(key)
    random.uniform(key, (), np.float32, a, b)  -> runtime.kernels.uniform32(key, np.float32(a), np.float32(b))
    random.exponential(key)                    -> runtime.kernels.exponential64(key)
    random.truncated_normal(key, a, b)         -> runtime.kernels.truncated_normal64(key, np.float64(a), ...)
    random.bernoulli(key, p)                   -> runtime.kernels.bernoulli(key, p)
    random.randint(key, (), a, b)              -> runtime.kernels.randint64(key, a, b)
    random.categorical(key, logits)            -> runtime.kernels.categorical(key, logits)  (a 1-d row)

A draw of a shape, `z = random.<draw>(key, shape, ...)` as a statement of its own, fills a
local array of the shape the probe saw (runtime.kernels.<draw><bits>_into), and
`p = random.permutation(key, x)` (x an int or a 1-d array) too, with a second local array of
int64 for the indices. Anything else is refused at the user's statement.
"""

from __future__ import annotations

import libcst as cst

from .cst_nodes import code, dotted

# each draw's parameters, in order (as s2s.random and JAX name them)
RANDOM_DRAWS = {"uniform": ("key", "shape", "dtype", "minval", "maxval"), "normal": ("key", "shape", "dtype"),
                "exponential": ("key", "shape", "dtype"), "truncated_normal": ("key", "lower", "upper", "shape", "dtype"),
                "bernoulli": ("key", "p", "shape"), "randint": ("key", "shape", "minval", "maxval", "dtype"),
                "categorical": ("key", "logits", "axis", "shape"), "permutation": ("key", "x")}
FLOATS = {"float": "64", "np.float64": "64", "numba.float64": "64", "np.float32": "32", "numba.float32": "32"}
INTEGERS = {"int": "64", "np.int64": "64", "numba.int64": "64", "np.int_": "64", "np.int32": "32", "numba.int32": "32"}
DRAWS = ", ".join(f"random.{d}" for d in RANDOM_DRAWS)



def _literal(node) -> bool:
    """Is node a shape written as numbers (3, or (3, 4))?"""
    if isinstance(node, cst.Integer):
        return True
    return isinstance(node, cst.Tuple) and all(isinstance(e.value, cst.Integer) for e in node.elements)


def _one_number(shape) -> bool:
    """Does the shape argument ask for one number (absent, None or ())?"""
    return shape is None or dotted(shape) == "None" or isinstance(shape, cst.Tuple) and not shape.elements


def arguments(refuse, call: cst.Call, draw: str) -> dict:
    """{parameter: expression} of a call of random.<draw>."""
    names, given = RANDOM_DRAWS[draw], {}
    for k, arg in enumerate(call.args):
        if arg.star:
            refuse(f"random.{draw} with *args has no kernel form")
        name = arg.keyword.value if arg.keyword else names[k] if k < len(names) else None
        if name not in names:
            refuse(f"random.{draw} with {code(arg)} has no kernel form")
        given[name] = arg.value
    return given


def _bits(refuse, given: dict, draw: str, kinds: dict, default: str) -> str:
    """"32" or "64", from the dtype argument of a draw of one number."""
    dtype = dotted(given["dtype"]) if "dtype" in given else default
    if dtype not in kinds:
        refuse(f"random.{draw} with dtype={code(given['dtype'])} has no kernel form "
               f"({' or '.join(k for k in kinds if k.startswith('np.'))})")
    return kinds[dtype]


def _cast(given: dict, name: str, default: str, bits: str) -> str:
    return f"np.float{bits}({code(given[name]) if name in given else default})"


def scalar_draw(refuse, call: cst.Call, draw: str) -> cst.BaseExpression:
    """The kernel's expression for a draw of one number; refuse(what) raises at the statement."""
    given = arguments(refuse, call, draw)
    if draw == "permutation" or not _one_number(given.get("shape")) or draw == "randint" and "shape" not in given:
        example = "random.permutation(key, n)" if draw == "permutation" else f"random.{draw}(key, (n,), ...)"
        refuse(f"random.{draw} of a shape makes an array, which a kernel holds only when it is a statement of its "
               f"own (z = {example}); or draw one number per call, with keys from random.fold_in(key, i)")
    key = code(given["key"])
    if draw == "bernoulli":
        return cst.parse_expression(f"runtime.kernels.bernoulli({key}, {code(given['p']) if 'p' in given else '0.5'})")
    if draw == "categorical":
        if "axis" in given and code(given["axis"]).replace(" ", "") not in ("-1", "0"):  # (of a 1-d row)
            refuse("random.categorical along another axis than that of a 1-d row of logits has no kernel form")
        return cst.parse_expression(f"runtime.kernels.categorical({key}, {code(given['logits'])})")
    if draw == "randint":
        bits = _bits(refuse, given, draw, INTEGERS, "int")
        return cst.parse_expression(f"runtime.kernels.randint{bits}({key}, {code(given['minval'])}, "
                                    f"{code(given['maxval'])})")
    bits = _bits(refuse, given, draw, FLOATS, "float")
    args = [key]
    if draw == "uniform":
        args += [_cast(given, "minval", "0.0", bits), _cast(given, "maxval", "1.0", bits)]
    if draw == "truncated_normal":
        args += [_cast(given, "lower", "", bits), _cast(given, "upper", "", bits)]
    return cst.parse_expression(f"runtime.kernels.{draw}{bits}({', '.join(args)})")


def local_draw(refuse, call: cst.Call, draw: str, target: str, dtype: str, shape: tuple, constant: str,
               check: str) -> tuple[list[str], bool]:
    """The statements that fill the local array target (of the probe's shape and dtype, whose
    shape is the module constant `constant`) with the draw, and whether its shape is computed
    (so that indexing it is clamped). check: the statement that records a wrong shape."""
    given = arguments(refuse, call, draw)
    key = code(given["key"])
    bits = dtype[-2:]
    shape_arg = given.get("shape")
    if draw == "categorical":
        refuse("random.categorical of a shape, or of logits of more than one dimension, has no kernel form "
               "(a kernel draws one category of a 1-d row of logits)")
    if draw == "permutation":
        if len(shape) != 1:
            refuse("random.permutation of an array of more than one dimension has no kernel form")
        x = code(given["x"])
        order = f"{target}__order"
        return ([f"if runtime.kernels.permutation_shape({x}) != {constant}:\n    {check}\n",
                 f"{order} = cuda.local.array({constant}, numba.int64)",
                 f"runtime.kernels.permutation_into({target}, {order}, {key}, {x})"],
                not isinstance(given["x"], cst.Integer))
    if _one_number(shape_arg):  # the shape of an array parameter: bernoulli(key, p) of an array p
        if draw != "bernoulli":
            refuse(f"random.{draw} of array parameters has no kernel form (a kernel's draw has number parameters "
                   "and a shape)")
        shape_of = f"{code(given['p'])}.shape"
    else:
        shape_of = f"runtime.kernels.shape_of({code(shape_arg)})"
    if draw == "uniform":
        args = [_cast(given, "minval", "0.0", bits), _cast(given, "maxval", "1.0", bits)]
    elif draw == "truncated_normal":
        args = [_cast(given, "lower", "", bits), _cast(given, "upper", "", bits)]
    elif draw == "randint":
        args = [code(given["minval"]), code(given["maxval"])]
    elif draw == "bernoulli":
        args, bits = [code(given["p"]) if "p" in given else "0.5"], ""
    else:
        args = []
    fill = f"runtime.kernels.{draw}{bits}_into({', '.join([target, key, *args])})"
    return [f"if {shape_of} != {constant}:\n    {check}\n", fill], not (shape_arg is not None and _literal(shape_arg))
