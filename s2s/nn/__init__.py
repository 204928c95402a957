"""Neural-network modules in the shape of flax.linen: `import s2s.nn as nn`.

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.relu(nn.Dense(32)(x))
            return nn.Dense(10)(x)

    model = MLP()
    variables = model.init(s2s.random.PRNGKey(0), x)   # {'params': {'Dense_0': {...}, 'Dense_1': {...}}}
    logits = model.apply(variables, x)

Modules are dataclasses of their settings, with Flax's names for parameters and submodules and
its default initialisers, drawn with s2s.random keys (module.py). Run outside a transform,
init and apply are NumPy. Inside a function given to s2s.grad, jit or vmap, `model.apply` is
read as the plain function s2s.nn writes for the module (writing.py; see it with
`print(inspect.getsource(model.apply.as_called_function()))`), so it is differentiated,
batched and compiled with the code around it. The layers' arithmetic and the activations are
plain NumPy functions (functional.py) that s2s reads as it reads the user's helpers.
"""

from __future__ import annotations

from . import initializers, writing  # (writing: what model.apply is inside a transform)
from .functional import gelu, log_softmax, one_hot, relu, sigmoid, softmax, tanh
from .layers import Conv, Dense, Dropout, Embed, LayerNorm, Sequential
from .module import Module, compact

__all__ = [
    "Module", "compact", "Dense", "Conv", "Embed", "LayerNorm", "Dropout", "Sequential", "initializers",
    "relu", "gelu", "sigmoid", "tanh", "softmax", "log_softmax", "one_hot",
]
