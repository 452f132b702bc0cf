"""The dashboard as a player of a real recording: speed keys, seeks forward and back (paused too), the start
and end, `--speed` / `--start`, and no player keys on a live source (issue 23: the fastest replay was
`--interval 0.1`, and there was no seek)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from textual.pilot import Pilot

from sparktop.core.snapshot import Snapshot
from sparktop.settings.config import Config
from sparktop.sources.replay import ReplaySource
from sparktop.ui.app import SparktopApp
from tests.fixtures.recordings import T0, demo_snapshots, played_from_the_start, write_recording
from tests.ui.demo_app import footer_keys, make_app, status_text

EVERY = 10.0
N = 48  # 7:50 of recording: past the creep window, so creep alerts are there to compare
# Wide enough for the status line's player part on one line, and the least height the dashboard draws at
# (terminal_check.MIN_HEIGHT): these tests read the status line, the session and dialogs, not the panels,
# and a tick or a seek draws a third less at 18 rows than at 36.
SIZE = (160, 18)

# `player` below: one app on the module's recording for the tests that only play it, seek in it and read the
# status line, the session and dialogs (a seek to the start gives each a fresh session); a test about a file
# of its own, the command line, the timer or what a fresh player has not read yet starts an app of its own.
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def snapshots() -> list[Snapshot]:
    return demo_snapshots(N, EVERY)


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory, snapshots: list[Snapshot]) -> Path:
    """Written once for the module: the tests that play it only read it (those that change a file write their
    own)."""
    path = tmp_path_factory.mktemp("replay") / "run.jsonl.gz"
    write_recording(path, snapshots)
    return path


def make(path: Path, **kwargs: Any) -> SparktopApp:
    return SparktopApp(ReplaySource(path), Config(), auto_refresh=False, clock=lambda: 0.0, **kwargs)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared_player(recording: Path) -> AsyncIterator[tuple[SparktopApp, Pilot[Any]]]:
    app = make(recording)
    async with app.run_test(size=SIZE) as pilot:
        await app.refresh_once()
        await pilot.pause()
        yield app, pilot


@pytest_asyncio.fixture(loop_scope="module")
async def player(shared_player: tuple[SparktopApp, Pilot[Any]]) -> tuple[SparktopApp, Pilot[Any]]:
    """The module's player as a fresh one shows the recording: no dialog, not paused, at 1×, at the start
    (a seek there: a new session holding the first snapshot)."""
    app, pilot = shared_player
    while app.screen is not app.dashboard:
        app.pop_screen()
    if app.paused:
        app.action_toggle_pause()
    assert app.playback is not None
    app.playback.speed = 1
    app.action_seek_to("start")
    await settle(app, pilot)
    assert "0:00 / 7:50 · 1× ·" in status_text(app) and len(app.session.history.times()) == 1
    return shared_player


async def play_tick(app: SparktopApp, pilot: Pilot[Any]) -> None:
    """One tick of the player (its batch taken in), drawn."""
    await app.refresh_once()
    await pilot.pause()


async def settle(app: SparktopApp, pilot: Pilot[Any]) -> None:
    """Until the seek a key asked for is done (it runs on the sampling worker) and drawn."""
    await app.workers.wait_for_complete()
    await pilot.pause()


async def test_speed_keys_play_that_many_snapshots_a_tick_read_no_checkpoints_and_seek_without_them(
    tmp_path: Path, snapshots: list[Snapshot]
) -> None:
    """The checkpoint pass (the whole file read again beside the playback) started with every replay: one
    only played reads none until a seek asks for it. And where that pass cannot read the file (gone after
    the player opened it), a seek still works, from the start, and says why it is slow."""
    path = tmp_path / "run.jsonl"
    write_recording(path, snapshots[:12])
    app = make(path)
    path.unlink()  # gone after it was opened: the checkpoints' own reader cannot open it
    async with app.run_test(size=SIZE) as pilot:
        await play_tick(app, pilot)
        assert "0:00 / 1:50 · 1× · recorded every 10 s" in status_text(app)
        await pilot.press("right_square_bracket", "right_square_bracket")
        assert "0:00 / 1:50 · 5× ·" in status_text(app), "two presses of ] : 5×"
        await play_tick(app, pilot)  # one tick: five snapshots, all in the history, the last on show
        assert "0:50 / 1:50 · 5× ·" in status_text(app), "a tick at 5× plays five snapshots"
        assert app.session.history.times() == [T0 + i * EVERY for i in range(6)], (
            "each of them in the history"
        )
        await pilot.press("left_square_bracket")
        await play_tick(app, pilot)
        assert "1:10 / 1:50 · 2× ·" in status_text(app), "[ : 2×"
        assert app.playback is not None and not app.playback.index.started, "played only: checkpoints read"
        await pilot.press("comma")
        await settle(app, pilot)
        assert app.playback.index.started, "a seek back started no checkpoint pass"
        assert "1:00 / 1:50" in status_text(app), "the seek back without checkpoints"
        assert any(
            "no checkpoints past this point (FileNotFoundError" in text for _, _, text in app.messages
        ), "the seek without checkpoints says why it is slow"


async def test_seeking_on_and_back_shows_where_and_rebuilds_history_and_creep(
    player: tuple[SparktopApp, Pilot[Any]], snapshots: list[Snapshot]
) -> None:
    app, pilot = player
    await pilot.press("right_curly_bracket")  # 10 min on: the end of a 7:50 recording
    await settle(app, pilot)
    assert "7:50 / 7:50" in status_text(app)
    assert app.session.creep  # the demo's training run creeps
    await pilot.press("less_than_sign", "less_than_sign", "comma")  # 2 min 10 s back, in one go
    await settle(app, pilot)
    assert "5:40 / 7:50" in status_text(app)
    expected = played_from_the_start(snapshots, T0 + 340)
    assert app.session.history.times() == expected.history.times()
    for key in expected.history.known_keys():
        assert app.session.history.series(key) == expected.history.series(key)
    assert app.session.creep == expected.creep and app.session.creep
    await play_tick(app, pilot)  # and it plays on from there
    assert "5:50 / 7:50" in status_text(app)
    assert len(app.session.history.times()) == 36


async def test_a_paused_replay_stays_put_and_seeks(player: tuple[SparktopApp, Pilot[Any]]) -> None:
    app, pilot = player
    await pilot.press("p", "full_stop", "right")  # paused, then 20 s on
    await settle(app, pilot)
    assert "0:20 / 7:50" in status_text(app) and "PAUSED — data from 00:00:20" in status_text(app)
    assert app.frozen is not None and app.frozen.timestamp == T0 + 20  # the views show where it went
    app._tick()  # the timer's tick: a paused replay does not play on
    await settle(app, pilot)
    assert "0:20 / 7:50" in status_text(app)
    await pilot.press("p")
    app._tick()
    await settle(app, pilot)
    assert "0:30 / 7:50" in status_text(app)


async def test_end_then_home_plays_again_from_the_start(player: tuple[SparktopApp, Pilot[Any]]) -> None:
    app, pilot = player
    await pilot.press("end")
    await settle(app, pilot)
    await play_tick(app, pilot)
    assert app.session.source_ended and "end of recording" in status_text(app)
    await pilot.press("home")
    await settle(app, pilot)
    assert not app.session.source_ended and "0:00 / 7:50" in status_text(app)
    assert len(app.session.history.times()) == 1
    await play_tick(app, pilot)
    assert "0:10 / 7:50" in status_text(app)


# Every key of the player, as the dashboard binds it.
PLAYER_KEYS = ("right_square_bracket", "left_square_bracket", "right", "full_stop", "left", "comma",
               "greater_than_sign", "less_than_sign", "right_curly_bracket", "left_curly_bracket", "home",
               "end", "j")  # fmt: skip


def bound_action(key: str) -> tuple[str, tuple[object, ...]]:
    """The action the dashboard binds `key` to, as Textual asks the app's check_action about it: the one
    binding of `key` on the dashboard and the app (a second would act where the player's is refused)."""
    from textual.actions import parse
    from textual.binding import Binding

    from sparktop.ui.screens.dashboard import DashboardScreen

    bindings = [b for b in [*DashboardScreen.BINDINGS, *SparktopApp.BINDINGS] if isinstance(b, Binding)]
    actions = [b.action for b in bindings if key in b.key.split(",")]
    assert len(actions) == 1, f"{key} is bound to {actions}"
    _, name, parameters = parse(actions[0])
    return name, parameters


async def test_the_player_keys_are_a_replays_only(player: tuple[SparktopApp, Pilot[Any]]) -> None:
    replay = player[0]
    shown = footer_keys(replay)
    assert shown.get("right_square_bracket") == "Speed" and shown.get("right") == "Seek"
    # A live dashboard, not started: Textual asks check_action before it runs a key's action or shows it in
    # the footer, and an action it refuses does nothing.
    live = make_app(warmup=0)
    assert live.playback is None
    for key in PLAYER_KEYS:
        action, parameters = bound_action(key)
        assert replay.check_action(action, parameters) is True, f"{key} ({action}) is off in a replay"
        assert live.check_action(action, parameters) is False, f"{key} ({action}) acts on a live source"


async def test_go_to_a_typed_time(player: tuple[SparktopApp, Pilot[Any]]) -> None:
    from sparktop.ui.screens.goto_time import GotoTimeScreen

    app, pilot = player
    await pilot.press("j")
    await pilot.pause()
    assert isinstance(app.screen, GotoTimeScreen)
    assert "now 0:00 of 7:50" in str(app.screen.query_one("#title").render())
    await pilot.press(*"5:77", "enter")
    await pilot.pause()
    assert isinstance(app.screen, GotoTimeScreen)  # a bad time: said, and the dialog stays
    assert "minutes and seconds go up to 59" in str(app.screen.query_one("#message").render())
    app.screen.query_one("#time").value = ""  # type: ignore[attr-defined]
    await pilot.press(*"-2:00", "enter")
    await settle(app, pilot)
    assert not isinstance(app.screen, GotoTimeScreen)
    assert "5:50 / 7:50" in status_text(app)
    await pilot.press("j", "escape")
    await pilot.pause()
    assert not isinstance(app.screen, GotoTimeScreen) and "5:50 / 7:50" in status_text(app)


async def test_speed_and_start_from_the_command_line_past_times_that_are_not_numbers_then_a_file_cut_short(
    tmp_path: Path, snapshots: list[Snapshot]
) -> None:
    """`--speed 2 --start=-1:10` opens 1:10 before the end at 2×; issue 32 item 8: `--start` past a NaN or
    Inf timestamp crashed the history chart (one recording holds both, at 0:20 and 0:30, the start seeks past
    each); and then the file is emptied under the player: a seek fails aloud, once."""
    path = tmp_path / "hostile.jsonl"
    write_recording(path, snapshots[:12])
    lines = path.read_text().splitlines()
    for number, value in ((2, "NaN"), (3, "Infinity")):
        lines[number] = lines[number].replace(f'"timestamp":{T0 + number * EVERY}', f'"timestamp":{value}')
        assert value in lines[number]
    path.write_text("\n".join(lines) + "\n")
    app = make(path, replay_speed=2, replay_start=-70.0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert "0:40 / 1:50 · 2× ·" in status_text(app), "--speed and a --start counted from the end"
        await play_tick(app, pilot)
        await play_tick(app, pilot)
        status = status_text(app)
        assert "1:20 / 1:50" in status, "played on at 2× from the start asked for"
        assert "2 problems in the source: hostile.jsonl line 4: not a snapshot (timestamp:" in status
        assert [w.split(": not a snapshot")[0] for w in app.source.warnings] == [
            "hostile.jsonl line 3",  # NaN
            "hostile.jsonl line 4",  # Infinity
        ], app.source.warnings
        assert not {T0 + 20, T0 + 30} & set(app.session.history.times())

        path.write_bytes(b"")  # the file was replaced by an empty one while it played
        await pilot.press("home")
        await settle(app, pilot)
        assert app.session.latest is not None and app.session.latest.timestamp == T0 + 80, (
            "what was shown stays when a seek fails"
        )
        assert any(
            "seek failed (ValueError: hostile.jsonl: no snapshot there any more" in text
            for _, _, text in app.messages
        ), "the failed seek is said"
        assert app.playback is not None and not app.playback.seek_wanted, "not tried again at every tick"
        await play_tick(app, pilot)
        assert app.session.source_ended, "nothing more to play, said as the end"


async def test_home_shows_the_start_for_a_whole_tick(tmp_path: Path, snapshots: list[Snapshot]) -> None:
    """Home went to the start and the tick due next played on at once, so a user saw 0:02 at 2x, never 0:00
    (issue 32, Rough): the tick after a seek comes a whole interval after it. Timed on the real timer: Home is
    pressed 2.4 s into a 3 s tick, and the start must still be on show a second later."""
    path = tmp_path / "run.jsonl"
    write_recording(path, demo_snapshots(30, 1.0))
    app = SparktopApp(ReplaySource(path), Config(interval=3.0), auto_refresh=True, clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(200):  # until the first tick after the start lands: its moment is known (to 0.05 s)
            await pilot.pause(0.05)
            if "0:01 / 0:29" in status_text(app):
                break
        assert "0:01 / 0:29" in status_text(app), status_text(app)
        await pilot.pause(2.4)
        await pilot.press("home")
        await settle(app, pilot)
        assert "0:00 / 0:29" in status_text(app)
        await pilot.pause(1.0)  # past the moment the old tick was due
        assert "0:00 / 0:29" in status_text(app), status_text(app)
