"""The optimizers and schedules that tests/test_optax.py checks against optax: each written once,
as a function of the module that provides them (optax itself in tests/data/optax_reference.py,
which stores optax's values; s2s.optax in the test)."""


def optimizers(optax) -> dict:
    return {
        "adam": lambda: optax.adam(0.05),
        "adam nesterov": lambda: optax.adam(0.05, b1=0.8, nesterov=True),
        "adamw": lambda: optax.adamw(0.05, weight_decay=0.1),
        "adamw masked": lambda: optax.adamw(0.05, weight_decay=0.1, mask={"w": True, "b": False}),
        "sgd": lambda: optax.sgd(0.1),
        "sgd momentum": lambda: optax.sgd(0.1, momentum=0.9),
        "sgd nesterov": lambda: optax.sgd(0.1, momentum=0.9, nesterov=True),
        "rmsprop": lambda: optax.rmsprop(0.01),
        "rmsprop momentum": lambda: optax.rmsprop(0.01, decay=0.8, momentum=0.5),
        "clipped adam": lambda: optax.chain(optax.clip_by_global_norm(1.0), optax.adam(0.05)),
        "adam on a schedule": lambda: optax.adam(optax.exponential_decay(0.1, 2, 0.5)),
        "sgd on a warmup cosine": lambda: optax.sgd(optax.warmup_cosine_decay_schedule(0.0, 0.2, 2, 6, 0.01)),
    }


def schedules(optax) -> dict:
    return {
        "exponential_decay": lambda: optax.exponential_decay(0.1, 3, 0.5),
        "exponential_decay staircase": lambda: optax.exponential_decay(0.1, 3, 0.5, transition_begin=2,
                                                                       staircase=True),
        "exponential_decay end_value": lambda: optax.exponential_decay(0.1, 2, 0.5, end_value=0.03),
        "warmup_cosine_decay_schedule": lambda: optax.warmup_cosine_decay_schedule(0.0, 1.0, 3, 10, 0.1),
        "linear_schedule": lambda: optax.linear_schedule(1.0, 0.2, 4, transition_begin=1),
        "cosine_decay_schedule": lambda: optax.cosine_decay_schedule(2.0, 5, alpha=0.1),
    }
