"""The documentation runs as written: every ```python block of README.md and of each page of
docs/pages/ is executed, a page's blocks in order in one namespace, in a fresh Python process
(cwd a temporary directory, S2S_CACHE_DIR and the suite's NUMBA_* settings inherited), and what
each block prints is compared with the ```text block that follows it. The site builds with
`mkdocs build --strict` (warnings are errors, mkdocstrings' docstring warnings included).

The fences a page may use:
- ```python: run. A block that prints must be followed (blank lines apart) by a ```text block
  holding exactly what it printed (trailing spaces aside); print rounded numbers, so that the
  output does not depend on the last bits of a float.
- ```python-generated: an excerpt of generated code, not run: its lines must appear, in order and
  contiguous, in `s2s.source(NAME)`, where `s2s.source(NAME)` is the last such call named in the
  prose between the previous block and the excerpt; a line `...` skips any number of lines.
- ```python-norun: not run (a page says why in a comment inside the block); fewer than 10 in all.
- ```text, ```bash and the rest: not run.

`python tests/test_docs.py --update PAGE.md ...` writes what each block prints into its ```text
block; an excerpt that no longer matches is shown in the failure with the whole new source.
"""

import doctest
import importlib
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES_DIR = ROOT / "docs" / "pages"
DOCUMENTS = [ROOT / "README.md"] + sorted(PAGES_DIR.glob("*.md"))
FENCE = re.compile(r"^(\s*)```\s*([\w-]*)")
SOURCE_CALL = re.compile(r"s2s\.source\((\w+)\)")
MARK = "@@docs-block "


@dataclass
class Block:
    kind: str
    start: int  # the line of the opening fence, 1-based
    lines: list
    indent: str
    prose_before: str  # the text between the previous fence and this one


def read_blocks(path):
    lines = path.read_text().splitlines()
    blocks, k, prose_start = [], 0, 0
    while k < len(lines):
        match = FENCE.match(lines[k])
        if not match:
            k += 1
            continue
        indent, kind = match.group(1), match.group(2) or "text"
        end = k + 1
        while end < len(lines) and not lines[end].strip().startswith("```"):
            end += 1
        assert end < len(lines), f"{path.name}:{k + 1}: a code block that is never closed"
        body = [line[len(indent):] if line.startswith(indent) else line for line in lines[k + 1:end]]
        blocks.append(Block(kind, k + 1, body, indent, "\n".join(lines[prose_start:k])))
        k = prose_start = end + 1
    return lines, blocks


def script_of(lines, blocks):
    """The page's ```python blocks as one script whose line numbers are the page's, so that a
    traceback (and s2s's messages and generated comments) name the page's lines."""
    script = [""] * len(lines)
    script[0] = "import sys as _docs_sys"
    for number, block in enumerate(blocks):
        if block.kind == "python":
            script[block.start - 1] = f"_docs_sys.stdout.write({MARK + str(number)!r} + '\\n')"
            script[block.start:block.start + len(block.lines)] = block.lines
    return "\n".join(script) + "\n"


def outputs_by_block(stdout):
    printed, current = {}, None
    for line in stdout.splitlines():
        if line.startswith(MARK):
            current = int(line[len(MARK):])
            printed[current] = []
        elif current is not None:
            printed[current].append(line)
    return printed


def expected_outputs(blocks):
    """{index of a python block: the lines of the ```text block after it}"""
    expected = {}
    for k, block in enumerate(blocks[:-1]):
        after = blocks[k + 1]
        if block.kind == "python" and after.kind == "text" and after.prose_before.strip() == "":
            expected[k] = after.lines
    return expected


def normalised(lines):
    lines = [line.rstrip() for line in lines]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def excerpt_checks(blocks):
    """The lines that print, in the page's process, whether each ```python-generated excerpt is in
    the source of the function the prose before it names."""
    checks = []
    for k, block in enumerate(blocks):
        if block.kind != "python-generated":
            continue
        names = SOURCE_CALL.findall(block.prose_before)
        assert names, f"line {block.start}: a python-generated excerpt without `s2s.source(NAME)` in the prose before it"
        checks.append((k, names[-1], block.lines))
    return checks


EXCERPT_CHECK = '''
def _docs_excerpt(number, name, excerpt):
    import s2s
    source = [line.rstrip() for line in s2s.source(globals()[name]).splitlines()]
    chunks, chunk = [], []
    for line in excerpt:
        if line.strip() == "...":
            chunks.append(chunk)
            chunk = []
        else:
            chunk.append(line.rstrip())
    chunks.append(chunk)
    at = 0
    for chunk in chunks:
        if not chunk:
            continue
        found = next((k for k in range(at, len(source) - len(chunk) + 1) if source[k:k + len(chunk)] == chunk), None)
        if found is None:
            print("excerpt " + str(number) + " differs from s2s.source(" + name + "):\\n"
                  + "\\n".join(source))
            return
        at = found + len(chunk)
    print("excerpt " + str(number) + " ok")
'''


def run_document(path, tmp_path):
    lines, blocks = read_blocks(path)
    script = script_of(lines, blocks)
    checks = excerpt_checks(blocks)
    if checks:
        script += EXCERPT_CHECK + f"_docs_sys.stdout.write({MARK + 'excerpts'!r} + '\\n')\n" + "".join(
            f"_docs_excerpt({number}, {name!r}, {excerpt!r})\n" for number, name, excerpt in checks)
    name = path.stem.lower().replace("-", "_") + ".py"
    (tmp_path / name).write_text(script)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    done = subprocess.run([sys.executable, name], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    return blocks, checks, done


def document_id(path):
    return path.name if path.parent == ROOT else f"pages/{path.name}"


def runnable(path):
    return any(block.kind in ("python", "python-generated") for block in read_blocks(path)[1])


@pytest.mark.parametrize("path", [path for path in DOCUMENTS if runnable(path)], ids=document_id)
def test_code_blocks_run_and_print_what_the_page_shows(path, tmp_path):
    blocks, checks, done = run_document(path, tmp_path)
    assert done.returncode == 0, f"{path.name}: its code failed (line numbers are the page's):\n{done.stderr[-6000:]}"
    printed = outputs_by_block(done.stdout.split(MARK + "excerpts\n")[0])
    expected = expected_outputs(blocks)
    for k, block in enumerate(blocks):
        if block.kind != "python":
            continue
        got = normalised(printed.get(k, []))
        if k in expected:
            assert got == normalised(expected[k]), (
                f"{path.name}:{block.start}: the block printed\n" + "\n".join(got)
                + "\nwhere the page shows\n" + "\n".join(expected[k])
                + f"\n(if the new output is right: python tests/test_docs.py --update {path.relative_to(ROOT)})")
        else:
            assert not got, f"{path.name}:{block.start}: the block prints, but no ```text block follows it:\n" + "\n".join(got)
    if checks:
        verdicts = done.stdout.split(MARK + "excerpts\n")[1]
        for number, name, _ in checks:
            assert f"excerpt {number} ok" in verdicts.splitlines(), (
                f"{path.name}:{blocks[number].start}: the excerpt is not in s2s.source({name}):\n{verdicts}")


def test_fences_follow_the_rules():
    unrun = []
    for path in DOCUMENTS:
        for block in read_blocks(path)[1]:
            if block.kind in ("python", "python-generated"):
                assert block.indent == "", f"{path.name}:{block.start}: a python block must start at the margin"
            if block.kind == "python-norun":
                unrun.append(f"{path.name}:{block.start}")
                assert block.lines and block.lines[0].startswith("#"), (
                    f"{path.name}:{block.start}: a python-norun block starts with a comment that says why")
    assert len(unrun) < 10, unrun
    assert sum(runnable(path) for path in DOCUMENTS) >= 15


@pytest.mark.parametrize("module", ["s2s.random", "s2s.tree_util", "s2s.options"])
def test_docstring_examples_on_the_api_page_run(module):
    # (the API page shows these modules' docstrings; tests/test_doctests.py runs the transforms', lax's and pmap's)
    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0, module


LINK = re.compile(r"\]\(([^)#\s]+)(#[^)\s]*)?\)")


def test_relative_links_reach_files():
    for path in DOCUMENTS:
        for target, _ in LINK.findall(path.read_text()):
            if "://" in target or target.startswith("mailto:"):
                continue
            assert (path.parent / target).exists(), f"{path.name}: the link {target} leads nowhere"


def test_the_site_builds_without_warnings(tmp_path):
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "docs" / "mkdocs.yml"),
                           "-d", str(tmp_path / "site")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert (tmp_path / "site" / "api" / "index.html").exists()


def update(path, tmp_path):
    """Write what each block prints into the ```text block after it (read the diff before committing:
    the blocks' asserts check the numbers, the page shows them)."""
    blocks, _, done = run_document(path, tmp_path)
    if done.returncode != 0:
        raise SystemExit(f"{path}: its code failed:\n{done.stderr[-6000:]}")
    printed = outputs_by_block(done.stdout.split(MARK + "excerpts\n")[0])
    lines = path.read_text().splitlines()
    for k in sorted(expected_outputs(blocks), reverse=True):
        after = blocks[k + 1]
        lines[after.start:after.start + len(after.lines)] = normalised(printed.get(k, []))
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    import tempfile

    if sys.argv[1:2] != ["--update"] or len(sys.argv) < 3:
        raise SystemExit("usage: python tests/test_docs.py --update README.md docs/pages/PAGE.md ...")
    for name in sys.argv[2:]:
        with tempfile.TemporaryDirectory() as tmp:
            update(Path(name).resolve(), Path(tmp))
