"""Every test gets its own XDG state directory: the footprint store and the action log of the machine
running the tests must never leak into (or be written by) a test."""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path

import pytest

# Bytecode caches on, for this suite and the sparktop processes it starts, whatever PYTHONDONTWRITEBYTECODE
# says: without them every worker rewrote the asserts of every test module (~5 s) and every `sparktop` a test
# runs compiled the package again. __pycache__ is ignored by git.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

import sparktop.footprints.store  # noqa: E402  (after the bytecode switch above)
from tests.fixtures.home import use_private_home  # noqa: E402

# Garbage collection, tuned for a test run: each UI test builds and drops a whole Textual app, hundreds of
# thousands of objects, and with the default thresholds (700, 10, 10) a full collection ran every few hundred
# milliseconds over everything the worker held. On tests/ui/test_app.py + test_whatif.py, time in gc fell from
# 7.7 s to 4.0 s of 20 s. Within a test the collector is paused altogether (_collect_garbage_between_tests
# below): these thresholds pace it between tests and while the worker collects.
gc.set_threshold(20_000, 20, 20)


def pytest_collection_finish(session: pytest.Session) -> None:
    """What is loaded by now (modules, test functions, catalogs) lives until the worker ends: keep it out
    of every later collection."""
    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True)
def _private_state_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
    monkeypatch.setattr(sparktop.footprints.store, "_shared", None)


@pytest.fixture(autouse=True)
def _collect_garbage_between_tests(request: pytest.FixtureRequest):
    """No automatic collection while a test runs; the first allocation after it collects all it dropped.
    A UI test keeps a whole Textual app alive while it runs, and every collection in it walked that app again
    to free little: on tests/ui/test_app.py, test_whatif.py and test_settings_ui.py, CPU fell from 24.3 s to
    22.2 s and peak RSS from 178 to 102 MB. Tests that count objects call gc.collect() themselves; a test
    marked `automatic_gc` (one that checks what sparktop does with the collector) keeps it running."""
    if request.node.get_closest_marker("automatic_gc") or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@pytest.fixture
def private_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No user catalog and no local models but what a test puts there: the catalog is the built-in one.
    (The What-if tests use it for every test: `pytestmark = pytest.mark.usefixtures("private_home")`.)"""
    return use_private_home(monkeypatch, tmp_path / "home")
