"""Derivative rules of s2s, written as ordinary Python functions (see s2s/rules.py)."""
