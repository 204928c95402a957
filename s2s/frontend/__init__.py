"""Frontend: find a function's source, parse it with libcst, resolve its names, refuse what
s2s does not take (S2SError), and lower it to the IR (one operation per statement)."""
