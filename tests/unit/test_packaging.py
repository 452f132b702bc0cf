"""`pip install .` (README's first command) installs only the packages pyproject.toml lists; the tests run
on an editable install, which would hide a package missing from that list. So every package is listed."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import runpy
import sys
import tomllib
from pathlib import Path

import pytest

from tests.fixtures.forked_main import run_forked
from tests.fixtures.package_source import import_nodes, package_files

ROOT = Path(__file__).resolve().parents[2]


def test_every_package_is_listed_for_a_plain_install() -> None:
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {
        ".".join(init.parent.relative_to(ROOT).parts) for init in (ROOT / "sparktop").rglob("__init__.py")
    }
    assert found - listed == set(), f"not installed by `pip install .`: {sorted(found - listed)}"


def project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def runtime_requirements() -> list[str]:
    """What `pip install 'sparktop[web]'` installs: the dependencies and the web extra's."""
    return [*project()["dependencies"], *project()["optional-dependencies"]["web"]]


def declared_distributions() -> set[str]:
    names = set()
    for requirement in runtime_requirements():
        name = re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0]
        names.add(canonical(name))
    return names


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def imported_top_level_modules() -> set[str]:
    modules = set()
    for path in package_files():
        for node in import_nodes(path):
            if isinstance(node, ast.Import):
                modules.update(alias.name.split(".")[0] for alias in node.names)
            elif node.level == 0 and node.module:
                modules.add(node.module.split(".")[0])
    return modules - set(sys.stdlib_module_names) - {"sparktop"}


def test_every_third_party_import_is_a_declared_dependency() -> None:
    # rich and requests were imported by sparktop and installed only because textual and docker-py need them.
    by_module = importlib.metadata.packages_distributions()
    undeclared = {
        module: by_module.get(module, ["?"])
        for module in imported_top_level_modules()
        if not {canonical(d) for d in by_module.get(module, [])} & declared_distributions()
    }
    assert undeclared == {}


def test_every_dependency_has_a_floor_that_exists() -> None:
    # A floor may not install beside the rest (a former dependency's 1.0.0 needed textual<0.87): CI installs
    # the floors, scripts/floors.py
    for requirement in runtime_requirements():
        assert ">=" in requirement, requirement


def test_the_licence_is_declared_in_spdx_and_shipped() -> None:
    assert project()["license"] == "MIT"
    assert project()["license-files"] == ["LICENSE"]
    assert "MIT License" in (ROOT / "LICENSE").read_text()
    assert "License :: " not in " ".join(project()["classifiers"])  # PEP 639: the expression alone says it


def test_python_dash_m_sparktop_runs_the_program(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """sparktop/__main__.py run as `-m` runs it (runpy, in this process), exiting with main()'s status."""
    monkeypatch.setattr(sys, "argv", ["sparktop", "--demo", "--once"])
    with pytest.raises(SystemExit) as exited:
        runpy.run_module("sparktop", run_name="__main__", alter_sys=True)
    out, err = capsys.readouterr()
    assert exited.value.code == 0, err
    assert out.startswith("pool ")


# --- the web extra: `pip install sparktop` leaves out textual-serve and its aiohttp server ---

WEB_EXTRA = ("textual_serve", "aiohttp")


def test_the_web_extra_is_in_the_test_extra() -> None:
    # CI installs .[test]: the browser-view tests need textual-serve.
    extras = project()["optional-dependencies"]
    assert "sparktop[web]" in extras["test"]
    assert {canonical(re.split(r"[<>=]", r)[0]) for r in extras["web"]} == {"textual-serve", "aiohttp"}


def test_without_the_web_extra_the_dashboard_runs_and_web_says_the_pip_command(tmp_path: Path) -> None:
    """As after a plain `pip install sparktop`: each run in a child where the extra's packages (one of them,
    or both) cannot be imported (tests/fixtures/forked_main.py: one interpreter, not three)."""
    argvs = [["web", "--demo", "--port", "1"] for _ in WEB_EXTRA] + [["--demo", "--once"]]
    blocked = [(missing,) for missing in WEB_EXTRA] + [WEB_EXTRA]
    runs, preloaded = run_forked(tmp_path, argvs, blocked=blocked, cwd=ROOT)
    assert preloaded == [], f"importing sparktop.commands.main loaded the web extra: {preloaded}"
    *web_runs, dashboard = runs
    for missing, run in zip(WEB_EXTRA, web_runs, strict=True):
        # EXIT_CANNOT_START, before the port is even tried; one line, no traceback
        assert run.status == 2, (missing, run.stderr)
        assert run.stdout == "", missing
        assert run.stderr.count("\n") == 1, (missing, run.stderr)
        assert run.stderr == (
            f"sparktop web: the browser view needs the web extra ({missing} is not installed): "
            f"{sys.executable} -m pip install 'sparktop[web]'\n"
        )
    assert dashboard.status == 0, f"the dashboard without the extra: {dashboard.stderr}"
    assert dashboard.stdout.startswith("pool "), dashboard.stdout[:200]


def test_only_the_browser_view_imports_the_extra() -> None:
    importers = set()
    for path in package_files():
        for node in import_nodes(path):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            if any(name.split(".")[0] in WEB_EXTRA for name in names):
                importers.add(path.relative_to(ROOT).as_posix())
    assert importers == {
        "sparktop/web/browser_server.py"
    }  # which only `sparktop web` imports, once it has checked
