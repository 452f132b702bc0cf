"""Every test gets its own XDG state directory: the footprint store and the action log of the machine
running the tests must never leak into (or be written by) a test."""

from __future__ import annotations

import pytest

import sparktop.footprints


@pytest.fixture(autouse=True)
def _private_state_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
    monkeypatch.setattr(sparktop.footprints, "_shared", None)
