"""The Textual-free session: what every view shows, fed one snapshot at a time (demo snapshots, a recording,
and snapshots that break accounting)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparktop.analysis.accounting import account
from sparktop.analysis.pressure import PressureLevel
from sparktop.commands.main import main
from sparktop.commands.record import record
from sparktop.core.snapshot import GB, GIB, ProcessInfo, Snapshot
from sparktop.session.session import Session
from sparktop.sources.demo import DemoSource
from sparktop.sources.replay import ReplaySource
from sparktop.sources.snapshot_source import SourceExhausted
from tests.fixtures.snapshots import snapshot as make_snapshot


class Clock:
    def __init__(self, t: float = 1000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_ingest_accounts_each_snapshot_once_and_keeps_a_recorded_accounting() -> None:
    source = DemoSource("default", seed=1)
    raw = source.sample()
    assert raw.accounting is None  # sources leave it to the session
    session = Session()
    snap = session.ingest(raw)
    assert snap is raw and session.latest is raw
    assert snap.accounting == account(snap.memory, snap.gpu, snap.processes, snap.containers)
    acct = snap.accounting
    assert acct is not None
    assert sum(c.total for c in acct.consumers) + acct.unattributed == snap.memory.used
    # a snapshot that already has accounting (a recording) keeps it
    recorded = source.sample().model_copy(update={"accounting": acct})
    assert session.ingest(recorded).accounting is acct


def test_accounting_that_fails_is_one_line_and_everything_unattributed(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    def buggy(*_args: object, **_kwargs: object) -> None:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(
        "sparktop.analysis.accounting.account", buggy
    )  # a bug in accounting must not end the session
    snap = Session().ingest(DemoSource().sample())
    assert snap.accounting is not None
    acct = snap.accounting
    assert (acct.used, acct.unattributed, acct.consumers) == (snap.memory.used, snap.memory.used, [])
    assert snap.errors == [
        "accounting failed (ZeroDivisionError: division by zero); the pool is shown as unattributed"
    ]


def test_history_pressure_creep_trends_and_series_follow_every_sample() -> None:
    source = DemoSource("default", seed=0)
    session = Session(safe_bytes=80 * GB, max_bytes=100 * GB)
    for _ in range(280):  # the series keep 240: full, and 40 over (at 260 the demo run had just dropped)
        session.ingest(source.sample())
    assert len(session.history) == 280 and session.ingested == 280
    assert session.level == PressureLevel.OK and session.assessment is not None
    assert [a.label for a in session.creep] == ["ssd-tetris-train-1"]
    train = next(c for c in session.latest.containers if c.name == "ssd-tetris-train-1")  # type: ignore[union-attr]
    rate = session.rate_per_min(f"container:{train.id}")
    assert rate is not None and 0.8 * GB < rate < 2.0 * GB  # the demo's run creeps ~1.3 GB/min
    pid = next(p for p in session.latest.processes if p.container_id == train.id and p.gpu_bytes)  # type: ignore[union-attr]
    from sparktop.core.snapshot import process_key

    assert session.process_rate_per_min(process_key(pid)) is not None
    gpu = session.latest.gpu.gpus[0]  # type: ignore[union-attr]
    util = session.gpu_series.get(gpu.uuid or "0", "utilization_pct")
    assert len(util) == 240 and util[-1] == gpu.utilization_pct
    assert len(session.pool_series.available_pct) == 240
    assert session.pool_series.psi_some[-1] == session.latest.memory.pressure.some.avg10  # type: ignore[union-attr]


def test_critical_is_announced_once_per_entry() -> None:
    session = Session()
    critical, calm = DemoSource("critical", seed=0), DemoSource("idle", seed=0)
    assert not session.entered_critical()  # nothing yet
    for _ in range(30):
        session.ingest(critical.sample())
    assert session.level == PressureLevel.CRITICAL
    assert session.entered_critical() and not session.entered_critical()
    session.ingest(calm.sample().model_copy(update={"timestamp": critical.now + 100}))
    assert session.level != PressureLevel.CRITICAL
    assert not session.entered_critical()
    for _ in range(30):
        session.ingest(critical.sample().model_copy(update={"timestamp": critical.now + 200}))
    assert session.entered_critical()


def test_stale_late_and_ended() -> None:
    clock = Clock()
    session = Session(clock=clock)
    assert session.stale is None and not session.check_late(1.0)  # nothing shown yet: nothing is late
    session.ingest(DemoSource().sample())
    session.fail("OSError: /proc unreadable")
    assert session.stale == "OSError: /proc unreadable" and session.latest is not None
    session.ingest(DemoSource().sample())
    assert session.stale is None
    clock.t += 4.0
    assert not session.check_late(1.0)
    clock.t += 2.0
    assert session.check_late(1.0) and session.stale == "no data for 6 s (the source is slow)"
    assert not session.check_late(10.0) or clock.t - 1000.0 > 30  # a long interval waits 3 intervals
    session.ingest(DemoSource().sample())
    session.end()
    assert session.source_ended and session.stale == "end of recording"


def test_record_writes_what_the_session_shows(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    count = record(DemoSource("default", seed=2), path, interval=0.01, duration=0.05)
    assert count == 5
    with ReplaySource(path) as replay:
        first = replay.sample()
    assert first.accounting is not None
    again = Session().ingest(DemoSource("default", seed=2).sample())
    assert first.accounting == again.accounting


def test_once_json_carries_the_accounting(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["--once", "--json", "--demo"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["accounting"]["used"] == data["memory"]["used"]
    assert [s["collector"] for s in data["services"]] == ["servers"]  # the demo's simulated Ollama


def test_a_warm_up_analysed_once_at_the_end_matches_one_analysed_every_tick() -> None:
    """The dashboard's warm-up feeds hundreds of samples with analyse=False and analyses once: creep and
    the forecast are a function of the history (and of the creep hold's last 30 s of ticks, which a replay's
    seek analyses one by one: test_playback), so the result is the same as analysing every tick where the
    rule raises its alerts now. 200 samples (the dashboard's warm-up is 420): past the steady rule's 180-s
    window, creep raised by tick 12."""
    every, once = Session(), Session()
    source = DemoSource("default", seed=3)
    for _ in range(200):
        snapshot = every.ingest(source.sample())
        # The same sample, accounted again by the other session (a second demo source with the same seed
        # made the same samples at twice the cost).
        once.ingest(snapshot.model_copy(update={"accounting": None}), analyse=False)
    assert once.creep == [] and once.forecast is None  # nothing analysed yet
    once.analyse()
    assert every.creep and [c.label for c in once.creep] == [c.label for c in every.creep]
    assert [c.rate_bytes_per_s for c in once.creep] == [c.rate_bytes_per_s for c in every.creep]
    assert once.forecast == every.forecast


def test_a_held_creep_alert_names_its_process_by_what_it_runs_now() -> None:
    """A process that grew as `wrapper.sh` and then exec'd python3 (same PID, same start time: the same
    consumer): an alert held while the noisy climb goes on (the rule passes and fails from tick to tick)
    says python3, as the bar and the tables do. (An alert is held only while the climb goes on: once it
    stops, it goes.)"""
    import random

    from sparktop.analysis.trend import detect_creep

    total = 32 * GIB
    session = Session(safe_bytes=20 * GIB, max_bytes=24 * GIB)
    rng = random.Random(4)

    def climb(t: int) -> int:  # +1.3 GB/min with noise: the fast rule blinks on it
        return GIB + int(1.3e9 / 60 * t + rng.uniform(-30e6, 30e6))

    for t in range(60):
        session.ingest(_one_process(t, climb(t), "wrapper.sh"))
    assert [a.label for a in session.creep] == ["wrapper.sh (4242)"]
    held = 0
    for t in range(60, 120):  # it exec'd python3 and goes on climbing
        session.ingest(_one_process(t, climb(t), "python3"))
        raised = detect_creep(session.history, session.safe_bytes, session.max_bytes, total)
        if session.creep and not raised:
            held += 1
            assert [a.label for a in session.creep] == ["python3 (4242)"]  # held, under its name of now
    assert held, "the rule should blink on this climb (else this test shows nothing)"


def test_replay_end_names_a_consumer_that_arrived_mid_recording(tmp_path: Path) -> None:
    """Issue 32 item 4: `record --demo contention --duration 135` replayed ended with "grew: unattributed
    +92 MiB": the training run that arrived at 1:00 holding ~19 GiB was counted from its first reading, not
    from nothing, and was not named. Made as `record` makes it (the demo source, the recorder), replayed as
    `--replay` plays it."""
    path = tmp_path / "c.jsonl"
    # 135 ticks (the demo's clock moves 1 s a sample, whatever the interval): `--duration 135`.
    assert record(DemoSource("contention", seed=0), path, interval=0.001, duration=0.135, fsync=False) == 135
    session = Session()
    replay = ReplaySource(path)
    while True:
        try:
            session.ingest(replay.sample())
        except SourceExhausted as exc:
            session.end(str(exc))
            break
    message = session.end_message
    grew = message.split("grew: ", 1)[1].split(";")[0]
    first = grew.split(", ")[0]
    assert first.startswith("ssd-tetris-train-1 (new) +"), message
    size, unit = first.rsplit("+", 1)[1].split()
    assert unit == "GiB" and float(size) > 10, message


def _one_process(t: int, rss: int, name: str = "job") -> Snapshot:
    """A 32 GiB machine at second `t` with one host process (PID 4242, the same start) of `rss` bytes, 4 GiB
    used besides."""
    process = ProcessInfo(pid=4242, name=name, cmdline=name, rss=rss, start_time=500.0, start_ticks=50_000)
    return make_snapshot(
        t=1000.0 + t, total=32 * GIB, used=4 * GIB + rss, hostname="h", no_gpu="none", processes=[process]
    )


def _one_process_snapshots(sizes: list[int]) -> list[Snapshot]:
    """One snapshot a second of _one_process at these sizes."""
    return [_one_process(t, rss) for t, rss in enumerate(sizes)]


@pytest.mark.parametrize("shape", ["climb-then-stop", "one-off-step", "noise"])
def test_catching_up_holds_no_alert_that_ticking_would_not(shape: str) -> None:
    """`catch_up` (a replay's seek) analyses the creep hold's last seconds so that a held alert shows; it must
    not show one where ticking shows none: a climb that stopped (the hold lets go), a one-off step, noise on a
    flat line. Compared with a session ticked through the same snapshots at several moments."""
    import random

    from sparktop.core.snapshot import GIB

    rng = random.Random(7)
    if shape == "climb-then-stop":  # +1.3 GB/min with noise (the fast rule blinks on it), flat from 60 s
        sizes = [GIB + int(1.3e9 / 60 * min(t, 60) + rng.uniform(-30e6, 30e6)) for t in range(100)]
    elif shape == "one-off-step":
        sizes = [GIB + (3 * GIB if t >= 40 else 0) for t in range(100)]
    else:
        sizes = [GIB + int(rng.uniform(-50e6, 50e6)) for t in range(100)]
    snapshots = _one_process_snapshots(sizes)
    ticked = Session(safe_bytes=20 * GIB, max_bytes=24 * GIB)
    shown = {}
    for i, snapshot in enumerate(snapshots):
        ticked.ingest(snapshot.model_copy(deep=True))
        shown[i] = [a.key for a in ticked.creep]
    for i in (45, 59, 75, 99):
        caught = Session(safe_bytes=20 * GIB, max_bytes=24 * GIB)
        caught.catch_up((s.model_copy(deep=True) for s in snapshots[: i + 1]), until=snapshots[i].timestamp)
        assert [a.key for a in caught.creep] == shown[i], (shape, i)
    assert shown[99] == []  # none of these alerts at the end: a stopped climb, a step, noise
    if shape == "climb-then-stop":
        assert shown[45], "the climb must alert while it goes on, or this compares nothing"
