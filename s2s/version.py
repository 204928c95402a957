"""The version of s2s, on its own: the cache and generated headers read it without importing
the package's public API."""

__version__ = "0.1.0"
