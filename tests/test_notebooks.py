"""A notebook run through a real Jupyter kernel (nbclient): functions defined in cells are
differentiated, compiled, batched and shown, and a cell redefined after its first use is read again."""

import nbformat
import numpy as np
from nbclient import NotebookClient

CELLS = [
    "import numpy as np\nimport s2s\nx = np.array([0.3, -1.2, 2.0])",
    "def loss(w):\n    return np.sum(np.tanh(w) ** 2)",
    "g = s2s.grad(loss)\nprint(repr(g(x).tolist()))",
    "print(repr(s2s.jit(g)(x).tolist()))\nprint(repr(s2s.vmap(g)(np.stack([x, 2 * x])).tolist()))",
    "print('def loss_vjp' in s2s.source(g))",
    # the same name, a new body: the cell's new source is what s2s reads
    "def loss(w):\n    return np.sum(w ** 3)",
    "print(repr(s2s.grad(loss)(x).tolist()))\nprint(repr(s2s.jit(s2s.grad(loss))(x).tolist()))",
]


def outputs(cell):
    return [line for out in cell.outputs if out.output_type == "stream" and out.name == "stdout"
            for line in out.text.splitlines()]


def test_a_notebook_differentiates_compiles_and_shows_its_functions(tmp_path):
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    NotebookClient(notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    x = np.array([0.3, -1.2, 2.0])
    tanh_grad = 2 * np.tanh(x) / np.cosh(x) ** 2
    cells = notebook.cells
    np.testing.assert_allclose(eval(outputs(cells[2])[0]), tanh_grad, rtol=1e-12)
    jitted, batched = outputs(cells[3])
    np.testing.assert_allclose(eval(jitted), tanh_grad, rtol=1e-12)
    np.testing.assert_allclose(eval(batched), [tanh_grad, 2 * np.tanh(2 * x) / np.cosh(2 * x) ** 2], rtol=1e-12)
    assert outputs(cells[4]) == ["True"]
    plain, compiled = outputs(cells[6])
    np.testing.assert_allclose(eval(plain), 3 * x ** 2, rtol=1e-12)
    np.testing.assert_allclose(eval(compiled), 3 * x ** 2, rtol=1e-12)
