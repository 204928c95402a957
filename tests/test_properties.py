"""Random programs, checked in forward and reverse mode against finite differences.

Each program is `program(x, a, d, c=0.5)`, differentiated with respect to x and a: d is data
with exact zeros (fed to sqrt, log and pow, where a derivative that multiplies a zero tangent
by an infinity would be NaN) and c a default argument. Statements include nested loops with
stepped inner ranges, loops over lists of arrays, self-overlapping slice updates and helpers
called with constants; a third of the programs also run the modules s2s.jit compiles, and a
fifth the gradient in float32.

Each run checks S2S_PROPERTY_EXAMPLES programs (default 60), derandomized so that CI is
repeatable. Run many more with, for example:

    S2S_PROPERTY_EXAMPLES=5000 python -m pytest tests/test_properties.py

and S2S_PROPERTY_SEED=N draws another sequence of programs (to run several at once, one seed
each, over more cores).
"""

import hashlib
import importlib.util
import os
import sys
import warnings

import numpy as np
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

import s2s
from specialised import specialised_grad, specialised_jvp

EXAMPLES = int(os.environ.get("S2S_PROPERTY_EXAMPLES", "60"))
SEED = os.environ.get("S2S_PROPERTY_SEED")  # None: the derandomized sequence CI runs
SIZE = 4

# Smooth operations, so that finite differences are a fair reference.
# (operands in parentheses: {e} may be `a + b`, and sqrt and log must see a square plus one)
UNARY = ["np.sin({e})", "np.cos({e})", "np.tanh({e})", "np.sqrt(({e}) * ({e}) + 1.0)",
         "np.log(({e}) * ({e}) + 1.0)", "np.exp(np.sin({e}))", "({e}) ** 2", "-({e})", "np.arctan({e})",
         "abs({e}) + ({e})"]
BINARY = ["{l} + {r}", "{l} - ({r})", "({l}) * ({r})", "({l}) / (({r}) * ({r}) + 1.0)",
          "np.arctan2({l}, ({r}) * ({r}) + 1.0)"]

# Vectors made from the data d (zeros included): sqrt, log and pow where a tangent or adjoint
# that is not needed must not be computed (0 * inf is NaN).
DATA = ["np.sqrt(d)", "d ** (a * a + 1.0)", "np.log(d + 1.0)", "d * c", "np.sqrt(d) * x"]
HELPERS = """import numpy as np


def power(u, p):
    return u ** p


def root_scaled(u, s):
    return np.sqrt(u) * s


"""


@st.composite
def programs(draw):
    scalars = ["a"]
    vectors = ["x"]
    lines = []
    counter = [0]

    def new(kind):
        counter[0] += 1
        name = f"v{counter[0]}"
        if kind in ("s", "v"):  # (a list is not an operand of expressions)
            (scalars if kind == "s" else vectors).append(name)
        return name

    def pick(kind):
        pool = scalars if kind == "s" else vectors
        return draw(st.sampled_from(pool[-4:]))

    def expression(kind, depth=0):
        choice = draw(st.integers(0, 3 if depth < 2 else 0))
        if choice == 0:
            if kind == "v" and draw(st.integers(0, 4)) == 0:  # data with zeros, not differentiated
                return draw(st.sampled_from(DATA))
            if kind == "s" and draw(st.booleans()):
                v = pick("v")
                return draw(st.sampled_from([f"{v}[{draw(st.integers(-SIZE, SIZE - 1))}]",
                                             f"np.sum({v})", f"np.mean({v} * {v})",
                                             f"np.sum({v}[1:-1] * {v}[2:] - {v}[:-2] * a)"]))
            return pick(kind)
        if choice == 1:
            inner = expression(kind, depth + 1)
            return draw(st.sampled_from(UNARY)).format(e=inner)
        left, right = expression(kind, depth + 1), expression(draw(st.sampled_from([kind, "s"])), depth + 1)
        return draw(st.sampled_from(BINARY)).format(l=left, r=right)

    def statement(indent, depth):
        kind = draw(st.sampled_from(["assign", "assign", "update", "write", "loop", "branch", "nested",
                                     "overlap", "list", "helper"]))
        pad = "    " * indent
        if kind == "assign":
            k = draw(st.sampled_from(["s", "v"]))
            expr = expression(k)
            if expr.isidentifier():
                # `y = x` makes y a second name for x; a later `y += ...` is then (rightly) refused.
                # (`y = x[1]` then `x += ...` is not: x is 1-d here, so y is a number, not a view.)
                expr = f"{expr} * 1.0"
            lines.append(f"{pad}{new(k)} = {expr}")
        elif kind == "update":
            k = draw(st.sampled_from(["s", "v"]))
            target = pick(k)
            expr = expression(k)
            if expr.isidentifier():
                expr = f"{expr} * 1.0"
            if target in ("a", "x"):
                lines.append(f"{pad}{new(k)} = {expr}")
            else:
                op = draw(st.sampled_from(["+=", "-=", "*="]))
                lines.append(f"{pad}{target} {op} 0.5 * {expr}")
        elif kind == "write":
            value, source, scale = expression("s"), pick("v"), expression("s")
            buffer = new("v")
            lines.append(f"{pad}{buffer} = np.zeros({SIZE})")
            lines.append(f"{pad}{buffer}[{draw(st.integers(0, SIZE - 1))}] = {value}")
            shifted = draw(st.sampled_from(["[1:3] += {v}[0:2]", "[1:] += {v}[:-1]", "[1:-1] -= {v}[2:]"]))
            lines.append(f"{pad}{buffer}{shifted.format(v=source)} * {scale}")
        elif kind == "loop" and depth < 2:
            start, vector, expr = pick("s"), pick("v"), expression("s", 1)
            acc = new("s")
            lines.append(f"{pad}{acc} = {start} * 1.0")
            lines.append(f"{pad}for i in range({draw(st.integers(1, 4))}):")
            lines.append(f"{pad}    {acc} = np.sin({acc}) * 0.9 + {vector}[i] * {expr}")
            if draw(st.booleans()):
                statement(indent + 1, depth + 1)
        elif kind == "nested" and depth < 2:  # a triangular inner loop with a step other than 1
            start, vector, expr = pick("s"), pick("v"), expression("s", 1)
            acc = new("s")
            inner = draw(st.sampled_from([f"range(i, {SIZE}, 2)", f"range({SIZE} - 1, i, -2)", "range(0, i + 1, 3)"]))
            lines.append(f"{pad}{acc} = {start} * 1.0")
            lines.append(f"{pad}for i in range({draw(st.integers(1, SIZE))}):")
            lines.append(f"{pad}    for j in {inner}:")
            lines.append(f"{pad}        {acc} = {acc} * 0.8 + {vector}[j] * {expr}")
        elif kind == "overlap":  # NumPy reads the right side whole before it writes
            source, scale = pick("v"), expression("s")
            buffer = new("v")
            lines.append(f"{pad}{buffer} = {source} * 1.0")
            shifted = draw(st.sampled_from(["[1:] += {b}[:-1]", "[:-1] -= {b}[1:]", "[2:] += {b}[:-2]"]))
            lines.append(f"{pad}{buffer}{shifted.format(b=buffer)} * {scale}")
        elif kind == "list" and depth < 2:  # a loop over a list of arrays, as over layers
            first, second, weight = pick("v"), expression("v", 1), pick("v")
            parts, acc = new("list"), new("s")
            lines.append(f"{pad}{parts} = [{first} * 1.0, {second}]")
            lines.append(f"{pad}{acc} = 0.0")
            if draw(st.booleans()):
                lines.append(f"{pad}for p in {parts}:")
                lines.append(f"{pad}    {acc} = {acc} + np.sum(np.sin(p) * {weight})")
            else:
                lines.append(f"{pad}for k in range(len({parts})):")
                lines.append(f"{pad}    {acc} = {acc} * 0.5 + np.sum({parts}[k] * {parts}[k])")
        elif kind == "helper":  # a user function called with a constant argument
            call = draw(st.sampled_from(["power({v}, 2.0)", "power({v}, 3.0) * a", "root_scaled(d, {s})",
                                         "root_scaled(d, 2.0) * {v}", "power(d, c) * {v}"]))
            value = call.format(v=pick("v"), s=expression("s", 1))
            lines.append(f"{pad}{new('v')} = {value}")
        elif kind == "branch" and depth < 2:
            test, first, second = pick("s"), expression("s"), expression("s")
            out = new("s")
            lines.append(f"{pad}if {test} > 0.1:")
            lines.append(f"{pad}    {out} = {first}")
            lines.append(f"{pad}else:")
            lines.append(f"{pad}    {out} = {second} * 2.0")
        else:
            expr = expression("s")
            lines.append(f"{pad}{new('s')} = {expr}")

    for _ in range(draw(st.integers(1, 6))):
        statement(1, 0)
    ret = " + ".join([f"np.sum({v} * {v})" for v in vectors[-2:]] + scalars[-2:])
    return HELPERS + "def program(x, a, d, c=0.5):\n" + "\n".join(lines) + f"\n    return {ret}\n"


def load(source: str, directory: str):
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    path = os.path.join(directory, f"generated_program_{digest}.py")
    with open(path, "w") as handle:
        handle.write(source)
    spec = importlib.util.spec_from_file_location(f"generated_program_{digest}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.program


@settings(max_examples=EXAMPLES, derandomize=SEED is None, deadline=None, phases=[Phase.generate],
          database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@hypothesis_seed(int(SEED or 0))
@given(source=programs(), seed=st.integers(0, 2**16))
def test_random_programs_match_finite_differences(tmp_path_factory, source, seed):
    program = load(source, str(tmp_path_factory.getbasetemp()))
    rng = np.random.default_rng(seed)
    x, a = rng.uniform(-1.0, 1.0, SIZE), float(rng.uniform(-1.0, 1.0))
    d = rng.uniform(0.0, 2.0, SIZE) * (rng.uniform(size=SIZE) < 0.6)  # about 40% exact zeros
    with np.errstate(all="raise"):
        try:
            value = program(x, a, d)
        except FloatingPointError:
            return  # overflowed: not a fair finite-difference check
    if not np.isfinite(value) or abs(value) > 1e6:
        return
    try:
        # No RuntimeWarning (a log or division of a zero that is not needed) from the derivatives.
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            s2s.testing.check_grads(program, (x, a, d), argnums=(0, 1), modes=("fwd", "rev"), rtol=1e-4, atol=1e-5)
            expected = s2s.grad(program, argnums=(0, 1))(x, a, d)
        if seed % 3 == 0:  # (a third of the programs: generating two more modules costs ~0.4 s)
            # The modules s2s.jit would compile for (array, float, array), run as NumPy, agree.
            for got, want in zip(specialised_grad(program, (x, a, d), (0, 1)), expected):
                np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
            tangents = (rng.standard_normal(SIZE), float(rng.standard_normal()))
            value, tangent = specialised_jvp(program, (x, a, d), tangents, active=(0, 1))
            expected_value = program(x, a, d)
            expected_tangent = np.sum(expected[0] * tangents[0]) + expected[1] * tangents[1]
            np.testing.assert_allclose([value, tangent], [expected_value, expected_tangent], rtol=1e-10, atol=1e-10)
        if seed % 5 == 1:  # float32 in, float32 out, near the float64 gradient checked above
            single = s2s.grad(program, argnums=(0, 1))(x.astype(np.float32), np.float32(a), d.astype(np.float32))
            assert single[0].dtype == np.float32, single[0].dtype
            scale = max(1.0, float(np.max(np.abs(expected[0]))), abs(float(expected[1])))
            np.testing.assert_allclose(single[0], expected[0], rtol=1e-3, atol=1e-3 * scale)
            np.testing.assert_allclose(float(single[1]), expected[1], rtol=1e-3, atol=1e-3 * scale)
    except AssertionError as failure:
        raise AssertionError(f"{failure}\nprogram:\n{source}") from None
