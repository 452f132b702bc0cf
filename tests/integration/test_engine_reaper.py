"""The suite's stale-engine reaper touches only this checkout's engines, never another suite's in /tmp."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from tests.integration.engine import TMP_PREFIX, engines_dir, reap_stale_engines


def _stale_engine(parent: Path) -> Path:
    """An engine directory as a killed session leaves it: no live dockerd, quiet for an hour."""
    root = Path(tempfile.mkdtemp(prefix=TMP_PREFIX, dir=parent))
    (root / "docker.pid").write_text("999999999\n")  # above pid_max: never a live process
    (root / "dockerd.log").write_text("")
    hour_ago = time.time() - 3600
    for path in (root / "dockerd.log", root):
        os.utime(path, (hour_ago, hour_ago))
    return root


def test_reaper_leaves_other_suites_engines_in_tmp_alone() -> None:
    elsewhere = _stale_engine(Path(tempfile.gettempdir()))  # where another checkout's suite might have one
    ours = _stale_engine(engines_dir())
    try:
        removed = reap_stale_engines()
        assert str(ours) in removed and not ours.exists()
        assert elsewhere.exists() and str(elsewhere) not in removed
    finally:
        shutil.rmtree(elsewhere, ignore_errors=True)
        shutil.rmtree(ours, ignore_errors=True)


def test_engines_are_made_in_this_checkouts_directory() -> None:
    base = engines_dir()
    assert base.parent == Path(tempfile.gettempdir()) and base.stat().st_uid == os.geteuid()
    assert engines_dir() == base  # the same directory every run of this checkout
