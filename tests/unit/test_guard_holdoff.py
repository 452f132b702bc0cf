"""The guard's decision over a sequence of ticks (synthetic snapshots, an injected clock, `--dry-run` so that
nothing real is touched): after a stop, nothing more is stopped until the stopped target has gone, its
release has had a grace period to show in the readings, and the trigger still holds after it — a floor
crossed on a reading taken after the grace, PSI held again for `psi_full_seconds` counted from it — and never
before the cooldown; a container recreated under the stopped one's name is no exception."""

from __future__ import annotations

import io
import json
from pathlib import Path

from sparktop.core.snapshot import GIB, ContainerInfo, Pressure, PressureLine, Snapshot
from sparktop.guard.alerts import Alerts
from sparktop.guard.service import RELEASE_GRACE_S, Guard
from sparktop.session.session import Session
from sparktop.settings.guard import GuardSettings
from tests.fixtures.snapshots import snapshot as shared_snapshot

TOTAL = 24 * GIB


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def container(name: str, generation: int = 0) -> ContainerInfo:
    return ContainerInfo(id=f"{name}-{generation}".ljust(64, "0"), name=name)


def snapshot(
    t: float, available: int, containers: list[ContainerInfo], psi_full: float | None = None
) -> Snapshot:
    pressure = None
    if psi_full is not None:
        line = PressureLine(avg10=psi_full, avg60=psi_full, avg300=psi_full, total_us=0)
        pressure = Pressure(some=line, full=line)
    return shared_snapshot(
        t=t,
        hostname="h",
        total=TOTAL,
        available=available,
        pressure=pressure,
        no_gpu="none",
        containers=containers,
    )


class Run:
    """A dry-run guard fed one snapshot a second."""

    def __init__(
        self,
        clock: Clock | None = None,
        state_path: Path | None = None,
        dry_run: bool = True,
        **settings: object,
    ) -> None:
        self.clock = clock or Clock()
        self.session = Session(clock=self.clock)
        self.guard = Guard(
            GuardSettings.model_validate(settings),
            self.session,
            Alerts(journal=False, out=io.StringIO()),
            state_path=state_path,
            dry_run=dry_run,
            clock=self.clock,
        )

    def tick(
        self, available: int, containers: list[ContainerInfo], psi_full: float | None = None
    ) -> list[str]:
        """One second later: what the guard would stop on this tick (labels)."""
        self.clock.t += 1.0
        snap = self.session.ingest(snapshot(self.clock.t, available, containers, psi_full))
        return [a.readings["target"] for a in self.guard.on_snapshot(snap) if a.kind in ("dry-run", "action")]

    @property
    def stops(self) -> list[tuple[float, str]]:
        return [(a.time, str(a.readings["target"])) for a in self.guard.actions]


LOW = 2 * GIB  # under the 4 GB floor
HIGH = 12 * GIB


def test_with_no_cooldown_the_next_stop_waits_for_the_release_and_the_grace() -> None:
    """cooldown_s = 0, the floor crossed throughout (what stopping frees is too little): one stop, then
    nothing while the target is still there, nothing for the grace after it went, then the next listed one
    — not three containers in six seconds."""
    run = Run(floor_gb=4, cooldown_s=0, stop=[{"container": c} for c in ("a", "b", "c")])
    a, b, c = container("a"), container("b"), container("c")
    assert run.tick(LOW, [a, b, c]) == ["a"]
    started = run.clock.t
    for _ in range(3):  # stopping: the container is still there
        assert run.tick(LOW, [a, b, c]) == []
    gone = run.clock.t + 1
    while run.clock.t + 1 < gone + RELEASE_GRACE_S:
        assert run.tick(LOW, [b, c]) == [], run.clock.t - gone
    assert run.tick(LOW, [b, c]) == ["b"]  # the floor still crossed after the grace: the next listed
    assert run.stops[1][0] - started >= 3 + RELEASE_GRACE_S


def test_no_second_stop_once_the_release_lifted_the_floor() -> None:
    run = Run(floor_gb=4, cooldown_s=0, stop=[{"container": "a"}, {"container": "b"}])
    a, b = container("a"), container("b")
    assert run.tick(LOW, [a, b]) == ["a"]
    for _ in range(int(RELEASE_GRACE_S) + 30):
        assert run.tick(HIGH, [b]) == []
    assert len(run.stops) == 1


def test_a_recreated_container_is_not_stopped_again_within_the_grace_nor_the_cooldown() -> None:
    """Stopped, then recreated under the same name (another id) 2 s after it went, with the floor crossed:
    with cooldown_s = 0 it is not stopped again before the grace after the release is over; with a cooldown
    not before the cooldown either."""
    for cooldown in (0.0, 30.0):
        run = Run(floor_gb=4, cooldown_s=cooldown, stop=[{"container": "a"}])
        first, again = container("a", 0), container("a", 1)
        assert run.tick(LOW, [first]) == ["a"]
        acted = run.clock.t
        assert run.tick(LOW, [first]) == []
        gone = run.clock.t + 1
        assert run.tick(LOW, []) == [] and run.tick(LOW, []) == []
        while not run.guard.actions[1:]:
            run.tick(LOW, [again])
            assert run.clock.t < acted + 200
        second = run.guard.actions[1].time
        assert second >= gone + RELEASE_GRACE_S and second >= acted + cooldown, (cooldown, second - acted)


def test_psi_must_hold_again_after_the_grace() -> None:
    """PSI full's avg10 falls slowly after a release: a level still over the trigger from before the stop
    does not stop a second thing; it must hold for psi_full_seconds counted after the grace."""
    run = Run(
        psi_full_level=20,
        psi_full_seconds=5,
        cooldown_s=0,
        stop=[{"container": "a"}, {"container": "b"}],
    )
    a, b = container("a"), container("b")
    for _ in range(5):
        assert run.tick(HIGH, [a, b], psi_full=40) == []
    assert run.tick(HIGH, [a, b], psi_full=40) == ["a"]
    gone = run.clock.t + 1
    # decaying, still over the level for the whole grace and a little after, then under it
    level = 40.0
    while run.clock.t + 1 < gone + RELEASE_GRACE_S + 3:
        assert run.tick(HIGH, [b], psi_full=level) == []
        level = max(21.0, level - 1.5)
    for _ in range(20):
        assert run.tick(HIGH, [b], psi_full=10) == []
    # pressure again, held for psi_full_seconds: the next listed one
    stops_at = None
    for i in range(10):
        if run.tick(HIGH, [b], psi_full=35):
            stops_at = i
            break
    assert stops_at == 5
    assert [label for _, label in run.stops] == ["a", "b"]


def test_the_first_stop_is_not_delayed() -> None:
    run = Run(floor_gb=4, cooldown_s=60, stop=[{"container": "a"}])
    assert run.tick(HIGH, [container("a")]) == []
    assert run.tick(LOW, [container("a")]) == ["a"]  # on the first tick under the floor


def test_a_restarted_guard_waits_out_the_cooldown_of_the_stop_it_made_before(tmp_path: Path) -> None:
    """systemd restarts the guard 3 s after it stopped `a`; `a` is back (recreated) and the floor crossed:
    the new guard does not stop it again before the cooldown of that stop, read from its state file."""
    state = tmp_path / "guard.json"
    clock = Clock()
    before = Run(
        clock=clock, state_path=state, dry_run=False, floor_gb=4, cooldown_s=30, stop=[{"container": "a"}]
    )
    assert before.tick(LOW, [container("a", 0)]) == ["a"]  # no engine here: the stop itself fails, logged
    stopped = clock.t
    before.guard.close()
    clock.t += 2
    after = Run(
        clock=clock, state_path=state, dry_run=False, floor_gb=4, cooldown_s=30, stop=[{"container": "a"}]
    )
    while not after.guard.actions:
        after.tick(LOW, [container("a", 1)])
        assert clock.t < stopped + 100
    assert after.guard.actions[0].time >= stopped + 30
    # a state file that is no guard's (a link, garbage) is no reason to wait
    for planted in (b"not json", b"[1, 2]"):
        state.unlink()
        state.write_bytes(planted)
        fresh = Run(clock=clock, state_path=state, floor_gb=4, cooldown_s=30, stop=[{"container": "a"}])
        assert fresh.tick(LOW, [container("a", 2)]) == ["a"]
    state.unlink()
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps({"last_action": {"kind": "action", "message": "m", "time": clock.t}}))
    state.symlink_to(elsewhere)
    linked = Run(clock=clock, state_path=state, floor_gb=4, cooldown_s=30, stop=[{"container": "a"}])
    assert linked.tick(LOW, [container("a", 3)]) == ["a"]
