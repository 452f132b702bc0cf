"""Where the tests' helpers live (tests/fixtures/__init__.py says the rule), checked on the test tree itself:

- no module of the suite or of bench/ imports from a `test_*.py` module: a helper two test files need is moved
  to a fixtures module, so running, renaming or deleting one test file never breaks another;
- the stand-ins for a machine without a GPU or without Docker (`NoGpu`, `NoDocker`, and their `_`-named or
  suffixed variants) are written once, in tests/fixtures/sources.py."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
FIXTURES = TESTS / "fixtures"
STAND_IN = re.compile(r"_?No(Gpu|Docker)")


def python_files() -> list[Path]:
    return sorted([*TESTS.rglob("*.py"), *(REPO / "bench").rglob("*.py")])


def package_of(path: Path) -> str:
    """The package a relative import in `path` starts from (`tests.ui` for tests/ui/test_x.py)."""
    return ".".join(path.relative_to(REPO).parent.parts)


def imported_modules(source: str | ast.Module, package: str) -> set[str]:
    """Every module `source` imports from, at module level or inside a function; relative imports resolved
    from `package`. `from tests.ui import test_x` counts as importing tests.ui.test_x."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source) if isinstance(source, str) else source):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            base = ".".join([*parts, node.module] if node.module else parts)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def stand_ins(source: str | ast.Module) -> list[ast.ClassDef]:
    tree = ast.parse(source) if isinstance(source, str) else source
    return [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and STAND_IN.match(n.name)]


@functools.cache
def named_test_module() -> re.Pattern[str]:
    """Any name of one of the suite's test modules (test_whatif, ...) as a whole word: every way to import
    one (`import tests.ui.test_x`, `from .test_x import y`, `from tests.ui import test_x`) writes it."""
    names = sorted({path.stem for path in TESTS.rglob("test_*") if path.suffix in (".py", "")})
    return re.compile(r"\b(?:" + "|".join(map(re.escape, names)) + r")\b")


# Both checks read every file, but parse only those that could hold what they look for: parsing all ~200 was
# ~0.85 s of CPU (in each worker that ran either check); a text search of them is ~0.07 s, and ~35 are parsed.
@functools.cache
def source(path: Path) -> str:
    return path.read_text(encoding="utf-8")


@functools.cache
def tree(path: Path) -> ast.Module:
    return ast.parse(source(path))


def is_test_module(name: str) -> bool:
    return name.startswith("tests.") and name.rsplit(".", 1)[-1].startswith("test_")


def test_no_module_imports_a_test_module() -> None:
    names = named_test_module()
    reaches = [
        f"{path.relative_to(REPO)} imports {name}"
        for path in python_files()
        if names.search(source(path))  # no test module named: none imported
        for name in sorted(imported_modules(tree(path), package_of(path)))
        if is_test_module(name)
    ]
    where = "move the helper to a fixtures module (tests/fixtures/__init__.py)"
    assert not reaches, where + ":\n" + "\n".join(reaches)


def test_the_no_gpu_and_no_docker_stand_ins_are_written_once_in_the_fixtures() -> None:
    elsewhere = [
        f"{path.relative_to(REPO)}:{node.lineno} class {node.name}"
        for path in python_files()
        if FIXTURES not in path.parents and STAND_IN.search(source(path))  # a class so named names it
        for node in stand_ins(tree(path))
    ]
    assert not elsewhere, "use tests/fixtures/sources.py:\n" + "\n".join(elsewhere)
    assert {n.name for n in stand_ins((FIXTURES / "sources.py").read_text())} >= {"NoGpu", "NoDocker"}


def test_the_checks_find_what_they_look_for() -> None:
    """Absolute, relative, nested and package-member imports of a test module; a stand-in by another name."""
    probe = (
        "from tests.unit.test_sampler import build\n"
        "import tests.terminal.test_terminal_restore\n"
        "def f():\n    from .test_whatif import open_whatif\n"
        "from tests.ui import test_hostile_text, demo_app\n"
        "from ..unit import fake_nvml\n"
        "class _NoDockerHere: pass\n"
        "class NoGpuDemo: pass\n"
        "class Node: pass\n"
    )
    found = {name for name in imported_modules(probe, "tests.ui") if is_test_module(name)}
    assert found == {
        "tests.unit.test_sampler",
        "tests.terminal.test_terminal_restore",
        "tests.ui.test_whatif",
        "tests.ui.test_hostile_text",
    }
    assert "tests.unit.fake_nvml" in imported_modules(probe, "tests.ui")
    assert [c.name for c in stand_ins(probe)] == ["_NoDockerHere", "NoGpuDemo"]
    # The text searches that choose what to parse find each of these, and pass over a name that only
    # starts like a test module's.
    names = named_test_module()
    imports = [line for line in probe.splitlines() if "import" in line and "fake_nvml" not in line]
    assert all(names.search(line) for line in imports), imports
    assert not names.search("def test_whatif_keys(): pass\nfrom tests.ui import demo_app")
    assert all(STAND_IN.search(line) for line in probe.splitlines() if line.startswith("class _No"))
