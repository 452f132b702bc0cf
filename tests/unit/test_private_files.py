"""Every file sparktop creates: 0600 in a 0700 directory, never through a symlink (issue 27 item 10).

The symlinks are planted in directories the test user owns (not sticky, not world-writable), so the kernel's
fs.protected_symlinks does not apply: what refuses them is sparktop, as it must be for a root sparktop whose
state directory another user could once write."""

from __future__ import annotations

import os
import sqlite3
import stat
import time
from pathlib import Path

import pytest

from sparktop.analysis.history import History
from sparktop.core.private_files import UnsafeFileError, open_private, private_dir
from sparktop.footprints.store import FootprintStore
from sparktop.guard.blackbox import BlackBox
from sparktop.plan.catalog import load_catalog
from sparktop.plan.io import save_plan
from sparktop.plan.items import Plan
from sparktop.session.history_export import write_history
from sparktop.sources.demo import DemoSource
from sparktop.sources.recording import Recorder
from sparktop.stopping.stop_log import ActionLog


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """Where a planted link points: a file another user wants root to create or overwrite."""
    (tmp_path / "victim").mkdir()
    return tmp_path / "victim" / "target"


def test_the_footprint_database_refuses_a_planted_symlink(tmp_path, victim):
    state = tmp_path / "state"
    state.mkdir()
    (state / "footprints.sqlite3").symlink_to(victim)
    store = FootprintStore(state / "footprints.sqlite3")
    assert store.status is not None and "symbolic link" in store.status
    store.record("model", "x", 10**9)
    store.close()
    assert not victim.exists()


@pytest.mark.parametrize("suffix", ["-wal", "-shm", "-journal"])
def test_the_footprint_database_refuses_a_planted_sqlite_side_file(tmp_path, victim, suffix):
    state = tmp_path / "state"
    state.mkdir()
    (state / f"footprints.sqlite3{suffix}").symlink_to(victim)
    store = FootprintStore(state / "footprints.sqlite3", flush_s=0)
    store.record("model", "x", 10**9)
    store.flush()
    store.close()
    assert store.status is not None and "symbolic link" in store.status
    assert not victim.exists()


def test_the_footprint_database_and_its_directory_are_private(tmp_path):
    state = tmp_path / "xdg" / "sparktop"
    store = FootprintStore(state / "footprints.sqlite3", flush_s=0)
    store.record("model", "x", 10**9)
    store.flush()
    for name in ("footprints.sqlite3", "footprints.sqlite3-wal", "footprints.sqlite3-shm"):
        assert mode(state / name) == 0o600, name
    store.close()
    assert mode(state) == 0o700 and mode(state.parent) == 0o700
    assert sqlite3.connect(state / "footprints.sqlite3").execute("SELECT count(*) FROM footprint").fetchone()


def test_an_older_sparktops_state_dir_and_database_are_tightened(tmp_path):
    state = tmp_path / "sparktop"
    state.mkdir(mode=0o755)
    os.chmod(state, 0o755)
    FootprintStore(state / "footprints.sqlite3").close()
    os.chmod(state / "footprints.sqlite3", 0o644)
    FootprintStore(state / "footprints.sqlite3").close()
    assert mode(state) == 0o700 and mode(state / "footprints.sqlite3") == 0o600


def test_the_black_box_never_creates_through_a_planted_segment_name(tmp_path, victim):
    box_dir = tmp_path / "blackbox"
    box_dir.mkdir()
    now = 1_795_000_000.0
    stamp = time.strftime("%Y%m%dT%H%M%S", time.localtime(now))
    planted = box_dir / f"blackbox-{stamp}.jsonl.gz"
    planted.symlink_to(victim)
    box = BlackBox(box_dir, clock=lambda: now, fsync_every_s=0)
    assert box.write(DemoSource(seed=1).sample()), box.problem
    box.close()
    assert not victim.exists()
    assert box.current is not None and box.current != planted and mode(box.current) == 0o600
    assert mode(box_dir) == 0o700


def test_a_recording_is_not_written_through_a_symlink(tmp_path, victim):
    link = tmp_path / "rec.jsonl"
    link.symlink_to(victim)
    for how in ("new", "append", "overwrite"):
        with pytest.raises(UnsafeFileError, match="symbolic link"):
            Recorder(link, mode=how)  # type: ignore[arg-type]
    assert not victim.exists()


def test_a_recording_is_created_0600(tmp_path):
    with Recorder(tmp_path / "new" / "rec.jsonl") as rec:
        rec.write(DemoSource(seed=1).sample())
    assert mode(tmp_path / "new" / "rec.jsonl") == 0o600 and mode(tmp_path / "new") == 0o700


def test_a_saved_plan_is_never_written_through_a_planted_temporary_name(tmp_path, victim):
    (tmp_path / "plan.toml.tmp").symlink_to(victim)
    save_plan(Plan(load_catalog(user_file=False, discover=False)), tmp_path / "plan.toml")
    assert not victim.exists()
    assert mode(tmp_path / "plan.toml") == 0o600
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".plan.toml.")] == []


def test_a_symlink_at_the_plan_itself_is_replaced_not_written_through(tmp_path, victim):
    victim.write_text("root's file\n")
    (tmp_path / "plan.toml").symlink_to(victim)
    save_plan(Plan(load_catalog(user_file=False, discover=False)), tmp_path / "plan.toml")
    assert victim.read_text() == "root's file\n"
    assert not (tmp_path / "plan.toml").is_symlink()


def test_the_history_b_writes_refuses_a_symlink_and_is_private(tmp_path, victim):
    link = tmp_path / "state" / "history.jsonl"
    link.parent.mkdir()
    link.symlink_to(victim)
    with pytest.raises(OSError):
        write_history(History(), link)
    assert not victim.exists()
    write_history(History(), tmp_path / "state" / "h2.jsonl")
    assert mode(tmp_path / "state" / "h2.jsonl") == 0o600 and mode(tmp_path / "state") == 0o700


def test_the_action_log_still_refuses_a_symlink(tmp_path, victim):
    link = tmp_path / "actions.log"
    link.symlink_to(victim)
    problem = ActionLog(link).append("SIGTERM", "pid 1", "sent")
    assert problem is not None and "symbolic link" in problem and not victim.exists()


def test_another_users_file_is_refused(tmp_path):
    # The suite runs as root (README): root can make a file another user owns.
    theirs = tmp_path / "theirs"
    theirs.write_text("")
    os.chown(theirs, 65534, 65534)
    with pytest.raises(UnsafeFileError, match="another user"):
        os.close(open_private(theirs, "append"))
    other_dir = tmp_path / "other"
    other_dir.mkdir()
    os.chown(other_dir, 65534, 65534)
    with pytest.raises(UnsafeFileError, match="another user"):
        private_dir(other_dir)


def test_a_sticky_shared_directory_is_used_but_never_chmodded(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    os.close(open_private(shared / "f", "new"))
    assert mode(shared) == 0o1777 and mode(shared / "f") == 0o600
