"""A replay's speed and seek (sparktop/session/playback.py) on real recordings written by the recorder (issue
23: the fastest replay was `--interval 0.1` and there was no seek)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from sparktop.core.snapshot import Snapshot, process_key
from sparktop.session.playback import Playback
from sparktop.session.session import Session
from sparktop.sources.replay import ReplaySource, parse_clock
from tests.fixtures.recordings import T0, demo_snapshots, played_from_the_start, write_recording

EVERY = 10.0  # seconds between snapshots: 48 of them are 7:50, past the creep window
N = 48


@pytest.fixture(scope="module")
def snapshots() -> list[Snapshot]:
    return _snapshots()


@functools.cache
def _snapshots() -> list[Snapshot]:
    return demo_snapshots(N, EVERY)


@functools.cache
def played_to(target: float) -> Session:
    """The reference for a seek to `target` s into the module's recording (played_from_the_start), worked out
    once per worker: both formats' tests compare with it, and only read it."""
    return played_from_the_start(_snapshots(), T0 + target)


@pytest.fixture(scope="module", params=["run.jsonl", "run.jsonl.gz"])
def recording(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The module's recording in each format, written once: the tests that play it only read it."""
    path = tmp_path_factory.mktemp("playback") / request.param
    write_recording(path, _snapshots())
    return path


@pytest.fixture(scope="module")
def plain_recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The module's recording, plain, for the tests that need one format only (and only read it)."""
    path = tmp_path_factory.mktemp("playback") / "run.jsonl"
    write_recording(path, _snapshots())
    return path


@functools.cache
def _seconds() -> list[Snapshot]:
    """50 s of the demo one second apart: the training run's creep alert comes and goes."""
    return demo_snapshots(50, 1.0)


@pytest.fixture(scope="module")
def seconds_recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("playback") / "seconds.jsonl"
    write_recording(path, _seconds())
    return path


def same_state(a: Session, b: Session) -> None:
    assert a.latest is not None and b.latest is not None
    assert a.latest.timestamp == b.latest.timestamp
    assert a.history.times() == b.history.times()
    assert a.history.used() == b.history.used()
    assert a.history.known_keys() == b.history.known_keys()
    for key in b.history.known_keys():
        assert a.history.series(key) == b.history.series(key), key
        assert a.rate_per_min(key) == b.rate_per_min(key), key
    for process in b.latest.processes:
        key = process_key(process)
        assert a.process_rate_per_min(key) == b.process_rate_per_min(key), key
    assert list(a.pool_series.available_pct) == list(b.pool_series.available_pct)
    assert a.level == b.level and a.creep == b.creep and a.forecast == b.forecast
    assert a.ingested == b.ingested


@pytest.fixture
def opened() -> Iterator[Callable[..., Playback]]:
    """Opens a recording's playback with its checkpoints started; closed after the test."""
    made: list[Playback] = []

    def open_playback(path: Path, every: int = 7, start: bool = True) -> Playback:
        playback = Playback(ReplaySource(path), Session, checkpoint_every=every)
        made.append(playback)
        if start:
            playback.start()
        return playback

    yield open_playback
    for playback in made:
        playback.close()
        playback.source.close()


@pytest.mark.parametrize("target", [65.0, 300.0, 470.0])
def test_a_seek_holds_what_playing_from_the_start_would(
    recording: Path, snapshots: list[Snapshot], target: float, opened: Callable[..., Playback]
) -> None:
    playback = opened(recording)
    playback.request_seek(target)
    session = playback.seek()
    assert session is not None
    same_state(session, played_to(target))
    if target >= 250:
        assert playback.index.best(T0 + target) is not None  # it started from a checkpoint, not the start
        assert session.creep, "the demo's training run creeps: the test must compare real alerts"
    landed = math.floor(target / EVERY) * EVERY  # the last snapshot at or before the target
    assert session.latest is not None and session.latest.timestamp == T0 + landed
    batch = playback.take_batch()  # and it plays on from there
    if landed < (N - 1) * EVERY:
        assert [s.timestamp for s in batch.snapshots] == [T0 + landed + EVERY]
    else:
        assert batch.ended is not None


def test_seeking_back_after_playing_on(
    recording: Path, snapshots: list[Snapshot], opened: Callable[..., Playback]
) -> None:
    playback = opened(recording, every=5)
    playback.speed = 36
    session = Session()
    for snapshot in playback.take_batch().snapshots:
        session.ingest(snapshot, analyse=False)
    assert session.latest is not None and session.latest.timestamp == T0 + 35 * EVERY
    playback.request_seek(playback.position_s(session.latest) - 20)
    playback.request_seek(playback.position_s(session.latest) - 30)
    assert playback.position_s(session.latest) == 300.0  # a key pressed again counts from the seek under way
    back = playback.seek()
    assert back is not None
    same_state(back, played_to(300))  # the reference the seeks on compare with too


def test_speed_plays_that_many_snapshots_a_tick_then_ends(
    recording: Path, opened: Callable[..., Playback]
) -> None:
    playback = opened(recording, start=False)
    assert playback.progress(None).describe().startswith("0:00 / ")
    assert playback.faster() == 2 and playback.faster() == 5 and playback.slower() == 2
    playback.speed = 30
    first = playback.take_batch()
    assert len(first.snapshots) == 30 and first.ended is None
    assert "· 30× ·" in playback.progress(first.snapshots[-1]).describe()
    rest = playback.take_batch()
    assert len(rest.snapshots) == N - 30 and rest.ended is None  # the last ones; the end comes next tick
    end = playback.take_batch()
    assert end.snapshots == [] and end.ended is not None and "end of recording" in end.ended
    for _ in range(20):
        playback.faster()
    assert playback.speed == 600
    for _ in range(20):
        playback.slower()
    assert playback.speed == 1


def test_seek_targets_are_clamped_and_count_from_the_end_when_negative(
    recording: Path, opened: Callable[..., Playback]
) -> None:
    playback = opened(recording)
    length = (N - 1) * EVERY
    playback.index.wait_past(math.inf, lambda: False)  # a compressed file's length: known once read through
    for asked, expected in ((-60.0, length - 60), (math.inf, length), (-1e9, 0.0), (1e9, length)):
        playback.request_seek(asked)
        assert playback.pending_s == expected
        session = playback.seek()
        assert session is not None and session.latest is not None
        assert session.latest.timestamp == T0 + expected
        assert playback.pending_s is None


def test_a_newer_seek_replaces_one_not_started(recording: Path, opened: Callable[..., Playback]) -> None:
    playback = opened(recording)
    playback.request_seek(100)
    playback.request_seek(200)
    session = playback.seek()
    assert session is not None and session.latest is not None and session.latest.timestamp == T0 + 200
    assert playback.seek() is None  # nothing more wanted


def test_checkpoints_are_thinned_to_their_budget(
    plain_recording: Path, snapshots: list[Snapshot], opened: Callable[..., Playback]
) -> None:
    playback = opened(plain_recording, every=2, start=False)
    one = Session()
    one.ingest(snapshots[0].model_copy(deep=True))
    playback.index.budget = 6 * len(one.checkpoint())  # room for about five
    playback.start()
    playback.index.wait_past(math.inf, lambda: False)
    assert playback.index.nbytes <= playback.index.budget
    assert playback.index.every > 2
    playback.request_seek(303)
    session = playback.seek()
    assert session is not None
    same_state(session, played_to(300))


def test_a_bad_line_read_again_after_a_seek_is_one_problem(
    tmp_path: Path, snapshots: list[Snapshot], opened: Callable[..., Playback]
) -> None:
    path = tmp_path / "bad.jsonl"
    write_recording(path, snapshots[:6])
    lines = path.read_text().splitlines(keepends=True)
    lines.insert(2, "not json\n")
    path.write_text("".join(lines))
    playback = opened(path)
    playback.speed = 10
    assert len(playback.take_batch().snapshots) == 6
    playback.request_seek(0)
    assert playback.seek() is not None  # holds the first snapshot: the bad line is read again after it
    assert len(playback.take_batch().snapshots) == 5
    assert (
        len(playback.source.warnings) == 1
        and "bad.jsonl line 3: not a snapshot" in playback.source.warnings[0]
    )


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 90.0), ("1:30", 90.0), ("1:02:03", 3723.0), ("-5:00", -300.0), ("0", 0.0), (" 2:00 ", 120.0)],
)
def test_times_are_read_as_the_header_writes_them(text: str, seconds: float) -> None:
    assert parse_clock(text) == seconds


@pytest.mark.parametrize("text", ["", "1:", "1:60", "a", "1:2:3:4", "nan", "inf", "--5"])
def test_a_bad_time_is_one_clear_error(text: str) -> None:
    with pytest.raises(ValueError, match="not a time"):
        parse_clock(text)


def test_a_recording_only_played_is_read_once(plain_recording: Path, opened: Callable[..., Playback]) -> None:
    """The checkpoint pass read the whole file again beside the playback (15–27 s of a core and ~23 MiB for an
    hour at 1 s) for every replay, seek or not: it starts with the first seek."""
    playback = opened(plain_recording, every=2, start=False)
    for _ in range(3):
        playback.faster()
        assert playback.take_batch().snapshots
    assert not playback.index.started and playback.index.nbytes == 0
    playback.request_seek(0)
    playback.index.wait_past(math.inf, lambda: False)
    assert playback.index.done and playback.index.nbytes > 0


@pytest.mark.parametrize("target", [36.0, 42.0])
def test_a_seek_shows_a_creep_alert_that_playing_there_holds(
    seconds_recording: Path, target: float, opened: Callable[..., Playback]
) -> None:
    """The demo's training run climbs ~1.3 GiB/min, near the fast rule's line: the rule raises it at 30 s,
    not again until ~48 s, and the creep hold keeps the alert on show in between (a blinking alert reads as
    noise). A seek into that stretch analysed only its last snapshot and showed no alert that playing
    there showed."""
    playback = opened(seconds_recording, every=10)
    playback.request_seek(target)
    session = playback.seek()
    assert session is not None
    played = played_from_the_start(_seconds(), T0 + target)
    assert played.creep, "the reference must hold an alert here, or this compares nothing"
    same_state(session, played)
