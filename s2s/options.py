"""`s2s.config`: JAX's `jax.config.update(name, value)`, for the options that mean something here.

>>> import s2s
>>> s2s.config.update("jax_enable_x64", True)   # what s2s does anyway: NumPy's float64
>>> s2s.config.jax_enable_x64
True

Each option also reads an environment variable at import (its name upper-cased, e.g.
`JAX_DISABLE_JIT=1`). An option JAX has and s2s does not is refused with what to do instead.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Option:
    default: Any
    meaning: str
    accept: Callable[[Any], Any]  # the value as stored, or raises ValueError with the reason


def _boolean(value: Any) -> bool:
    if isinstance(value, str):
        if value.lower() in ("1", "true", "yes", "on"):
            return True
        if value.lower() in ("0", "false", "no", "off", ""):
            return False
        raise ValueError(f"expected a boolean, got {value!r}")
    return bool(value)


def _x64(value: Any) -> bool:
    if not _boolean(value):
        raise ValueError("s2s computes in NumPy's dtypes (float64 unless the inputs are float32) and cannot "
                         "turn 64-bit off; pass float32 arrays (x.astype(np.float32)) to compute in float32")
    return True


def _filtering(value: Any) -> str:
    value = str(value)
    if value not in ("auto", "off", "tracebackhide", "remove_frames", "quiet_remove_frames"):
        raise ValueError(f"expected 'auto' or 'off' (or JAX's other modes, which hide frames too), got {value!r}")
    return value


def _bytes(value: Any) -> int | None:
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none")):
        return None
    try:
        return _parse_bytes(value)
    except ValueError:
        raise ValueError(f"expected a number of bytes (1073741824, '1GiB', '512MiB'), got {value!r}") from None


def _parse_bytes(value: Any) -> int:
    if isinstance(value, str):
        text = value.strip().lower()
        for suffix, scale in (("tib", 1 << 40), ("gib", 1 << 30), ("mib", 1 << 20), ("kib", 1 << 10), ("gb", 10**9), ("mb", 10**6),
                              ("kb", 10**3), ("b", 1)):
            if text.endswith(suffix):
                number = float(text[:-len(suffix)])
                break
        else:
            number, scale = float(text), 1
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        number, scale = float(value), 1
    else:
        raise ValueError(f"expected a number of bytes (1073741824, '1GiB', '512MiB'), got {value!r}")
    if not number >= 0 or number * scale > 2 ** 62:
        raise ValueError(f"expected a number of bytes from 0 up, got {value!r}")
    return int(number * scale)


OPTIONS = {
    "jax_enable_x64": Option(
        True, "s2s follows NumPy's dtypes: float64, or float32 where the inputs are float32. "
              "True is accepted; False is refused (pass float32 arrays instead).", _x64),
    "jax_disable_jit": Option(
        False, "True: s2s.jit, applied after the update, runs the generated Python uncompiled "
               "(backend='python'), where print and pdb work.", _boolean),
    "jax_traceback_filtering": Option(
        "auto", "'off': an S2SError shows s2s's own frames in its traceback; any other value hides them, "
                "so the traceback ends at your call and the message names your line.", _filtering),
    "s2s_tape_budget": Option(
        None, "The bytes one loop's reverse-mode tape may take ('1GiB', '512MiB' and 1e9 are taken too; None, the "
              "default: no limit): a range loop whose tape would take more runs checkpointed (snapshots of its "
              "carried values, each stretch of trips run again taped in the reverse sweep), which costs about one "
              "more run of the loop. grad, value_and_grad and vjp take tape_budget= for one function.", _bytes),
}

UNSUPPORTED = {
    "jax_platform_name": "choose the device per call: s2s.jit(f, backend='cpu' | 'cuda')",
    "jax_platforms": "choose the device per call: s2s.jit(f, backend='cpu' | 'cuda')",
    "jax_default_device": "choose the device per call: s2s.jit(f, backend='cpu' | 'cuda')",
    "jax_debug_nans": "check the result with np.isnan, or run with backend='python' and "
                      "np.seterr(invalid='raise')",
    "jax_numpy_rank_promotion": "s2s follows NumPy's broadcasting",
    "jax_default_matmul_precision": "s2s computes in the inputs' dtype",
}


class Config:
    """The options: read them as attributes, set them with `update(name, value)`."""

    def __init__(self) -> None:
        self._values = {}
        for name, option in OPTIONS.items():
            text = os.environ.get(name.upper())
            self._values[name] = option.default if text is None else option.accept(text)

    def update(self, name: str, value: Any) -> None:
        if name in UNSUPPORTED:
            raise ValueError(f"s2s.config has no option {name!r}: {UNSUPPORTED[name]}")
        if name not in OPTIONS:
            raise ValueError(f"s2s.config has no option {name!r}; its options are {', '.join(OPTIONS)}")
        try:
            self._values[name] = OPTIONS[name].accept(value)
        except ValueError as exc:
            raise ValueError(f"s2s.config.update({name!r}, {value!r}): {exc}") from None

    def __getattr__(self, name: str) -> Any:
        values = self.__dict__.get("_values", {})
        if name in values:
            return values[name]
        raise AttributeError(f"s2s.config has no option {name!r}; its options are {', '.join(OPTIONS)}")

    def __repr__(self) -> str:
        return "s2s.config(" + ", ".join(f"{k}={v!r}" for k, v in self._values.items()) + ")"


config = Config()
