"""The vjp transform: a normalized function -> Python source of its reverse mode (core.py),
in parts: rule instances, planning (tapes and recomputation) and the two sweeps."""

from .core import VJP

__all__ = ["VJP"]
