"""From IR to Python: the builders transforms emit with, and the module's text (black)."""
