"""What s2s.jit (the cpu backend, Numba) does not compile: the one written list. docs/pages/limits.md is
rendered from it (`python -m s2s.limits > docs/pages/limits.md`; tests/test_limits.py keeps the two equal),
tests/test_jit_parity.py names the limit under which each program of the suite's corpora is refused,
and `s2s check` reports the limits it can see without calling the function (Limit.found_by_check).

Each limit is refused with an S2SError at the user's file:line:column whose message matches
Limit.message and names a way out; backend='python' runs
every one of them as NumPy.

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
    checked: bool = False  # `s2s check` finds it otherwise (a NumPy function Numba's typing does not know)
    line: bool = True  # the refusal names the user's file:line:column (not a composition of transforms)

    @property
    def found_by_check(self) -> bool:
        return self.checked or bool(self.helpers)


LIMITS: dict[str, Limit] = {
    # ---- Numba's own limits ----
    "numpy-function-unknown-to-numba": Limit(
        "a NumPy function that Numba does not implement (np.fix, np.modf, np.frexp, ...)", NUMBA,
        r"unsupported NumPy function|Numba does not compile",
        "backend='python', or write it with functions Numba knows (np.trunc for np.fix)", "t = np.fix(x)",
        checked=True),
    "random-state-draws": Limit(
        "a draw from a NumPy RandomState or Generator inside the function", NUMBA,
        r"RandomState or Generator cannot be compiled",
        "draw the samples outside and pass them in, or use s2s.random with a key", "z = rng.normal(0.0, 1.0, n)",
        helpers=("draw",)),
    "dict-loop": Limit(
        "a loop over a dict argument (for k, v in d.items(), .keys(), .values()) where its keys are not known as "
        "the code is written: in a function that the function given to s2s.jit calls (s2s.jit of the function "
        "itself, of its grad, jvp, jacfwd, jacrev, hessian and vmap write the loop out for the call's keys; a "
        "dict the function builds is written out too)", NUMBA,
        r"a loop over a dict is not supported",
        "loop over the dict in the function s2s.jit is given, index it with constant keys (d['w']), or pass a "
        "tuple or list of its values",
        "for k, v in params.items():", helpers=("dict_keys",)),
    "layers-of-different-shapes": Limit(
        "a tuple or list of items of different kinds (a matrix and a vector) read at an index known only at "
        "run time: ws[k] of an argument k, or a loop over it where the code is not generated for the call (in a "
        "helper the function calls, under s2s.vmap); s2s.jit of the function, of its grad and of its jvp write "
        "a loop over such an argument out item by item", NUMBA,
        r"argument \w+ is a tuple of \d+ .*cannot take under Numba",
        "loop over it in the function s2s.jit is given, unpack it into names (w1, w2 = ws), or use backend='python'",
        "w = ws[k]"),
    # ---- known gaps: s2s does not yet generate code Numba compiles ----
    "number-becomes-array": Limit(
        "a variable that starts as a number and becomes an array in a loop where s2s cannot make it an array "
        "from the start: s = s + np.cumsum(X[i]) (not elementwise), a while loop whose test changes "
        "something (s = s + x * i, s = s + w * x * i and rows, s = s + X[i] * w[i], compile, in range "
        "and while loops)", KNOWN_GAP,
        r"Cannot unify", "give it its final type from its first assignment: s = np.zeros_like(x[0])",
        "s = 0.0; for i in range(n): s = s + np.cumsum(X[i])"),
    "squeeze-without-axis": Limit(
        "np.squeeze without axis= of a value whose axes of length 1 s2s.jit does not follow from the arguments "
        "(it follows elementwise operations, matrix products, transposes, np.expand_dims and basic indexing "
        "in the function itself, not np.reshape or a helper's result)", NUMBA, r"np\.squeeze needs its axes",
        "name the axes: np.squeeze(x, axis=0)", "y = np.squeeze(np.reshape(x, (1, -1)))"),
}


def refused_helper(name: str) -> tuple[str, Limit] | None:
    """The limit under which Numba refuses every call of the runtime helper `name`, if any."""
    for key, limit in LIMITS.items():
        if name in limit.helpers:
            return key, limit
    return None


def markdown() -> str:
    """docs/pages/limits.md: the list as a page."""
    out = ["# What s2s.jit does not compile", "",
           "s2s.jit compiles the generated code with Numba (the cpu backend). What it cannot compile it refuses",
           "with an `S2SError` at your file:line:column that names a way out; `backend='python'` runs all of it",
           "as NumPy. `s2s check module.py` reports, without running anything, the limits marked *found by",
           "s2s check*; the others depend on the arguments' types and shapes and are found at the call.",
           "This page is generated from `s2s/limits.py` (`python -m s2s.limits > docs/pages/limits.md`).", ""]
    for kind, title in ((NUMBA, "Numba's limits"), (KNOWN_GAP, "Known gaps (s2s does not compile these yet)")):
        out += [f"## {title}", "", "| limit | example | way out |", "| --- | --- | --- |"]
        for key, limit in LIMITS.items():
            if limit.kind != kind:
                continue
            found = " (found by s2s check)" if limit.found_by_check else ""
            example = f"`{limit.example}`" if limit.example else ""
            out.append(f"| {limit.what}{found} <br>`{key}` | {example} | {limit.way_out} |")
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    print(markdown(), end="")
