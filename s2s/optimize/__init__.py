"""Passes over emitted Python: dead code, folding of temporaries, elementwise loops, carries."""
