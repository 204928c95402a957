"""What s2s.jit (the cpu backend, Numba) does not compile: the one written list. docs/limits.md is
rendered from it (`python -m s2s.limits > docs/limits.md`; tests/test_limits.py keeps the two equal),
tests/test_jit_parity.py names the limit under which each program of the suite's corpora is refused,
and `s2s check` reports the limits it can see without calling the function (Limit.helpers).

Each limit is refused with an S2SError at the user's file:line:column whose message matches
Limit.message and names a way out; backend='python' runs every one of them as NumPy.

kind: "numba" where Numba itself does not compile the construct (a limit that stays);
"known gap" where s2s could generate code Numba compiles but does not yet (work in progress).
"""

from __future__ import annotations

from dataclasses import dataclass

NUMBA = "numba"
KNOWN_GAP = "known gap"


@dataclass(frozen=True)
class Limit:
    what: str  # the construct, as a user writes it
    kind: str  # NUMBA or KNOWN_GAP
    message: str  # a regular expression the S2SError's message matches
    way_out: str  # what to write instead
    example: str = ""  # one line of a program that meets it
    # runtime helpers of generated code whose Numba form always refuses: `s2s check` finds the
    # limit without calling the function (the others depend on the arguments' types and shapes)
    helpers: tuple[str, ...] = ()


LIMITS: dict[str, Limit] = {
    # ---- Numba's own limits ----
    "numpy-function-unknown-to-numba": Limit(
        "a NumPy, SciPy or math function that Numba does not implement (np.i0, np.kron of some kinds, ...)",
        NUMBA, r"Numba does not compile|Numba cannot compile",
        "backend='python', or write it with functions Numba knows", "t = np.i0(x)"),
    "random-state-draws": Limit(
        "a draw from a NumPy RandomState or Generator inside the function",
        NUMBA, r"RandomState or Generator cannot be compiled",
        "draw the samples outside and pass them in, or use s2s.random with a key", "z = rng.normal(size=n)",
        helpers=("draw",)),
    "products-beyond-two-dimensions": Limit(
        "np.dot and np.inner of arrays of more than two dimensions",
        NUMBA, r"Numba cannot compile|np\.dot|np\.inner",
        "write the contraction with @ (a stack of matrices), np.einsum or np.tensordot", "np.dot(A3, B3)"),
    "dict-loop": Limit(
        "a loop over a dict: `for k, v in d.items():`, .keys(), .values()",
        NUMBA, r"a loop over a dict is not supported",
        "index the dict with constant keys (d['w']), or pass a tuple or list of its values",
        "for k, v in params.items():", helpers=("dict_keys",)),
    # ---- known gaps: s2s does not yet generate code Numba compiles ----
    "dot-float-int": Limit("np.dot of a float array and an int array", KNOWN_GAP, r"Numba cannot compile",
                           "cast the int array first: np.dot(A, k.astype(np.float64))", "np.dot(A, counts)"),
    "transpose-reshape": Limit("A.T.reshape(-1) (a reshape of a non-contiguous view)", KNOWN_GAP,
                               r"Numba cannot compile", "copy first: np.ascontiguousarray(A.T).reshape(-1)",
                               "v = A.T.reshape(-1)"),
    "number-becomes-array": Limit(
        "a variable that starts as a number and becomes an array (s = 0.0, then s = s + x)", KNOWN_GAP,
        r"two types|Cannot unify", "start it with its final type: s = np.zeros_like(x)", "s = 0.0; s = s + x"),
    "var-of-list": Limit("np.var (and np.std) of a list", KNOWN_GAP, r"Numba cannot compile",
                         "make the list an array first: np.var(np.array(values))", "np.var([a, b, c])"),
    "dot-with-number": Limit("np.dot of an array and a number", KNOWN_GAP, r"Numba cannot compile",
                             "write the product with *: A * 2.0", "np.dot(A, 2.0)"),
    "stacked-linalg": Limit("np.linalg.solve, eigh and svd of stacks of matrices (3-D and more)", KNOWN_GAP,
                            r"Numba cannot compile|stack", "loop over the matrices of the stack", "np.linalg.solve(As, bs)"),
    "squeeze-without-axis": Limit("np.squeeze without axis=", KNOWN_GAP, r"Numba cannot compile|squeeze",
                                  "name the axes: np.squeeze(x, axis=0)", "y = np.squeeze(x)"),
    "gather-list-and-slice": Limit(
        "a read with an index array and a slice in one subscript (A[:, idx], A[idx, 1:]) under s2s.jit(s2s.grad)",
        KNOWN_GAP, r"Numba cannot compile", "take the slice and the gather in two steps: A[idx][:, 1:]",
        "y = A[idx, 1:]"),
    "fancy-augmented-write": Limit("an augmented write through an index array: z[idx] += v", KNOWN_GAP,
                                   r"Numba cannot compile", "np.add.at(z, idx, v)", "z[idx] += v"),
    "layers-of-different-shapes": Limit(
        "a list of arrays of different shapes (layers) under s2s.jit(s2s.grad)", KNOWN_GAP, r"Numba cannot compile",
        "a tuple of the arrays: (W1, W2) rather than [W1, W2]", "for w in ws:"),
    "none-arguments": Limit("None passed as an argument under s2s.jit(s2s.grad)", KNOWN_GAP, r"None|Numba cannot compile",
                            "leave the argument out (a default) or pass a value", "f(x, None)"),
    "jit-vmap-hessian": Limit("s2s.jit(s2s.vmap(s2s.hessian(f)))", KNOWN_GAP, r"Numba cannot compile",
                              "s2s.vmap(s2s.jit(s2s.hessian(f))), or backend='python'", ""),
    "varargs": Limit("*args in the function's parameters", KNOWN_GAP, r"\*args|variable",
                     "name the parameters, or pass a tuple", "def f(*xs):"),
    "keyword-only-parameters": Limit("keyword-only parameters (def f(x, *, scale))", KNOWN_GAP, r"keyword",
                                     "make them ordinary parameters", "def f(x, *, scale=1.0):"),
}


def refused_helper(name: str) -> tuple[str, Limit] | None:
    """The limit under which Numba refuses every call of the runtime helper `name`, if any."""
    for key, limit in LIMITS.items():
        if name in limit.helpers:
            return key, limit
    return None


def markdown() -> str:
    """docs/limits.md: the list as a page."""
    out = ["# What s2s.jit does not compile", "",
           "s2s.jit compiles the generated code with Numba (the cpu backend). What it cannot compile it refuses",
           "with an `S2SError` at your file:line:column that names a way out; `backend='python'` runs all of it",
           "as NumPy. `s2s check module.py` reports, without running anything, the limits marked *found by",
           "s2s check*; the others depend on the arguments' types and shapes and are found at the call.",
           "This page is generated from `s2s/limits.py` (`python -m s2s.limits > docs/limits.md`).", ""]
    for kind, title in ((NUMBA, "Numba's limits"), (KNOWN_GAP, "Known gaps (s2s does not compile these yet)")):
        out += [f"## {title}", "", "| limit | example | way out |", "| --- | --- | --- |"]
        for key, limit in LIMITS.items():
            if limit.kind != kind:
                continue
            found = " (found by s2s check)" if limit.helpers else ""
            example = f"`{limit.example}`" if limit.example else ""
            out.append(f"| {limit.what}{found} <br>`{key}` | {example} | {limit.way_out} |")
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    print(markdown(), end="")
