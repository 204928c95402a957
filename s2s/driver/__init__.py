"""Runs the pipeline (function -> module source) and keeps its results in the cache."""
