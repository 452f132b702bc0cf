"""The dashboard's stop keys against a real Docker engine: SparktopApp on a LiveSource pointed at the private
engine, driven with Pilot; the outcome is checked with the engine's own inspect and later snapshots.

The timeout → kill path: dockerd SIGKILLs a container that ignores SIGTERM once the stop timeout is up, so
ignoring SIGTERM never produces a StopTimeout on a real engine. Only a hung runtime does: the container's
containerd shim is SIGSTOPped (engine.hung_runtime), the engine's stop call never returns and
our HTTP deadline ends it. The test then lets the runtime move again and confirms the kill. The kill of a
container that truly will not die is shown on the demo controller in tests/ui/test_stop.py.

Each app here is ~0.4 s of CPU and each container ~0.25 s: the tests whose container must stay running share
one (`bystander`, each checks it still runs), and a test that stops one container checks every outcome of
its dialog on it (cancel first, then stop). The tests of an app with the default flags share one app per
engine (`engine_app` on the session engine, `spare_app` on the engine the tests stop and crash), each test
on containers of its own, with a log of its own and the app's settings back as they were (`fresh`).
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from docker.models.containers import Container
from textual.pilot import Pilot

from sparktop.collect.docker import GROUP_HINT, DockerDiscovery
from sparktop.core.format import fmt_bytes
from sparktop.settings.config import Config
from sparktop.sources.live import LiveSource
from sparktop.stopping.stop_book import Report
from sparktop.stopping.stop_log import ActionLog
from sparktop.ui.app import SparktopApp
from sparktop.ui.screens.confirm import ConfirmScreen
from sparktop.ui.screens.dashboard import ContainersTable
from sparktop.ui.stop_keys import READ_ONLY
from tests.fixtures.load import load_per_core
from tests.fixtures.sources import NoGpu
from tests.integration.engine import DockerEngine, hung_runtime, run_as_user, unique_name

pytestmark = pytest.mark.docker
# The async tests run in the module's event loop, the one its shared apps run in.
in_the_module_loop = pytest.mark.asyncio(loop_scope="module")

SHM = 64_000_000  # far above an idle container's few MB; small beside the guard tests' MemAvailable floors
# Exits on SIGTERM (the trap interrupts `wait`); holds 64 MB in /dev/shm meanwhile.
SHM_HOLDER = f"sh -c 'trap \"exit 0\" TERM; head -c {SHM} /dev/zero > /dev/shm/x; sleep 3600 & wait'"
POLITE = "sh -c 'trap \"exit 0\" TERM; sleep 3600 & wait'"
STUBBORN = "sh -c 'trap \"\" TERM; sleep 3600'"


@pytest.fixture(scope="module")
def bystander(docker_engine: DockerEngine) -> Iterator[Container]:
    """A container the module's tests leave running (read-only keys, a stop refused or failed, another
    engine's): each checks it still runs. Of a compose project, for `S`, and the decoy of the compose
    stop: a `whisper` service of another project."""
    labels = {"com.docker.compose.project": unique_name("ro-lab"), "com.docker.compose.service": "whisper"}
    container = docker_engine.run(unique_name("bystander"), POLITE, labels=labels)
    try:
        yield container
    finally:
        docker_engine.remove([container.id])


@pytest.fixture(autouse=True)
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The action log goes to $XDG_STATE_HOME/sparktop/actions.log: a fresh one per test."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    yield tmp_path / "state" / "sparktop" / "actions.log"


def live_app(url: str, config: Config | None = None, **kw) -> SparktopApp:
    source = LiveSource(nvml=NoGpu(), docker=DockerDiscovery(base_url=url, refresh_s=0.5))
    app = SparktopApp(
        source,
        config or Config(),
        auto_refresh=False,
        warmup=1,
        user_theme_dir=Path("/nonexistent/sparktop-themes"),
        **kw,
    )
    app.animation_level = "none"
    return app


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def engine_app_of_the_module(docker_engine: DockerEngine) -> AsyncIterator[tuple[SparktopApp, Pilot]]:
    app = live_app(docker_engine.socket_url)
    async with app.run_test(size=(140, 36)) as pilot:
        yield app, pilot


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def spare_app_of_the_module(
    restartable_engine_of_the_session: DockerEngine,
) -> AsyncIterator[tuple[SparktopApp, Pilot]]:
    app = live_app(restartable_engine_of_the_session.socket_url)
    async with app.run_test(size=(120, 36)) as pilot:
        yield app, pilot


async def fresh(app: SparktopApp, pilot: Pilot, log: Path) -> tuple[SparktopApp, Pilot]:
    """A shared app as a new one starts: no dialog, nothing reported, its settings (stop timeout, HTTP
    deadline) as made, and the test's own action log (the module's apps were made before the test set
    XDG_STATE_HOME: the tests that make an app of their own check that the log goes there)."""
    await settle(app, pilot)
    while app.screen is not app.dashboard:
        app.pop_screen()
    assert app.stops.pending == {}, f"a stop left pending by an earlier test: {app.stops.reports}"
    app.stops.reports.clear()
    app.read_only = app.stops.book.read_only = False  # as made: no flag, no config
    app.stops.book.log = ActionLog(log)
    app.stops.book.timeout = app.config.stop_timeout
    app.stops.controller.api_timeout = API_TIMEOUT
    return app, pilot


API_TIMEOUT = 5.0  # DockerController's own HTTP deadline


@pytest_asyncio.fixture(loop_scope="module")
async def engine_app(
    engine_app_of_the_module: tuple[SparktopApp, Pilot], state_dir: Path
) -> tuple[SparktopApp, Pilot]:
    """The module's app on the session engine, as a new one starts."""
    return await fresh(*engine_app_of_the_module, state_dir)


@pytest_asyncio.fixture(loop_scope="module")
async def spare_app(
    spare_app_of_the_module: tuple[SparktopApp, Pilot], restartable_engine: DockerEngine, state_dir: Path
) -> tuple[SparktopApp, Pilot]:
    """The module's app on the restartable engine (running, emptied), as a new one starts."""
    return await fresh(*spare_app_of_the_module, state_dir)


def running(engine: DockerEngine, cid: str) -> bool:
    return engine.client.api.inspect_container(cid)["State"]["Running"]


def wait_for_shm(container, timeout: float = 30.0) -> None:
    """Until the container's /dev/shm holds the 64 MB, seen through its init's root (/proc/PID/root: its
    mount namespace, its /dev/shm tmpfs): a stat here, where an `exec` in the container each try cost the
    engine and runc a process."""
    container.reload()
    shm = Path(f"/proc/{container.attrs['State']['Pid']}/root/dev/shm/x")
    deadline = time.monotonic() + timeout * load_per_core()
    while True:
        size = shm.stat().st_size if shm.exists() else 0
        if size >= SHM:
            return
        assert time.monotonic() < deadline, f"/dev/shm not filled: {size} bytes in {shm}"
        time.sleep(0.05)


async def select(app: SparktopApp, pilot, cid: str) -> None:
    """The Containers tab, cursor on the container's row (after a fresh sample)."""
    await app.refresh_once()
    await pilot.press("2")
    await pilot.pause()
    table = app.query_one(ContainersTable)
    table.move_cursor(row=table.get_row_index(f"container:{cid}"), animate=False)
    await pilot.pause()
    selected = app.dashboard.selected_container()
    assert selected is not None and selected.id == cid


async def confirm(app: SparktopApp, pilot, key: str, answer: str) -> None:
    """`key`, then `answer` once its dialog is up: pressed at once, on a machine loaded by a second suite the
    answer could reach the dashboard before the dialog had come."""
    await pilot.press(key)
    deadline = time.monotonic() + 10 * load_per_core()
    while not (isinstance(app.screen, ConfirmScreen) and app.screen.focused is not None):  # mounted
        assert time.monotonic() < deadline, f"no dialog after {key!r}; reports: {app.stops.reports}"
        await pilot.pause(0.05)
    await pilot.press(answer)


async def settle(app: SparktopApp, pilot) -> None:
    await app.workers.wait_for_complete()
    await pilot.pause()


async def sample_until(app: SparktopApp, pilot, done, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout * load_per_core()
    while not done():
        assert time.monotonic() < deadline, f"gave up waiting; reports: {app.stops.reports}"
        await app.refresh_once()
        await pilot.pause(0.2)


def dialog_text(app: SparktopApp) -> str:
    from textual.widgets import Static

    assert isinstance(app.screen, ConfirmScreen)
    return "\n".join(str(w.render()) for w in app.screen.query(Static))


def status_cell(app: SparktopApp, cid: str) -> str:
    """The operation shown on the container's row (before its name; the status column is optional)."""
    table = app.query_one(ContainersTable)
    name = str(table.get_cell(f"container:{cid}", "name"))
    for state in ("stopping…", "killing…", "timed out (K)", "stopped"):
        if name.startswith(state + " "):
            return state
    return ""


def log_lines(path: Path) -> list[list[str]]:
    return [line.split("\t") for line in path.read_text().splitlines()] if path.exists() else []


# --- stop, cancel ---------------------------------------------------------------------------------------


@in_the_module_loop
async def test_cancel_leaves_it_running_and_stop_frees_its_shm(
    docker_engine, docker_run, engine_app, state_dir
) -> None:
    """The dialog's two answers on one container: Cancel, focused, leaves it running and logs nothing; then
    `y` stops it and says what it freed."""
    c = docker_run(unique_name("shm-stop"), SHM_HOLDER, shm_size="300m")
    wait_for_shm(c)
    app, pilot = engine_app
    await select(app, pilot, c.id)
    await pilot.press("s")
    assert isinstance(app.screen, ConfirmScreen)
    assert app.screen.focused is not None and app.screen.focused.id == "cancel", "Cancel is not focused"
    await pilot.press("enter")
    await settle(app, pilot)
    assert not isinstance(app.screen, ConfirmScreen), "Cancel left the dialog open"
    time.sleep(1.0)
    await app.refresh_once()
    assert running(docker_engine, c.id), "Cancel stopped the container"
    assert c.id in {x.id for x in app.session.latest.containers}
    assert app.stops.pending == {} and log_lines(state_dir) == [], "Cancel logged or left a stop pending"

    await pilot.press("s")
    assert isinstance(app.screen, ConfirmScreen)
    assert app.screen.focused is not None and app.screen.focused.id == "cancel"
    text = dialog_text(app)
    assert f"Stop container {c.name}?" in text
    assert docker_engine.image in text
    consumer = next(k for k in app.session.latest.accounting.consumers if k.key == f"container:{c.id}")
    assert consumer.cpu_bytes >= SHM  # the cgroup charges the shm pages to the container
    assert f"memory: {fmt_bytes(consumer.total)}" in text
    assert "GPU side —" in text  # no GPU here: a dash, not a measured-looking 0
    used_before = app.session.latest.memory.used
    await pilot.press("y")
    await pilot.pause()
    assert status_cell(app, c.id) in ("stopping…", "stopped")
    await settle(app, pilot)

    state = docker_engine.client.api.inspect_container(c.id)["State"]
    assert state["Status"] == "exited" and state["ExitCode"] == 0

    await sample_until(app, pilot, lambda: not app.stops.pending)
    snap = app.session.latest
    assert c.id not in {x.id for x in snap.containers}
    assert f"container:{c.id}" not in {k.key for k in snap.accounting.consumers}
    freed = used_before - snap.memory.used
    report = app.stops.reports[-1]
    assert report.startswith(f"stopped {c.name} — freed {fmt_bytes(max(0, freed))}"), report
    ((_, action, target, result),) = log_lines(state_dir)
    assert (action, target, result) == ("stop", f"container {c.name} ({c.id[:12]})", "stopped")


# --- timeout, then kill ---------------------------------------------------------------------------------


@in_the_module_loop
async def test_timeout_then_kill(docker_engine, docker_run, engine_app, state_dir) -> None:
    c = docker_run(unique_name("hung"), STUBBORN)
    app, pilot = engine_app
    app.stops.book.timeout = 1  # as Config(stop_timeout=1) makes it (`fresh` sets the config's back)
    app.stops.controller.api_timeout = 2  # HTTP deadline of the stop: 2 + 1 s
    await select(app, pilot, c.id)
    await pilot.press("s")
    assert "after 1 s" in dialog_text(app)
    with hung_runtime(c) as pid:
        await pilot.press("y")
        await settle(app, pilot)
        # (no inspect while the shim is stopped: the engine holds the container's lock for the stop)
        assert os.path.exists(f"/proc/{pid}"), "the container's process should still be alive"
        said = [r for r in app.stops.reports if "did not stop within 1 s" in r]
        assert said and said[0].endswith("— K kills it"), app.stops.reports
        assert status_cell(app, c.id) == "timed out (K)"
        # the second confirmation is open, Cancel focused
        assert isinstance(app.screen, ConfirmScreen) and app.screen.focused.id == "cancel"
        assert f"Kill container {c.name}?" in dialog_text(app)
    # The short deadline was for the stop to time out; the kill may wait on an engine still catching up.
    app.stops.controller.api_timeout = 20
    await pilot.press("y")
    await settle(app, pilot)
    await sample_until(app, pilot, lambda: not app.stops.pending)
    assert not running(docker_engine, c.id)
    assert app.stops.reports[-1].startswith(f"killed {c.name} — freed "), app.stops.reports
    assert [(a, r.split(":")[0]) for _, a, _, r in log_lines(state_dir)] == [
        ("stop", "timeout"),
        ("kill", "killed"),
    ]


# --- compose project ------------------------------------------------------------------------------------


@in_the_module_loop
async def test_compose_project_stop(docker_engine, docker_run, bystander, engine_app, state_dir) -> None:
    project = unique_name("stoplab")

    def compose(proj: str, service: str):
        labels = {"com.docker.compose.project": proj, "com.docker.compose.service": service}
        return docker_run(unique_name(f"{proj}-{service}"), POLITE, labels=labels)

    whisper, tts = compose(project, "whisper"), compose(project, "tts")
    other = bystander  # a service of the same name in another project: neither listed nor stopped
    assert other.labels["com.docker.compose.service"] == "whisper"
    assert other.labels["com.docker.compose.project"] != project
    app, pilot = engine_app
    await select(app, pilot, whisper.id)
    await pilot.press("S")
    await settle(app, pilot)  # the engine is asked for the project's containers in a worker
    text = dialog_text(app)
    assert f"Stop compose project {project}?" in text and "2 running container(s)" in text
    assert whisper.name in text and tts.name in text and other.name not in text
    assert app.screen.focused.id == "cancel"
    await pilot.press("y")
    await settle(app, pilot)
    assert not running(docker_engine, whisper.id) and not running(docker_engine, tts.id)
    assert running(docker_engine, other.id)
    await sample_until(app, pilot, lambda: not app.stops.pending)
    assert app.stops.reports[-1].startswith(f"stopped compose project {project}: 2 of 2 containers — freed")
    assert sorted(t for _, _, t, _ in log_lines(state_dir)) == sorted(
        f"container {x.name} ({x.id[:12]})" for x in (whisper, tts)
    )


# --- read-only ------------------------------------------------------------------------------------------


@in_the_module_loop
async def test_read_only_keys_do_nothing(docker_engine, bystander, engine_app, state_dir) -> None:
    """On the dashboard made read-only as --read-only makes it (test_read_only_from_the_flag_and_the_config
    checks that both make it so), no stop key opens a dialog: each says why, and nothing is stopped."""
    c = bystander
    app, pilot = engine_app
    app.read_only = app.stops.book.read_only = True  # `fresh` puts them back for the next test
    await select(app, pilot, c.id)
    for key in ("s", "S", "K", "k"):
        n = len(app.stops.reports)
        await pilot.press(key)
        await settle(app, pilot)
        assert not isinstance(app.screen, ConfirmScreen), key
        assert app.stops.reports[n:] == [READ_ONLY], key
    assert running(docker_engine, c.id)
    assert log_lines(state_dir) == []


def test_read_only_from_the_flag_and_the_config(docker_engine) -> None:
    """`--read-only` and `read_only = true` in the config each make the app read-only: the stop book its
    keys ask says so (test_read_only_keys_do_nothing presses them on a read-only dashboard)."""
    for made_by, app in (
        ("--read-only", live_app(docker_engine.socket_url, read_only=True)),
        ("read_only in the config", live_app(docker_engine.socket_url, Config(read_only=True))),
    ):
        assert app.read_only, f"{made_by} did not make the app read-only"
        assert not app.stops.book.available, f"the stop keys are available with {made_by}"
        assert app.stops.book.control_refusal() == Report(READ_ONLY, "warning"), made_by
    plain = live_app(docker_engine.socket_url)
    assert not plain.read_only and plain.stops.book.available, "read-only without being asked"


# --- when Docker is not there ---------------------------------------------------------------------------


@in_the_module_loop
async def test_container_already_gone(docker_engine, docker_run, engine_app) -> None:
    c = docker_run(unique_name("vanishing"), POLITE)
    app, pilot = engine_app
    await select(app, pilot, c.id)
    await pilot.press("s")
    docker_engine.client.api.remove_container(c.id, force=True)
    await pilot.press("y")
    await settle(app, pilot)
    assert app.stops.reports[-1] == f"container {c.id[:12]} is already gone"
    await app.refresh_once()
    assert c.id not in {x.id for x in app.session.latest.containers}
    assert app.is_running


@in_the_module_loop
async def test_engine_stopped_while_the_dialog_is_open(restartable_engine: DockerEngine, spare_app) -> None:
    c = restartable_engine.run(unique_name("orphan"), POLITE)
    app, pilot = spare_app
    await select(app, pilot, c.id)
    await pilot.press("s")
    assert isinstance(app.screen, ConfirmScreen)
    restartable_engine.stop()  # systemctl stop docker: its containers stop, its socket goes
    await pilot.press("y")
    await settle(app, pilot)
    report = app.stops.reports[-1]
    assert (
        report == f"Docker socket {restartable_engine.socket_path} not found — is the Docker engine running?"
    )
    assert "\n" not in report and app.is_running and app.stops.pending == {}

    # the engine comes back: the same app stops the next container
    restartable_engine.start()
    again = restartable_engine.run(unique_name("after"), POLITE)
    await sample_until(app, pilot, lambda: again.id in {x.id for x in app.session.latest.containers})
    await select(app, pilot, again.id)
    await confirm(app, pilot, "s", "y")
    await settle(app, pilot)
    assert restartable_engine.client.api.inspect_container(again.id)["State"]["Status"] == "exited"
    await sample_until(app, pilot, lambda: not app.stops.pending)
    assert app.stops.reports[-1].startswith(f"stopped {again.name} — freed")


@in_the_module_loop
async def test_engine_crashed_mid_stop(restartable_engine: DockerEngine, spare_app) -> None:
    c = restartable_engine.run(unique_name("midstop"), STUBBORN)
    app, pilot = spare_app
    app.stops.book.timeout = 20  # as Config(stop_timeout=20) makes it (`fresh` sets the config's back)
    await select(app, pilot, c.id)
    await confirm(app, pilot, "s", "y")
    await pilot.pause(1.0)  # the engine is waiting out the 20 s of SIGTERM grace
    assert status_cell(app, c.id) == "stopping…"
    restartable_engine.crash()
    await settle(app, pilot)
    assert app.stops.reports[-1] == (
        "Docker engine stopped answering: the engine closed the connection mid-request (restarted?)"
    )
    assert app.is_running and app.stops.pending == {}
    await app.refresh_once()
    await pilot.pause()
    assert status_cell(app, c.id) != "stopping…"


async def _stop(url: str, cid: str) -> tuple[str, list[str], bool, bool]:
    """s, y on the container, until the stop says how it went: the label of its row, the reports, whether the
    app still runs and whether no stop is left pending."""
    app = live_app(url)
    async with app.run_test(size=(120, 36)) as pilot:
        await select(app, pilot, cid)
        selected = app.dashboard.selected_container()
        assert selected is not None
        await confirm(app, pilot, "s", "y")
        # The answer's stop starts a moment after the dialog goes (its callback), and a stop that went
        # through is said once a sample shows the container gone: sampled until something is said.
        await sample_until(app, pilot, lambda: bool(app.stops.reports))
        await settle(app, pilot)
        return selected.label, [*app.stops.reports], app.is_running, app.stops.pending == {}


def _stop_as_nobody(url: str, cid: str, state: str) -> tuple[str, list[str], bool, bool]:
    """`_stop` in a child running as nobody (not in the docker group), its state in `state`."""
    import asyncio

    os.environ["XDG_STATE_HOME"] = state
    return asyncio.run(_stop(url, cid))


def test_a_missing_socket_then_permission_denied_on_it(
    docker_engine, bystander, tmp_path: Path, state_dir
) -> None:
    """Neither stops anything, each says why in one line, and the app goes on.

    The missing socket's stop, as root in this process, is also the rehearsal the child needs: it loads every
    module the child's stop will (the engine's client and transport: its connect fails the same way), which
    the child cannot read, /root being 0700. (Without one its stop failed without a word, unless a test
    before it in the worker had stopped a container.)"""
    import asyncio

    c = bystander
    missing = docker_engine.missing_socket_url()
    label, reports, app_running, none_pending = asyncio.run(_stop(missing, c.id))
    assert label == c.id[:12], "found by its cgroup, shown by ID"
    path = missing[len("unix://") :]
    assert reports[-1] == f"Docker socket {path} not found — is the Docker engine running?", reports
    assert app_running and none_pending
    assert running(docker_engine, c.id)
    ((_, _, _, result),) = log_lines(state_dir)
    assert result.startswith("failed: Docker socket"), result

    state = tmp_path / "nobody-state"
    state.mkdir()
    os.chmod(tmp_path, 0o755)
    os.chown(state, 65534, 65534)
    _, reports, app_running, none_pending = run_as_user(
        _stop_as_nobody, docker_engine.socket_url, c.id, str(state)
    )
    assert reports[-1] == f"permission denied on {docker_engine.socket_path} — {GROUP_HINT}", reports
    assert app_running and none_pending
    assert running(docker_engine, c.id)


# --- a container of an engine sparktop is not connected to -----------------------------------------------


@in_the_module_loop
async def test_a_container_of_another_engine_is_named_so_and_offers_no_stop(
    docker_engine: DockerEngine,
    restartable_engine: DockerEngine,
    spare_app,
    bystander: Container,
    state_dir: Path,
) -> None:
    """Two real engines on one machine; sparktop talks to the spare one and sees the other's container
    through its cgroup only: the row says whose it is and `s` explains instead of a dialog that would end
    in "is already gone"."""
    theirs = bystander
    ours = restartable_engine.run(unique_name("ours"), POLITE)
    app, pilot = spare_app
    await select(app, pilot, theirs.id)
    name = str(app.query_one(ContainersTable).get_cell(f"container:{theirs.id}", "name"))
    assert name == f"{theirs.id[:12]} (not connected)"
    await pilot.press("s")
    await pilot.pause()
    assert not isinstance(app.screen, ConfirmScreen)
    assert app.stops.reports[-1] == (
        f"{theirs.id[:12]} belongs to another Docker engine, which sparktop is not connected to: "
        "it can show it, not stop it"
    )
    assert running(docker_engine, theirs.id) and not state_dir.exists()
    await select(app, pilot, ours.id)  # the connected engine's own container: the dialog as ever
    await pilot.press("s")
    await pilot.pause()
    assert isinstance(app.screen, ConfirmScreen) and ours.name in dialog_text(app)
    await pilot.press("escape")
