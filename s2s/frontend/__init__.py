"""Frontend: find a function's source, parse it with libcst, resolve its names, refuse what
s2s does not take (S2SError), and lower it to the IR (one operation per statement)."""


def named_lambda(fn):
    """frontend.source.named_lambda, imported on first use: libcst loads only in a process that
    reads a lambda, not in one that finds every module in the cache."""
    from .source import named_lambda as name_it

    return name_it(fn)


def forwarding(fn):
    """frontend.source.forwarding (is fn a functools.wraps wrapper that only forwards *args and
    **kwargs?), imported on first use (as named_lambda), for a function that wraps another with *args."""
    import inspect

    code = getattr(fn, "__code__", None)
    if getattr(fn, "__wrapped__", None) is None or code is None or not code.co_flags & inspect.CO_VARARGS:
        return None, ""
    from .source import forwarding as forwards

    return forwards(fn)


def lowered_functions(fn):
    """frontend.collect.collect (fn and the functions it calls, lowered), imported on first
    use (as named_lambda): a process that runs transformed code from the cache does not load
    libcst. (Not named collect: importing the submodule frontend.collect rebinds that name.)"""
    from .collect import collect

    return collect(fn)
