"""SciPy functions that s2s differentiates by transforming a NumPy form of them, as it
transforms a user's helper function: every mode (reverse, forward, second order, vmap, jit)
comes from the form's source, which calls only functions that have rules."""
