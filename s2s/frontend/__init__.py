"""Frontend: find a function's source, parse it with libcst, resolve its names, refuse what
s2s does not take (S2SError), and lower it to the IR (one operation per statement)."""


def named_lambda(fn):
    """frontend.source.named_lambda, imported on first use: libcst loads only in a process that
    reads a lambda, not in one that finds every module in the cache."""
    from .source import named_lambda as name_it

    return name_it(fn)


def lowered_functions(fn):
    """frontend.collect.collect (fn and the functions it calls, lowered), imported on first
    use (as named_lambda): a process that runs transformed code from the cache does not load
    libcst. (Not named collect: importing the submodule frontend.collect rebinds that name.)"""
    from .collect import collect

    return collect(fn)
