"""Fixtures for the dashboard tests: see demo_app.py for the deterministic app."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from sparktop.ui.app import SparktopApp
from tests.ui.demo_app import make_app


@pytest.fixture
def app_factory() -> Callable[..., SparktopApp]:
    return make_app


@pytest.fixture
def private_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No user catalog and no local models but what a test puts there: the catalog is the built-in one.
    (The What-if tests use it for every test: `pytestmark = pytest.mark.usefixtures("private_home")`.)"""
    home = tmp_path / "home"
    (home / ".config").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    for name in ("OLLAMA_MODELS", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "LLAMA_CACHE",
                 "SPARKTOP_GGUF_PATH"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    return home
