"""The three doors to the one engine: the Python API, the command line and the import hook."""
