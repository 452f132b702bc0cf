"""Textual's private API, where sparktop uses it (issue #14): only in sparktop/ui/widgets/datatable_cache.py
(DataTable's render caches) and sparktop/ui/styles_cache_leak.py (a Textual leak worked around), only the
names they declare, and each of them still there, with the same signature, in the installed Textual,
whose version is inside the range pyproject.toml pins. A Textual upgrade that changes one of them fails here,
naming it, instead of silently drawing stale cells or re-rendering every tick."""

from __future__ import annotations

import ast
import functools
import gc
import importlib
import inspect
import linecache
import pkgutil
import re
import tomllib
import weakref
from importlib.metadata import version
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version
from textual.app import App, ComposeResult
from textual.color import Color
from textual.geometry import Region
from textual.widgets import DataTable

import sparktop
import sparktop.ui
from sparktop.ui import styles_cache_leak
from sparktop.ui.widgets import datatable_cache
from sparktop.ui.widgets.datatable_cache import (
    PRIVATE_API,
    PRIVATE_ATTRIBUTES,
    PRIVATE_METHODS,
    ContentCachedDataTable,
)

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def bare(signature: inspect.Signature) -> str:
    """A signature's parameters (names, kinds, defaults) without annotations."""
    return str(
        signature.replace(
            parameters=[p.replace(annotation=inspect.Parameter.empty) for p in signature.parameters.values()],
            return_annotation=inspect.Signature.empty,
        )
    )


def textual_requirements() -> tuple[Requirement, Requirement]:
    """(the runtime dependency, the test extra's pin) on textual, from pyproject.toml."""
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    runtime = [Requirement(r) for r in project["dependencies"] if Requirement(r).name == "textual"]
    tests = [
        Requirement(r) for r in project["optional-dependencies"]["test"] if Requirement(r).name == "textual"
    ]
    assert len(runtime) == 1 and len(tests) == 1, "pyproject.toml: one textual requirement in each list"
    return runtime[0], tests[0]


# --- the version -------------------------------------------------------------------------------------------


def test_installed_textual_is_in_the_pinned_range() -> None:
    runtime, tests = textual_requirements()
    installed = Version(version("textual"))
    assert runtime.specifier.contains(installed), (
        f"textual {installed} is installed, outside the runtime pin {runtime}: the private DataTable API "
        "datatable_cache.py relies on is checked only for the pinned versions"
    )
    assert tests.specifier.contains(installed), f"textual {installed} is not the test pin {tests}"


def test_runtime_pin_is_the_range_the_tests_cover() -> None:
    """From the version the tests run on up to, not including, the next minor: a patch release is taken,
    a minor one (which may change private API) waits until the tests ran on it and both pins moved."""
    runtime, tests = textual_requirements()
    (pin,) = tests.specifier
    assert pin.operator == "==", f"the test extra pins textual exactly: {tests}"
    tested = Version(pin.version)
    nxt = f"{tested.major}.{tested.minor + 1}"
    expected = f">={tested},<{nxt}"
    assert str(runtime.specifier) == expected or set(str(runtime.specifier).split(",")) == set(
        expected.split(",")
    ), f"pyproject.toml: runtime textual is {runtime.specifier}, the tests cover {expected}"


# --- each private name, in the installed Textual -----------------------------------------------------------


def test_datatable_still_has_each_private_method_with_the_same_signature() -> None:
    for name, expected in PRIVATE_METHODS.items():
        method = getattr(DataTable, name, None)
        assert callable(method), (
            f"textual {version('textual')}: DataTable.{name} is gone; datatable_cache.py overrides or uses it"
        )
        found = bare(inspect.signature(method))
        assert found == expected, (
            f"textual {version('textual')}: DataTable.{name}{found} changed, datatable_cache.py expects "
            f"{name}{expected}"
        )


def test_our_overrides_take_what_datatable_passes() -> None:
    for name in PRIVATE_METHODS:
        ours = ContentCachedDataTable.__dict__.get(name)
        if ours is None:
            continue  # called, not overridden
        assert bare(inspect.signature(ours)) == PRIVATE_METHODS[name], (
            f"ContentCachedDataTable.{name} does not take DataTable.{name}'s parameters"
        )


def test_datatable_still_has_each_private_attribute() -> None:
    table = DataTable()
    kinds = {
        "_row_locations": ("get", "get_key"),
        "_column_locations": ("get", "get_key"),
        "_data": ("get", "items"),
    }
    for name in PRIVATE_ATTRIBUTES:
        assert hasattr(table, name), (
            f"textual {version('textual')}: DataTable has no attribute {name} any more; datatable_cache.py "
            "reads or sets it"
        )
        for method in kinds.get(name, ()):
            assert callable(getattr(getattr(table, name), method, None)), (
                f"textual {version('textual')}: DataTable.{name} has no {method}() (datatable_cache uses it)"
            )
    hash(table._pseudo_class_state)  # both are parts of cache keys
    hash(table._show_hover_cursor)
    assert isinstance(table._require_update_dimensions, bool)


def test_the_styles_cache_leak_is_still_there_to_work_around() -> None:
    """styles_cache_leak.py clears an lru_cache that keeps StylesCache objects alive (Textual issue #6665).
    When Textual fixes it (or renames it), this fails: then the module and its calls can go."""
    module = importlib.import_module(styles_cache_leak.PRIVATE_MODULE)
    owner, method = styles_cache_leak.LEAKY_CACHE.split(".")
    cache = getattr(getattr(module, owner, None), method, None)
    assert callable(getattr(cache, "cache_clear", None)), (
        f"textual {version('textual')}: {styles_cache_leak.LEAKY_CACHE} is no longer an lru_cache; "
        "styles_cache_leak.py has nothing to clear"
    )

    class Probe:  # the leak: the cache's key holds `self`
        pass

    probe = Probe()
    grey, red = Color(20, 20, 20), Color(200, 0, 0)
    cache(probe, grey, red)
    held = weakref.ref(probe)
    del probe
    gc.collect()
    leaking = held() is not None
    styles_cache_leak.release_retained_styles()
    gc.collect()
    assert leaking, f"textual {version('textual')} lets go of StylesCache objects: remove styles_cache_leak"
    assert held() is None, "release_retained_styles() did not let go of what the cache held"


def test_no_private_textual_module_is_imported_elsewhere() -> None:
    """`from textual._x import` / `textual.widgets._x` only in the declared modules."""
    allowed = {Path(styles_cache_leak.__file__).resolve()}
    pattern = re.compile(r"^\s*(?:from|import)\s+textual(?:\.\w+)*\._\w+", re.MULTILINE)
    found = sorted(
        str(path.relative_to(Path(sparktop.__file__).parent))
        for path in Path(sparktop.__file__).parent.rglob("*.py")
        if path.resolve() not in allowed and pattern.search(path.read_text())
    )
    assert not found, f"private Textual modules imported in {found}: use public API or declare a workaround"
    assert pattern.search(Path(styles_cache_leak.__file__).read_text())  # the scan finds what it looks for


# --- nothing else uses Textual's private API ---------------------------------------------------------------


@functools.cache
def _class_spans(path: str) -> dict[str, tuple[int, int]]:
    """Each class's qualified name in one source file → its (first, last) line: one parse per file, where
    inspect.getsource re-parses and re-tokenizes the whole module for
    every class (1.4 s of CPU under cProfile)."""
    spans: dict[str, tuple[int, int]] = {}

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                name = f"{prefix}{child.name}"
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                spans.setdefault(name, (first, child.end_lineno or child.lineno))
                walk(child, f"{name}.")
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                walk(child, f"{prefix}{child.name}.<locals>.")

    walk(ast.parse(Path(path).read_text()), "")
    return spans


def class_source(cls: type) -> str | None:
    """`cls`'s source text (what inspect.getsource gives), or None where it has no source file."""
    try:
        path = inspect.getsourcefile(cls)
    except TypeError:
        return None
    if path is None or (span := _class_spans(path).get(cls.__qualname__)) is None:
        return None
    lines = linecache.getlines(path)
    return "".join(lines[span[0] - 1 : span[1]])


def textual_private_names(cls: type) -> set[str]:
    """Private names the Textual classes in `cls`'s MRO define: class attributes and methods, and instance
    attributes their code assigns (`self._x = ...`)."""
    names: set[str] = set()
    for base in cls.__mro__:
        if base.__module__.startswith("textual"):
            names |= _own_private_names(base)
    return names


@functools.cache
def _own_private_names(base: type) -> frozenset[str]:
    """One Textual class's own private names (cached: inspect.getsource re-reads the whole module, and App,
    Widget and DOMNode are in every widget's MRO)."""
    names = {n for n in vars(base) if n.startswith("_") and not n.startswith("__")}
    source = class_source(base)
    if source is None:
        return frozenset(names)
    names |= set(re.findall(r"self\.(_[A-Za-z0-9]\w*)\s*(?::[^=\n]*)?=(?!=)", source))
    return frozenset(names)


def textual_private_uses() -> dict[str, set[str]]:
    """For each class in sparktop/ui that derives from Textual: the Textual private names it overrides or
    uses through `self.` or `super().`."""
    modules = [
        importlib.import_module(m.name) for m in pkgutil.walk_packages(sparktop.ui.__path__, "sparktop.ui.")
    ]
    uses: dict[str, set[str]] = {}
    for module in [sparktop.ui, *modules]:
        for cls in vars(module).values():
            if not inspect.isclass(cls) or cls.__module__ != module.__name__:
                continue
            if not any(b.__module__.startswith("textual") for b in cls.__mro__[1:]):
                continue
            theirs = textual_private_names(cls)
            source = class_source(cls)
            assert source is not None, f"no source found for {cls.__module__}.{cls.__qualname__}"
            # Methods it defines (Textual's metaclass sets private class attributes on every subclass: those
            # are not ours) and names it reaches through self. or super().
            defined = re.findall(r"^\s*(?:async\s+)?def\s+(_[A-Za-z0-9]\w*)\s*\(", source, re.MULTILINE)
            reached = re.findall(r"(?:self|super\(\))\.(_[A-Za-z0-9]\w*)", source)
            found = {n for n in (*defined, *reached) if n in theirs}
            if found:
                uses[f"{module.__name__}.{cls.__qualname__}"] = found
    return uses


def test_only_datatable_cache_uses_textual_private_api() -> None:
    uses = textual_private_uses()
    cache = f"{datatable_cache.__name__}.{ContentCachedDataTable.__qualname__}"
    elsewhere = {name: sorted(found) for name, found in uses.items() if name != cache}
    assert not elsewhere, (
        f"Textual private API used outside datatable_cache.py: {elsewhere}; use public API, or move it there "
        "and declare it"
    )
    undeclared = sorted(uses.get(cache, set()) - set(PRIVATE_API))
    assert not undeclared, (
        f"datatable_cache.py uses {undeclared}: add them to PRIVATE_METHODS / PRIVATE_ATTRIBUTES"
    )
    # The check itself finds what the cache module does use (a scan that finds nothing proves nothing).
    assert {"_render_cell", "_render_line", "_data"} <= uses[cache]


# --- and the cache still does its job on this Textual ------------------------------------------------------


class Tables(App[None]):
    def __init__(self, table: DataTable) -> None:
        super().__init__()
        self.table = table

    def compose(self) -> ComposeResult:
        yield self.table


async def renders_after_one_change(table: DataTable, monkeypatch) -> tuple[int, int]:
    """(cells, lines) DataTable renders itself after one cell of a drawn 30×4 table changed."""
    calls = {"cell": 0, "line": 0}
    render_cell, render_line = DataTable._render_cell, DataTable._render_line

    def counted_cell(self, *args, **kwargs):
        calls["cell"] += 1
        return render_cell(self, *args, **kwargs)

    def counted_line(self, *args, **kwargs):
        calls["line"] += 1
        return render_line(self, *args, **kwargs)

    async with Tables(table).run_test(size=(80, 40)) as pilot:
        for c in "abcd":
            table.add_column(c, key=c)
        for r in range(30):
            table.add_row(*(f"{c}{r:02}" for c in "abcd"), key=str(r))
        await pilot.pause()
        region = Region(0, 0, *table.size)
        table.render_lines(region)
        monkeypatch.setattr(DataTable, "_render_cell", counted_cell)
        monkeypatch.setattr(DataTable, "_render_line", counted_line)
        table.update_cell("7", "c", "X07")  # same width: no column re-measured
        table.render_lines(region)
        # What it draws is what DataTable draws.
        assert "X07" in "".join(s.text for s in table.render_lines(region))
    return calls["cell"], calls["line"]


async def test_one_changed_cell_renders_one_cell_and_one_line(monkeypatch) -> None:
    cells, lines = await renders_after_one_change(ContentCachedDataTable(), monkeypatch)
    assert (cells, lines) == (1, 1), (
        f"after one update_cell the content cache let DataTable render {cells} cells and {lines} lines "
        "(1 and 1 expected): Textual's rendering changed under datatable_cache.py"
    )
    # DataTable alone renders them all: what the cache is for.
    cells, lines = await renders_after_one_change(DataTable(), monkeypatch)
    assert cells >= 30 * 4 and lines >= 30


async def test_mark_dimensions_changed_makes_datatable_remeasure() -> None:
    table = ContentCachedDataTable()
    async with Tables(table).run_test(size=(80, 20)) as pilot:
        table.add_column("a", key="a")
        table.add_row("x", key="1")
        await pilot.pause()
        before = table.virtual_size.width
        table.columns["a"].content_width += 10  # type: ignore[index]
        await pilot.pause()
        assert table.virtual_size.width == before  # DataTable does not notice by itself
        table.mark_dimensions_changed()
        await pilot.pause()
        assert table.virtual_size.width == before + 10
