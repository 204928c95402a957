"""`jax.tree`'s short names (map, leaves, flatten, unflatten, structure, reduce, all), the same
functions as s2s.tree_util."""

from . import tree_all as all  # noqa: A001 - JAX's name
from . import tree_flatten as flatten
from . import tree_leaves as leaves
from . import tree_map as map  # noqa: A001 - JAX's name
from . import tree_reduce as reduce
from . import tree_structure as structure
from . import tree_unflatten as unflatten

__all__ = ["all", "flatten", "leaves", "map", "reduce", "structure", "unflatten"]
