"""Runs the pipeline (function -> module source) and keeps its results in the cache."""


def generate(*args, **kwargs):
    """driver.pipeline.generate, imported on first use: libcst and black load only in a
    process that writes a module, not in one that finds every module in the cache."""
    from .pipeline import generate as generate_now

    return generate_now(*args, **kwargs)
