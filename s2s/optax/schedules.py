"""Learning-rate schedules as optax defines them: functions of the step count (0 for the first
update) to a number."""

from __future__ import annotations

import math
from typing import Callable, Sequence

Schedule = Callable[[int], float]


def constant_schedule(value: float) -> Schedule:
    return lambda count: value


def polynomial_schedule(init_value: float, end_value: float, power: float, transition_steps: int,
                        transition_begin: int = 0) -> Schedule:
    """From init_value to end_value over transition_steps steps after transition_begin, along
    (1 - progress) ** power; end_value after."""
    if transition_steps <= 0:
        return constant_schedule(init_value)
    begin = max(transition_begin, 0)

    def schedule(count):
        done = min(max(count - begin, 0), transition_steps)
        return (init_value - end_value) * (1 - done / transition_steps) ** power + end_value

    return schedule


def linear_schedule(init_value: float, end_value: float, transition_steps: int, transition_begin: int = 0) -> Schedule:
    return polynomial_schedule(init_value, end_value, 1, transition_steps, transition_begin)


def exponential_decay(init_value: float, transition_steps: int, decay_rate: float, transition_begin: int = 0,
                      staircase: bool = False, end_value: float | None = None) -> Schedule:
    """init_value * decay_rate ** ((count - transition_begin) / transition_steps) (its floor where
    staircase), init_value before transition_begin, held at end_value once it is reached."""
    if transition_steps <= 0 or decay_rate == 0:
        return constant_schedule(init_value)
    begin = max(transition_begin, 0)

    def schedule(count):
        since = count - begin
        power = math.floor(since / transition_steps) if staircase else since / transition_steps
        value = init_value if since <= 0 else init_value * decay_rate ** power
        if end_value is not None:
            value = max(value, end_value) if decay_rate < 1.0 else min(value, end_value)
        return value

    return schedule


def cosine_decay_schedule(init_value: float, decay_steps: int, alpha: float = 0.0, exponent: float = 1.0) -> Schedule:
    """init_value times a half cosine from 1 to alpha over decay_steps steps, alpha after."""
    if not decay_steps > 0:
        raise ValueError(f"cosine_decay_schedule needs positive decay_steps, not {decay_steps}")

    def schedule(count):
        cosine = 0.5 * (1 + math.cos(math.pi * min(count, decay_steps) / decay_steps))
        return init_value * ((1 - alpha) * cosine ** exponent + alpha)

    return schedule


def join_schedules(schedules: Sequence[Schedule], boundaries: Sequence[int]) -> Schedule:
    """schedules[k] from boundaries[k - 1] on, given the steps since that boundary."""

    def schedule(count):
        value = schedules[0](count)
        for boundary, later in zip(boundaries, schedules[1:]):
            if count >= boundary:
                value = later(count - boundary)
        return value

    return schedule


def warmup_cosine_decay_schedule(init_value: float, peak_value: float, warmup_steps: int, decay_steps: int,
                                 end_value: float = 0.0, exponent: float = 1.0) -> Schedule:
    """A linear warmup from init_value to peak_value over warmup_steps, then a cosine decay to
    end_value at decay_steps (counted from the start, warmup included)."""
    alpha = 0.0 if peak_value == 0.0 else end_value / peak_value
    return join_schedules([linear_schedule(init_value, peak_value, warmup_steps),
                           cosine_decay_schedule(peak_value, decay_steps - warmup_steps, alpha, exponent)],
                          [warmup_steps])
