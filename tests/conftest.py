"""Every test gets its own XDG state directory: the footprint store and the action log of the machine
running the tests must never leak into (or be written by) a test."""

from __future__ import annotations

import os
import sys

import pytest

# Bytecode caches on, for this suite and the sparktop processes it starts, whatever PYTHONDONTWRITEBYTECODE
# says: without them every worker rewrote the asserts of every test module (~5 s) and every `sparktop` a test
# runs compiled the package again. __pycache__ is ignored by git.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

import sparktop.footprints  # noqa: E402  (after the bytecode switch above)


@pytest.fixture(autouse=True)
def _private_state_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
    monkeypatch.setattr(sparktop.footprints, "_shared", None)
