"""The house's layers, checked on the source itself: data flows one way, sources → snapshot → analysis →
session → views, and only `sparktop/ui/` may use Textual. The rules below are the reference (the design
notes' "Layers" section says the same in prose; those notes are not part of this repository).

- static: every `import sparktop.X` in every module (at module level or inside a function) is read with `ast`
  and checked against the layer rules below (one test per rule over every module, naming every module that
  breaks it: a test per module was ~330 tests, whose per-test overhead was most of this file's CPU);
- at run time: a fresh interpreter imports every module outside `ui/` and must not have loaded Textual; the
  seams split out of ui/ (ALONE) are also imported each alone (in a child forked before any sparktop module
  is loaded), so none leans on another's imports."""

from __future__ import annotations

import ast
import graphlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.package_source import PACKAGE, import_nodes, package_files

# One rule per package: the sparktop packages it may import (besides its own). Floors, from the ground up:
# core → settings → collect → sources; analysis (on core alone) → footprints → session, plan, stopping →
# guard, exporter, cluster, web → ui → commands. README's Development section says the same in prose.
MAY_IMPORT: dict[str, tuple[str, ...]] = {
    # The snapshot models, formatting, safe text, private files, the one HTTP client: the ground floor.
    "core": (),
    "settings": ("core",),
    # The readers of the machine: no analysis, no source, nothing that keeps state above a tick.
    "collect": ("core", "settings"),
    # Where snapshots come from (live, demo, replay, recording): built on the readers.
    "sources": ("core", "settings", "collect"),
    # Pure functions over snapshots and plans: they read the snapshot's models and nothing else.
    "analysis": ("core",),
    # What this machine measured (peaks, slowdowns), kept in SQLite.
    "footprints": ("core", "settings", "analysis"),
    "session": ("core", "settings", "collect", "sources", "analysis", "footprints"),
    "plan": ("core", "settings", "analysis", "footprints"),
    "stopping": ("core", "settings", "collect", "sources", "analysis"),
    "guard": ("core", "settings", "collect", "sources", "analysis", "footprints", "session", "stopping"),
    "exporter": ("core", "settings", "collect", "sources", "analysis", "footprints", "session"),
    "cluster": ("core", "settings", "collect", "sources", "analysis", "exporter"),
    "web": ("core", "settings", "exporter"),
    "ui": (
        "core", "settings", "collect", "sources", "analysis", "footprints", "session", "plan", "stopping",
        "exporter", "cluster",
    ),
    "commands": (
        "core", "settings", "collect", "sources", "analysis", "footprints", "session", "plan", "stopping",
        "guard", "exporter", "cluster", "web", "ui",
    ),
}  # fmt: skip
# Finer rules inside a package: a module path prefix and the sparktop modules it must never import.
FORBIDDEN: dict[str, tuple[str, ...]] = {
    # The tables' column specs: the config validates column names against them, so they know nothing above.
    "sparktop.core.columns": ("sparktop.core.snapshot",),
    # Leaves: the snapshot names its GPU's reasons with clock_reasons; every layer quotes text with safe_text.
    "sparktop.core.clock_reasons": ("sparktop",),
    "sparktop.core.safe_text": ("sparktop",),
    # The demo's scenarios are data that sources/demo/simulation.py plays: they import no reader.
    "sparktop.sources.demo.scenarios": ("sparktop.collect", "sparktop.sources.demo.simulation"),
    # The tables' rows, from a snapshot and its analysis: a view model that any view may draw, above nothing
    # that keeps state (the session feeds it its rates) and below every view and command.
    "sparktop.session.rows": (
        "sparktop.session.session", "sparktop.session.runner", "sparktop.session.playback",
    ),
    # What this machine knows is looked up before the evaluation and passed in: the look-ups never call back.
    "sparktop.plan.measured": ("sparktop.plan.evaluate",),
    # The catalog is what the planner knows, below the planner's API; the estimator is below the catalog.
    "sparktop.plan.catalog": (
        "sparktop.plan.evaluate", "sparktop.plan.io", "sparktop.plan.items", "sparktop.plan.measured",
        "sparktop.plan.live_gpu", "sparktop.plan.verdict",
    ),
    "sparktop.plan.estimate": ("sparktop.plan.catalog", "sparktop.plan.evaluate", "sparktop.plan.verdict"),
    # Inside ui/: the app sits on its screens and widgets, which never import it (the dashboard screen reads
    # its app through screens/dashboard.DashboardHost); a widget never imports a screen.
    "sparktop.ui.screens": ("sparktop.ui.app",),
    "sparktop.ui.widgets": ("sparktop.ui.app", "sparktop.ui.screens"),
}  # fmt: skip
# One subject on several floors keeps one name: commands/X.py runs the command X, settings/X.py validates its
# table of the config, ui/screens/dashboard.py draws the dashboard the command starts.
SAME_JOB = ("dashboard", "guard", "plan")
# Modules that were split out of ui/ so they can be used without Textual: each is imported alone as well.
ALONE = (
    "sparktop.stopping.stop_book",
    "sparktop.core.columns",
    "sparktop.session.rows",
    "sparktop.session.session",
)
# The entry points that start a Textual app (imported lazily, inside the function that runs it).
MAY_IMPORT_UI = (
    "sparktop.ui",
    "sparktop.commands.main",
    "sparktop.commands.dashboard",
    "sparktop.commands.web",
)
# The commands sit on top of everything: they may import any layer, and only the entry point imports them.
COMMANDS = "sparktop.commands"
MAY_IMPORT_COMMANDS = (COMMANDS, "sparktop.__main__")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> list[tuple[str, Path]]:
    return sorted((module_name(p), p) for p in package_files())


def imported(path: Path) -> frozenset[str]:
    names: set[str] = set()
    for node in import_nodes(path):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif node.module and node.level == 0:
            names.add(node.module)
    return frozenset(names)


def within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def package_of(name: str) -> str | None:
    """`core` for sparktop.core.snapshot; None for the package face (sparktop, sparktop.__main__)."""
    parts = name.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in MAY_IMPORT) else None


def test_the_root_holds_folders_and_its_package_face_only() -> None:
    loose = sorted(p.name for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert not loose, f"modules loose in sparktop/: {loose} (each belongs in a folder)"
    folders = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists())
    assert folders == sorted(MAY_IMPORT), (
        f"packages without a rule here, or rules without a package: {folders}"
    )


def test_no_module_name_does_two_jobs() -> None:
    """A module's name says its job: no two modules share a file name (a package's __init__ aside), and
    "model" is kept for ML models."""
    seen: dict[str, list[str]] = {}
    for name, path in modules():
        if path.name != "__init__.py":
            seen.setdefault(path.stem, []).append(name)
    twice = {stem: names for stem, names in seen.items() if len(names) > 1 and stem not in SAME_JOB}
    assert not twice, f"module names used twice: {twice}"
    assert not [n for n, p in modules() if p.stem in ("model", "models")], "a module named model outside ML"


def layer_problems(name: str, found: frozenset[str]) -> list[str]:
    """What in `found` (the sparktop modules and packages the module `name` imports) breaks a rule."""
    problems = []
    package = package_of(name)
    if package is not None:
        allowed = {package, *MAY_IMPORT[package]}
        bad = sorted(i for i in found if within(i, "sparktop") and package_of(i) not in allowed | {None})
        if bad:
            problems.append(f"{name} ({package}/ may import {sorted(MAY_IMPORT[package])}) imports {bad}")
    for layer, forbidden in FORBIDDEN.items():
        if within(name, layer):
            bad = sorted(i for i in found for f in forbidden if within(i, f) and not within(i, layer))
            if bad:
                problems.append(f"{name} ({layer}) imports {bad}")
    if not any(within(name, allowed) for allowed in MAY_IMPORT_UI):
        textual = sorted(i for i in found if within(i, "textual") or within(i, "sparktop.ui"))
        if textual:
            problems.append(f"{name} imports {textual}: only sparktop/ui/ may use Textual")
    return problems


def test_no_module_imports_a_higher_layer() -> None:
    problems = [problem for name, path in modules() for problem in layer_problems(name, imported(path))]
    assert not problems, "\n".join(problems)


def test_only_the_entry_point_imports_the_commands() -> None:
    problems = []
    for name, path in modules():
        if any(within(name, allowed) for allowed in MAY_IMPORT_COMMANDS):
            continue
        commands = sorted(i for i in imported(path) if within(i, COMMANDS))
        if commands:
            problems.append(f"{name} imports {commands}: only sparktop/__main__.py and the commands may")
    assert not problems, "\n".join(problems)


# A fresh interpreter takes pydantic in first (third-party, ~0.1 s of CPU that every import below needs), then
# forks one child per seam in ALONE, which imports that seam alone, and last imports every module outside ui/
# itself: one interpreter instead of five, each seam still imported with no other sparktop module loaded.
IMPORTS = """
import importlib, json, os, sys
import pydantic


def textual_loaded():
    return sorted(m for m in sys.modules if m == "textual" or m.startswith("textual."))


def report(name, names):
    try:
        for each in names:
            importlib.import_module(each)
    except Exception as exc:
        return {"name": name, "error": f"{type(exc).__name__}: {exc}"}
    return {"name": name, "textual": textual_loaded(), "sparktop_before": before}


before = sorted(m for m in sys.modules if m == "sparktop" or m.startswith("sparktop."))
alone, everything = json.loads(sys.argv[1])
for name in alone:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        os.write(write, json.dumps(report(name, [name])).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        print(pipe.read())
    os.waitpid(pid, 0)
print(json.dumps(report("everything", everything)))
"""


def import_reports() -> dict[str, dict]:
    """What importing each seam in ALONE alone, and then every module outside ui/, loaded (see IMPORTS)."""
    known = {m for m, _ in modules()}
    for name in ALONE:
        assert name in known, f"{name} is not a module any more: update ALONE"
    everything = [m for m in sorted(known) if not any(within(m, a) for a in MAY_IMPORT_UI)]
    out = subprocess.run(
        [sys.executable, "-c", IMPORTS, json.dumps([ALONE, everything])],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    reports = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    return {r["name"]: r for r in reports}


def test_importing_everything_outside_ui_does_not_load_textual_nor_does_each_seam_alone() -> None:
    reports = import_reports()
    assert sorted(reports) == sorted([*ALONE, "everything"]), reports
    for name in [*ALONE, "everything"]:
        got = reports[name]
        assert "error" not in got, f"importing {name} alone failed: {got.get('error')}"
        assert got["sparktop_before"] == [], f"{name} was not imported alone: {got['sparktop_before']}"
        what = "a module outside ui/" if name == "everything" else f"importing {name} alone"
        assert got["textual"] == [], f"Textual was loaded by {what}: {got['textual'][:5]}"


def test_no_import_loops() -> None:
    """No two modules need each other, not even a package and its own submodule (catalog/__init__ and
    catalog/loader did: `from sparktop.catalog import discovery` inside the module the package imports)."""
    known = {name for name, _ in modules()}
    graph: dict[str, set[str]] = {}
    for name, path in modules():
        targets: set[str] = set()
        for node in import_nodes(path):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif node.module and node.level == 0:
                # `from a.b import c` runs a.b (its __init__ for a package) and, if c is a module, a.b.c
                targets.add(node.module)
                targets.update(f"{node.module}.{alias.name}" for alias in node.names)
        graph[name] = {t for t in targets if t in known and t != name}
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        pytest.fail(f"import loop: {' -> '.join(exc.args[1])}")
