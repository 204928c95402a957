"""Dependencies inside s2s run one way: down the pipeline's layers, without cycles.

The layer order is written here, once. A module may import from its own layer or below;
an import from a lower layer to a higher one fails, and any cycle between modules fails. An
import of an s2s module inside a function counts as any other, toward the layers and toward
cycles: a function-level import is for a lazy load (libcst and black, Numba, numba-cuda, which
`import s2s` does not load), not a way around the order. It may only reach into the module's
own package, so that each stage keeps its lazy loads.
"""

import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "s2s")

# From the bottom up: each entry is a layer, a set of top-level parts of s2s.
LAYERS = [
    {"version", "options", "progress", "errors", "limits"},  # nothing of s2s below them (options: s2s.config; limits: what s2s.jit does not compile)
    {"tree_util", "ir", "random"},  # values (pytrees, with JAX's tree utilities; random keys and draws) and the IR
    {"runtime", "lax"},  # what generated code calls (and its Numba overloads); s2s.lax runs on it, with the collectives of pmap
    {"rules", "templates", "scipy_forms"},  # the registry of primitives, loaded from templates/; SciPy's NumPy forms
    {"frontend"},  # source -> IR
    {"analysis"},  # facts about the IR
    {"codegen"},  # IR -> Python statements -> text
    {"transforms", "optimize"},  # forward, reverse, batching; passes over emitted Python
    {"driver"},  # the pipeline and the cache
    {"backends"},  # python, cpu (Numba)
    # API, command line, import hook; what users import beside it (optax, training state, the profiler, nn)
    {"doors", "testing", "debug", "optimizers", "optax", "training", "profiler", "nn", "__init__", "__main__"},
]


def layer_of(module: str) -> int:
    part = module.split(".")[1] if module.count(".") else "__init__"
    for k, parts in enumerate(LAYERS):
        if part in parts:
            return k
    raise AssertionError(f"{module} is in no layer: add its stage to LAYERS in tests/test_layers.py")


def package_modules() -> dict[str, str]:
    """Dotted module name -> file, for s2s and its templates (s2s.templates when installed)."""
    modules = {}
    for folder, subfolders, files in os.walk(PACKAGE):
        subfolders[:] = [d for d in subfolders if d != "__pycache__"]
        for name in files:
            if name.endswith(".py"):
                rel = os.path.relpath(os.path.join(folder, name), ROOT)[:-3].split(os.sep)
                if rel[-1] == "__init__" and len(rel) > 1:
                    rel = rel[:-1]
                modules[".".join(rel)] = os.path.join(folder, name)
    templates = os.path.join(ROOT, "templates")
    for name in os.listdir(templates):
        if name.endswith(".py"):
            stem = name[:-3]
            modules["s2s.templates" + ("" if stem == "__init__" else "." + stem)] = os.path.join(templates, name)
    return modules


MODULES = package_modules()


def imports_of(module: str, path: str) -> list[tuple[str, bool, int]]:
    """(imported s2s module, inside a function?, line) for each import of an s2s module."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    found = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            nested = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")
                    base = base[:len(base) - (child.level - 1)]
                    target = ".".join(base + ([child.module] if child.module else []))
                else:
                    target = child.module or ""
                if target == "s2s" or target.startswith("s2s."):
                    for alias in child.names:
                        sub = f"{target}.{alias.name}"
                        found.append((sub if sub in MODULES else target, in_function, child.lineno))
            elif isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name == "s2s" or alias.name.startswith("s2s."):
                        found.append((alias.name, in_function, child.lineno))
            visit(child, nested)

    visit(tree, False)
    return found


def top_package(module: str) -> str:
    return ".".join(module.split(".")[:2])


EDGES = {m: imports_of(m, p) for m, p in MODULES.items()}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_go_down_the_layers(module):
    upward = [f"line {line}: {target} (layer {layer_of(target)})" for target, _, line in EDGES[module]
              if layer_of(target) > layer_of(module) and not (module == "s2s" or target == "s2s")]
    assert not upward, f"{module} (layer {layer_of(module)}) imports from a higher layer: {upward}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_inside_functions_stay_in_their_stage(module):
    crossing = [f"line {line}: {target}" for target, inside, line in EDGES[module]
                if inside and top_package(target) != top_package(module)]
    assert not crossing, (f"{module} imports inside a function from another stage: {crossing}; "
                          "import at the top of the module, or move the lazy load into that stage")


def test_no_import_cycles():
    graph = {m: sorted({t for t, _, _ in edges if t != m and t in MODULES}) for m, edges in EDGES.items()}
    graph["s2s"] = []  # the package root imports the public names; nothing below may import it
    state: dict[str, int] = {}
    cycles = []

    def visit(node, path):
        state[node] = 1
        for nxt in graph.get(node, []):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join(path[path.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not cycles, f"import cycles: {cycles}"


def test_nothing_below_the_doors_imports_the_package_root():
    offenders = [f"{m} line {line}" for m, edges in EDGES.items() for target, _, line in edges
                 if target == "s2s" and layer_of(m) < layer_of("s2s.doors")]
    assert not offenders, f"import s2s's public API from below it: {offenders}"


def test_templates_import_only_the_registry_and_the_runtime():
    bad = [f"{m}: {t}" for m, edges in EDGES.items() if m.startswith("s2s.templates")
           for t, _, _ in edges if top_package(t) not in ("s2s.rules", "s2s.runtime")]
    assert not bad, f"templates may import s2s.rules and s2s.runtime only: {bad}"


def test_every_stage_is_in_a_layer():
    for module in MODULES:
        layer_of(module)


def test_every_subpackage_ships_in_the_wheel():
    """pyproject.toml lists the packages (templates/ is mapped to s2s.templates, which rules out
    automatic discovery): a subpackage missing there imports in a checkout and not once installed."""
    import tomllib

    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as handle:
        listed = set(tomllib.load(handle)["tool"]["setuptools"]["packages"])
    packages = {m for m, p in MODULES.items() if p.endswith("__init__.py")}
    assert packages == listed, f"missing from pyproject.toml: {sorted(packages - listed)}; " \
                               f"listed but absent: {sorted(listed - packages)}"


def test_no_module_defines_a_top_level_name_twice():
    """A second def of a name replaces the first for every caller in the module (an overload module's
    helpers share one namespace): each function and class is defined once."""
    import collections

    twice = []
    for module, path in MODULES.items():
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
        counts = collections.Counter(node.name for node in tree.body if isinstance(
            node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))
        twice += [f"{module}.{name}" for name, count in counts.items() if count > 1]
    assert not twice, f"defined twice: {twice}"
