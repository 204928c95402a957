"""Benchmarks of s2s: run with `python -m benchmarks` (needs the `bench` extra for JAX)."""
