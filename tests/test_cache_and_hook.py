"""The on-disk cache, the import hook and the command line share one engine; a Numba cache that
names a generated module no longer there is compiled again."""

import importlib.util
import os
import stat
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import s2s
from s2s.driver import cache

from checks import without_progress

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MODEL = '''
import numpy as np

from mypkg.helpers import squash

__s2s__ = ["loss"]


def loss(w, x):
    return np.sum(squash(x @ w) ** 2)
'''
HELPERS = '''
import numpy as np


def squash(v):
    return np.tanh(v)
'''


def make_package(root):
    pkg = root / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "model.py").write_text(MODEL)
    (pkg / "helpers.py").write_text(HELPERS)
    return pkg


def run(code, root, cache_dir, check=True):
    env = {**os.environ, "S2S_CACHE_DIR": str(cache_dir), "PYTHONPATH": f"{root}{os.pathsep}{ROOT}"}
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                            text=True, env=env, cwd=root, timeout=600)
    if check:
        assert result.returncode == 0, result.stdout + result.stderr
    return result


def test_hook_writes_entries_that_a_second_process_uses_without_libcst_or_black(tmp_path):
    pkg = make_package(tmp_path)
    run("""
        import s2s
        s2s.install_import_hook("mypkg")
        import mypkg.model
    """, tmp_path, tmp_path / "cache")
    written = sorted(os.listdir(pkg / "__pycache__" / "s2s"))
    assert [n.split(".")[-3] for n in written] == ["grad", "jvp"]
    result = run("""
        import sys
        import numpy as np
        import s2s, mypkg.model
        g = s2s.grad(mypkg.model.loss)
        source = g.source
        value = g(np.array([0.5, -0.2]), np.array([[1.0, 2.0], [0.3, -0.4]]))
        assert "libcst" not in sys.modules and "black" not in sys.modules, "imported the transformer"
        print(source, end="")
    """, tmp_path, tmp_path / "cache")
    entry = open(pkg / "__pycache__" / "s2s" / written[0]).read()
    assert entry.startswith(result.stdout)
    assert "def loss_vjp(w, x, out_bar):" in result.stdout
    # Nothing was written to the user cache: the entry came from beside the bytecode.
    assert not os.path.exists(tmp_path / "cache") or not cache.entries(str(tmp_path / "cache"))


PLAIN = '''
import numpy as np


def loss(x):
    return np.sum(np.tanh(x) ** 2)
'''
LOGISTIC = '''
import numpy as np
from scipy.special import expit


def loss(x):
    return np.sum(expit(x) * x)
'''


def test_a_compiled_module_loads_scipy_s_c_functions_only_where_it_calls_them(tmp_path):
    """SciPy's special functions are called by name from compiled code (runtime/overloads/
    special.py): a process that loads modules calling none from the cache does not import
    scipy.special (one that writes a module does: the rules know SciPy's functions), and one that
    loads such a module from the cache, compiled by another process, gives the names first."""
    (tmp_path / "plain_model.py").write_text(PLAIN)
    (tmp_path / "logistic_model.py").write_text(LOGISTIC)
    code = """
        import sys
        import numpy as np
        import s2s, {module}
        g = s2s.jit(s2s.grad({module}.loss))(np.array([0.5, -0.2, 1.5]))
        print(repr(float(np.sum(g))), "scipy.special" in sys.modules)
    """
    x = np.array([0.5, -0.2, 1.5])
    s = 1 / (1 + np.exp(-x))
    for cached in (False, True):  # (written and compiled, then loaded from the cache in a new process)
        imported = run(code.format(module="plain_model"), tmp_path, tmp_path / "cache").stdout.split()[-1]
        assert imported == "False" or not cached
        value, imported = run(code.format(module="logistic_model"), tmp_path, tmp_path / "cache").stdout.split()[-2:]
        assert float(value) == pytest.approx(np.sum(s + x * s * (1 - s)), rel=1e-12) and imported == "True"


def test_api_command_line_and_hook_give_the_same_text(tmp_path):
    pkg = make_package(tmp_path)
    run("""
        import s2s
        s2s.install_import_hook("mypkg")
        import mypkg.model
    """, tmp_path, tmp_path / "cache")
    hook_entry = next(n for n in os.listdir(pkg / "__pycache__" / "s2s") if ".grad." in n)
    hook_text = open(pkg / "__pycache__" / "s2s" / hook_entry).read()
    api = run("""
        import s2s, mypkg.model
        from s2s.driver import pipeline
        print(pipeline.generate(mypkg.model.loss, "grad", {"argnums": [0], "has_aux": False})[0], end="")
    """, tmp_path, tmp_path / "other-cache").stdout
    out = tmp_path / "out"
    env = {**os.environ, "S2S_CACHE_DIR": str(tmp_path / "third-cache"), "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    subprocess.run([sys.executable, "-m", "s2s", "transform", str(pkg / "model.py"), "-o", str(out)],
                   check=True, env=env, cwd=tmp_path, capture_output=True)
    cli = (out / "model_loss_grad.py").read_text()
    assert api == cli
    assert hook_text.startswith(api)


def test_an_edit_to_a_called_function_regenerates(tmp_path):
    pkg = make_package(tmp_path)
    code = """
        import s2s, mypkg.model
        print(s2s.grad(mypkg.model.loss).source, end="")
    """
    first = run(code, tmp_path, tmp_path / "cache").stdout
    assert "np.tanh" in first
    (pkg / "helpers.py").write_text(HELPERS.replace("np.tanh(v)", "np.sin(v)"))
    second = run(code, tmp_path, tmp_path / "cache").stdout
    assert "np.sin" in second and "np.tanh" not in second


def test_an_edit_to_a_module_constant_regenerates(tmp_path):
    pkg = make_package(tmp_path)
    (pkg / "helpers.py").write_text(HELPERS.replace("return np.tanh(v)", "return np.tanh(v) * SCALE")
                                    + "\nSCALE = 2.0\n")
    code = """
        import numpy as np, s2s, mypkg.model
        print(s2s.grad(mypkg.model.loss)(np.array([0.5, -0.2]), np.array([[1.0, 2.0], [0.3, -0.4]]))[0])
    """
    first = float(run(code, tmp_path, tmp_path / "cache").stdout)
    (pkg / "helpers.py").write_text((pkg / "helpers.py").read_text().replace("SCALE = 2.0", "SCALE = 3.0"))
    second = float(run(code, tmp_path, tmp_path / "cache").stdout)
    assert second == pytest.approx(first * 9.0 / 4.0, rel=1e-9)  # loss is quadratic in SCALE


def test_rebinding_the_name_of_a_called_function_regenerates(tmp_path):
    pkg = make_package(tmp_path)
    (pkg / "other.py").write_text(HELPERS.replace("np.tanh(v)", "v ** 3"))
    (pkg / "model.py").write_text(MODEL.replace("from mypkg.helpers import squash",
                                                "from mypkg import helpers, other\nsquash = helpers.squash"))
    code = """
        import numpy as np, s2s, mypkg.model
        print(s2s.grad(mypkg.model.loss).source, end="")
    """
    assert "np.tanh" in run(code, tmp_path, tmp_path / "cache").stdout
    (pkg / "model.py").write_text((pkg / "model.py").read_text().replace("squash = helpers.squash",
                                                                         "squash = other.squash"))
    assert "np.tanh" not in run(code, tmp_path, tmp_path / "cache").stdout


def test_damaged_entries_are_regenerated_not_executed(tmp_path, monkeypatch):
    monkeypatch.setenv("S2S_CACHE_DIR", str(tmp_path))
    from programs import scalar_operators

    source = s2s.grad(scalar_operators).source
    (entry,) = [p for p in cache.entries(str(tmp_path)) if ".grad." in p]
    text = open(entry).read()
    with open(entry, "w") as handle:  # truncated in the middle, as by a crash
        handle.write(text[: len(text) // 2])
    assert cache.lookup(scalar_operators, "grad", {"argnums": [0], "has_aux": False}) is None
    with open(entry, "w") as handle:  # one byte changed
        handle.write(text.replace("out_bar", "out_baz", 1))
    assert cache.lookup(scalar_operators, "grad", {"argnums": [0], "has_aux": False}) is None
    assert s2s.grad(scalar_operators).source == source
    assert open(entry).read() == text


def test_untrusted_cache_directories_are_refused(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    monkeypatch.setenv("S2S_CACHE_DIR", str(shared))
    from programs import if_elif_else

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s2s.grad(if_elif_else).source
    assert any("not owned by you or others can write" in str(w.message) for w in caught)
    assert cache.entries(str(shared)) == []


def test_new_cache_directories_are_private(tmp_path, monkeypatch):
    monkeypatch.setenv("S2S_CACHE_DIR", str(tmp_path / "fresh"))
    from programs import while_loop

    s2s.grad(while_loop).source
    assert stat.S_IMODE(os.stat(tmp_path / "fresh").st_mode) == 0o700


def test_eight_processes_importing_at_once_leave_one_valid_entry(tmp_path):
    pkg = make_package(tmp_path)
    env = {**os.environ, "S2S_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    code = "import s2s; s2s.install_import_hook('mypkg'); import mypkg.model; print('ok')"
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(8)]
    results = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), results
    names = sorted(os.listdir(pkg / "__pycache__" / "s2s"))
    assert [n.split(".")[-3] for n in names] == ["grad", "jvp"]  # no temporary files left
    for name in names:
        assert cache._unseal(open(pkg / "__pycache__" / "s2s" / name).read()) is not None


def test_modules_outside_the_named_packages_are_untouched(tmp_path):
    pkg = make_package(tmp_path)
    run("""
        import s2s
        s2s.install_import_hook("otherpkg")
        import mypkg.model
    """, tmp_path, tmp_path / "cache")
    assert not (pkg / "__pycache__" / "s2s").exists()


def test_command_line(tmp_path):
    path = os.path.join(ROOT, "examples", "ode.py")
    env = {**os.environ, "S2S_CACHE_DIR": str(tmp_path / "cache")}

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "s2s", *args], capture_output=True, text=True,
                              env=env, cwd=tmp_path, timeout=600)

    shown = cli("show", f"{path}:final_state", "--mode", "jvp")
    assert shown.returncode == 0 and "\x1b[" not in shown.stdout  # plain when piped
    assert shown.stdout == open(os.path.join(ROOT, "generated", "ode_final_state_jvp.py")).read()
    assert "show" in cli("--help").stdout and "--mode" in cli("transform", "--help").stdout
    assert "FILE.py:NAME" in cli("show", "--help").stdout and "clear" in cli("cache", "--help").stdout
    listed = cli("cache", "list")
    assert listed.returncode == 0 and ".jvp." in listed.stdout
    assert "transforms (" in listed.stdout and "files of Numba's compiled code" in listed.stdout
    assert "removed" in cli("cache", "clear").stdout and cli("cache", "list").stdout.startswith("the cache at ")
    assert not [name for _, _, names in os.walk(env["S2S_CACHE_DIR"]) for name in names]  # Numba's files too
    bad = cli("transform", os.path.join(ROOT, "tests", "refused.py"), "--function", "uses_try")
    assert bad.returncode == 1
    assert len(without_progress(bad.stderr).strip().splitlines()) == 1
    assert "refused.py:" in bad.stderr and "`except ... as name` is not supported" in bad.stderr
    debug = cli("--debug", "transform", os.path.join(ROOT, "tests", "refused.py"), "--function", "uses_try")
    assert debug.returncode == 1 and "Traceback" in debug.stderr
    pytree_axes = cli("transform", path, "--mode", "vmap", "--in-axes", "(0, None),0,0,None,None")
    assert pytree_axes.returncode == 1 and "call s2s.vmap(f, in_axes=...) on example arguments" in pytree_axes.stderr
    assert "--in-axes applies to --mode vmap" in cli("transform", path, "--in-axes", "0").stderr


def test_command_line_writes_vmap_as_a_loop_over_the_examples(tmp_path):
    """`s2s transform --mode vmap --in-axes ...`: the module runs, and agrees with a loop of the
    primal over the examples; `s2s show` prints the same text, which is what s2s.jit(s2s.vmap)
    compiles for such arguments."""
    path = os.path.join(ROOT, "examples", "regression.py")
    env = {**os.environ, "S2S_CACHE_DIR": str(tmp_path / "cache")}
    out = tmp_path / "out"
    written = subprocess.run([sys.executable, "-m", "s2s", "transform", path, "--mode", "vmap",
                              "--in-axes", "None,0,0", "-o", str(out)],
                             capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert written.returncode == 0, written.stderr
    assert os.listdir(out) == ["regression_loss_vmap.py"]
    spec = importlib.util.spec_from_file_location("regression_loss_vmap", out / "regression_loss_vmap.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rng = np.random.default_rng(3)
    params, xs, ys = (rng.normal(size=3), 0.5), rng.normal(size=(6, 4, 3)), rng.normal(size=(6, 4))
    (got,) = module.loss_vmap(params, xs, ys)
    spec = importlib.util.spec_from_file_location("regression_example", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    expected = np.array([example.loss(params, xs[b], ys[b]) for b in range(len(xs))])
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    shown = subprocess.run([sys.executable, "-m", "s2s", "show", f"{path}:loss", "--mode", "vmap",
                            "--in-axes", "None,0,0"], capture_output=True, text=True, env=env, cwd=tmp_path,
                           timeout=600)
    assert shown.returncode == 0 and shown.stdout == (out / "regression_loss_vmap.py").read_text()
    compiled = s2s.jit(s2s.vmap(example.loss, in_axes=(None, 0, 0)))
    np.testing.assert_allclose(compiled(params, xs, ys), expected, rtol=1e-12)
    assert compiled.source == shown.stdout


def test_one_function_text_in_two_files_names_its_own_file_and_line(tmp_path):
    # Two scripts run as one module name (both `__main__`, say) with the same function at other
    # lines: each generated module's comments, and so its errors, name its own file and line.
    body = "import numpy as np\n\ndef f(x):\n    return np.sum(np.sin(x) * x)\n"
    sources = {"first.py": body, "second.py": "\n\n\n" + body}
    seen = []
    for name, text in sources.items():
        path = tmp_path / name
        path.write_text(text)
        spec = importlib.util.spec_from_file_location("same_module_name", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        seen.append(s2s.grad(module.f).source)
    assert "(first.py:3)" in seen[0] and "# first.py:4  return" in seen[0]
    assert "(second.py:6)" in seen[1] and "# second.py:7  return" in seen[1]


# ---- a Numba cache that names a generated module no longer there: compiled again -------------

_STALE_PROGRAM = '''
import sys
import cmath

import numpy as np
import s2s
sys.path.insert(0, {here!r})
from stale_module import f, g
p = {{"w": np.ones((2, 2)) * 0.3, "b": np.ones(2)}}
x = np.array([0.5, 1.0])
{calls}
'''
_STALE_MODULE = '''
import cmath

import numpy as np


def h(x, w):
    return np.tanh(x @ w)


def f(p, x):
    return np.sum(h(x, p["w"]) * p["b"])


def g(p, x):
    return np.sum(h(x, p["w"]) ** 2)
'''


def test_a_stale_numba_cache_is_compiled_again(tmp_path):
    import os
    import shutil
    import subprocess
    import sys

    (tmp_path / "stale_module.py").write_text(_STALE_MODULE)
    env = dict(os.environ, S2S_CACHE_DIR=str(tmp_path / "s2s"), NUMBA_CACHE_DIR=str(tmp_path / "numba"))

    def run(calls):
        program = _STALE_PROGRAM.format(here=str(tmp_path), calls=calls)
        done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout.split()

    # grad(f) and grad(g) share h's generated functions; the cache then names both modules
    run("s2s.jit(s2s.grad(f))(p, x); s2s.jit(s2s.grad(g))(p, x); print(s2s.jit(s2s.value_and_grad(g))(p, x)[0])")
    shutil.rmtree(tmp_path / "s2s" / "modules")  # s2s's files gone, Numba's index kept
    value = float(run("print(s2s.jit(s2s.value_and_grad(g))(p, x)[0])")[0])
    h = np.tanh(np.array([0.5, 1.0]) @ (np.ones((2, 2)) * 0.3))
    assert value == pytest.approx(np.sum(h**2))


SHIPPED = '''
import numpy as np


def payment(rate, principal):
    """A package's function, as shipped: no __s2s__ list."""
    return principal * rate / (1.0 - (1.0 + rate) ** -12)


def logged(x):
    with open("/dev/null") as handle:
        handle.read()
    return np.sum(x)
'''


def test_hook_reaches_a_package_without_a_list_lazily_and_never_fails_its_import(tmp_path):
    pkg = tmp_path / "shipped_finance"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(SHIPPED)
    listed = tmp_path / "listed_pkg"
    listed.mkdir()
    (listed / "__init__.py").write_text(SHIPPED + "\n__s2s__ = ['payment', 'logged', 'missing']\n")
    result = run("""
        import os, warnings
        import numpy as np
        import s2s
        s2s.install_import_hook("shipped_*", "listed_pkg")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import shipped_finance, listed_pkg  # (listed_pkg lists a refused function and a missing one)
        print([str(w.message) for w in caught])
        print(os.path.exists(os.path.join(os.path.dirname(shipped_finance.__file__), "__pycache__", "s2s")))
        rate, principal = 0.01, 1000.0
        print(repr(s2s.grad(shipped_finance.payment)(rate, principal)))
        for module in (shipped_finance, listed_pkg):
            try:
                s2s.grad(module.logged)(np.ones(2))
            except s2s.S2SError as error:
                print(str(error).splitlines()[0])
    """, tmp_path, tmp_path / "cache")
    caught, existed_at_import, gradient, *refusals = result.stdout.splitlines()
    assert "listed_pkg.__s2s__ names 'missing', which is not a function" in caught
    assert existed_at_import == "False"  # lazily: nothing was written when shipped_finance was imported
    rate, principal, h = 0.01, 1000.0, 1e-7
    payment = lambda r: principal * r / (1.0 - (1.0 + r) ** -12)  # noqa: E731
    assert float(gradient) == pytest.approx((payment(rate + h) - payment(rate - h)) / (2 * h), rel=1e-6)
    assert [n.split(".")[-3] for n in os.listdir(pkg / "__pycache__" / "s2s")] == ["grad"]  # beside the bytecode
    assert sorted(n.split(".")[-3] for n in os.listdir(listed / "__pycache__" / "s2s")) == ["grad", "jvp"]
    assert len(refusals) == 2 and all("__init__.py:11:5: with statements are not supported" in r for r in refusals)
