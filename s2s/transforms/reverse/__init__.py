"""The vjp transform, as passes over a module's functions (passes.py): plan (plan.py, with
planning.py's decisions and instances.py's rule instances), forward sweep (forward_sweep.py),
reverse sweep (sweep.py), and the functions they make (core.py)."""

from .passes import (ForwardSweeps, ReversePlans, ReverseSweeps, forward_sweeps, plan_module, reverse_sweeps,
                     vjp_definitions)

__all__ = ["ForwardSweeps", "ReversePlans", "ReverseSweeps", "forward_sweeps", "plan_module", "reverse_sweeps",
           "vjp_definitions"]
