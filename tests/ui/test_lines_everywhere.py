"""One definition of the safe and aggressive lines (analysis/lines.py), the same in every view (issue 23
item 6). On a 24 GiB machine at 77 % the dashboard said `under safe 80 GB (above the pool)`, What-if `OVER
AGGRESSIVE 19.7 GB`, /metrics a safe headroom of 71 GB: here the dashboard, /metrics and its headers, the
guard's session, the cluster view's node and `sparktop plan` all read one machine (a /proc tree with a 24 GiB
pool) and must name the same lines."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from textual.widgets import Static

from sparktop.analysis.lines import LineChoice
from sparktop.cluster.exporters import ExporterNodes, ExporterSource
from sparktop.commands.common import lines_of
from sparktop.commands.plan import EXIT_CODES
from sparktop.commands.plan import main as plan_main
from sparktop.core.format import fmt_gb
from sparktop.core.snapshot import GB, Snapshot
from sparktop.exporter.server import ExporterServer
from sparktop.exporter.state import SamplingLoop
from sparktop.session.session import Session
from sparktop.settings.config import Config, config_from_mapping
from sparktop.sources.live import LiveSource
from sparktop.ui.app import SparktopApp
from tests.fixtures.exporters import get
from tests.fixtures.sources import NoDocker, NoGpu
from tests.fixtures.trees import ProcTree, meminfo_text
from tests.ui.demo_app import shared_whatif
from tests.ui.frame import budget_bar

# The async tests run in the module's event loop: the What-if checks share one app on the small machine.
pytestmark = pytest.mark.asyncio(loop_scope="module")

KIB = 1024
POOL = 24 * 1024**3  # MemTotal of a 24 GiB VM: 25.8 GB
SAFE = 80 * POOL / 128  # the reference's 80 of 128 GB, kept as a share of this pool: 16.1 GB
AGGRESSIVE = 100 * POOL / 128  # 20.1 GB


def small_machine(tmp_path: Path) -> LiveSource:
    """The live collectors reading a /proc whose meminfo says 24 GiB, 77 % used."""
    ProcTree(
        tmp_path / "proc", meminfo=meminfo_text(total_kb=POOL // KIB, available_kb=int(0.23 * POOL) // KIB)
    )
    (tmp_path / "cgroup").mkdir()
    return LiveSource(
        proc_root=tmp_path / "proc", cgroup_root=tmp_path / "cgroup", nvml=NoGpu(), docker=NoDocker()
    )


def small_machine_app(folder: Path) -> SparktopApp:
    return SparktopApp(small_machine(folder), Config(), auto_refresh=False, warmup=1,
                       user_theme_dir=folder / "no-themes")  # fmt: skip


# The What-if checks of "clean" and of saved plans share one dashboard on the small machine, its What-if tab
# as `w` first shows it (`whatif`, tests/ui/conftest.py), instead of an app and a catalog each.
whatif_app = shared_whatif(small_machine_app)


def metric(text: str, name: str, line: str) -> float:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and sample.labels.get("line") == line:
                return sample.value
    raise AssertionError(f"{name}{{line={line!r}}} not in /metrics")


def plan_lines_json(snapshot: Snapshot, *flags: str) -> dict[str, float]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        plan_main(["--json", "--no-discover", *flags, "llama3.1:8b"], baseline_provider=lambda: snapshot)
    return json.loads(out.getvalue())["lines_gb"]


@pytest.mark.parametrize(
    ("config_text", "safe", "aggressive"),
    [
        ({}, SAFE, AGGRESSIVE),  # the reference's lines, scaled to this pool as the planner scales them
        ({"safe_gb": 17.0, "max_gb": 22.0}, 17 * GB, 22 * GB),  # the user's own, as configured
    ],
    ids=["scaled", "configured"],
)
async def test_every_view_names_the_same_lines(
    tmp_path: Path, config_text: dict[str, float], safe: float, aggressive: float
) -> None:
    config, problems = config_from_mapping(config_text)
    assert problems == []
    source = small_machine(tmp_path)
    snapshot = source.sample()
    assert snapshot.memory.total == POOL

    # the dashboard: the session it makes from its settings, and its budget bar's title at 120x36 (118 cells)
    # over that session's lines, as its redraw hands them over (tests/ui/frame.py; the status and banner
    # read the same session)
    app = SparktopApp(source, config, auto_refresh=False, warmup=1, user_theme_dir=tmp_path / "no-themes")
    app.session.ingest(snapshot)  # its warm-up's one sample
    assert (app.session.safe_bytes, app.session.max_bytes) == (int(safe), int(aggressive))
    title = str(budget_bar(app.session).text_at(118)).splitlines()[0]
    assert f"over safe {fmt_gb(safe)}, under aggressive {fmt_gb(aggressive)}" in title, title
    assert "above the pool" not in title

    # the exporter: /metrics and the headers the cluster view reads, from `serve`'s own settings
    interval, own_safe, own_aggressive, hours = lines_of(config)
    loop = SamplingLoop(source, interval, own_safe, own_aggressive, history_hours=hours)
    loop.step()
    server = ExporterServer(loop, "127.0.0.1", 0)
    server.start()
    try:
        _status, headers, body = get(f"{server.url}/metrics")
        text = body.decode()
        assert metric(text, "sparktop_line_bytes", "safe") == int(safe)
        assert metric(text, "sparktop_line_bytes", "aggressive") == int(aggressive)
        used = snapshot.memory.total - snapshot.memory.available
        assert metric(text, "sparktop_headroom_bytes", "safe") == pytest.approx(int(safe) - used, abs=1e6)
        _status, headers, _body = get(f"{server.url}/snapshot.json")
        assert headers["X-Sparktop-Safe-Bytes"] == str(int(safe))
        assert headers["X-Sparktop-Aggressive-Bytes"] == str(int(aggressive))
        # the cluster view: a node judged by the lines its exporter states
        (node,) = ExporterNodes([server.url.removeprefix("http://")], LineChoice.of(Config())).fetch()
        assert (node.safe_bytes, node.max_bytes) == (int(safe), int(aggressive))
        # a dashboard on that exporter (`--exporter`, each `sparktop web` session) with no lines of its own:
        # those it states. Only the configured lines tell following them from the dashboard's own (the
        # scaled ones are the same on this pool either way).
        if config_text:
            exporter = ExporterSource(server.url.removeprefix("http://"))
            remote = SparktopApp(
                exporter, Config(), auto_refresh=False, warmup=1, user_theme_dir=tmp_path / "x"
            )
            async with remote.run_test(size=(80, 24)) as pilot:  # its session's lines: no frame is read
                await pilot.pause()
                assert (remote.session.safe_bytes, remote.session.max_bytes) == (int(safe), int(aggressive))
    finally:
        server.shutdown()
        loop.stop()

    # the guard: its session is built from the same settings (sparktop/commands/guard.py)
    guard_session = Session(safe_bytes=own_safe, max_bytes=own_aggressive, history_hours=hours)
    guard_session.ingest(snapshot)
    assert (guard_session.safe_bytes, guard_session.max_bytes) == (int(safe), int(aggressive))

    # `sparktop plan` (and the What-if tab, which calls the same evaluate) on this machine
    flags = [f"--safe={config.safe_gb:g}", f"--max={config.max_gb:g}"] if config_text else []
    lines = plan_lines_json(snapshot, *flags)
    assert (lines["safe"], lines["aggressive"]) == (round(safe / GB, 2), round(aggressive / GB, 2))
    assert lines["pool"] == round(POOL / GB, 2)


# --- "clean" is this machine, empty, in the What-if tab (`b`) and `plan --clean` alike (issue 23 item 7) ---


def run_plan(snapshot: Snapshot, *argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = plan_main(["--no-discover", *argv], baseline_provider=lambda: snapshot)
    return code, out.getvalue()


@pytest.mark.usefixtures("private_home")
@pytest.mark.parametrize(("presses", "flag"), [(1, "--clean"), (2, "--machine=spark")], ids=["here", "spark"])
async def test_clean_means_the_same_machine_in_the_tab_and_the_cli(presses: int, flag: str, whatif) -> None:
    app, pilot, pane = whatif
    snapshot = app.source.sample()  # the small machine, as the tab has it
    assert pane.snapshot is not None and snapshot.memory.total == pane.snapshot.memory.total == POOL
    host = snapshot.hostname
    workloads = ["llama3.1:8b,context=32768", "gemma2:27b"]
    code, _text = run_plan(snapshot, flag, "--json", *workloads)
    cli = json.loads(_text)
    _code, text = run_plan(snapshot, flag, *workloads)

    await pilot.press(*"b" * presses)
    assert pane.plan is not None
    pane.plan.add("llama3.1:8b", context="32768")
    pane.add("gemma2:27b")
    await pilot.pause()
    ev = pane.evaluation
    assert ev is not None and ev.baseline.source == "clean"
    head = str(pane.query_one("#whatif-head", Static).render())
    verdicts = str(pane.query_one("#whatif-verdicts", Static).render())

    assert ev.verdict == cli["fit"] and code == EXIT_CODES[ev.verdict]
    assert ev.baseline.pool / GB == pytest.approx(cli["baseline"]["pool_gb"], abs=0.01)
    assert ev.baseline.sm_count == cli["baseline"]["sm_count"]
    assert ev.fit.reason == cli["fit_detail"]["reason"]
    if flag == "--clean":  # this machine: its pool, named by its host name, and no Spark's SMs
        assert cli["baseline"]["pool_gb"] == round(POOL / GB, 2)
        assert f"clean {host}" in head and f"clean {host}" in text.splitlines()[0]
        assert "48 SMs" not in verdicts and "48 SMs" not in text
    else:
        assert cli["baseline"]["pool_gb"] == 128.0
        assert "clean DGX Spark" in head and "clean DGX Spark" in text.splitlines()[0]


@pytest.mark.usefixtures("private_home")
async def test_a_saved_plan_is_judged_against_the_baseline_it_was_made_on(tmp_path: Path, whatif) -> None:
    """A plan saved with the clean baseline was judged by `plan --file` against the live one (issue 32,
    Rough): the file says its baseline, `plan --file` uses it (unless the command line names one), and `l`
    brings it back. The tab's `s` and `l` dialogs go round once, on the clean baseline (the one reported;
    they were three round trips, ~0.4 s of CPU each, for code that is the same for every baseline); the
    live and spark files are what `s` writes on those (the plan on show, its baseline set: save_plan)."""
    from sparktop.plan import save_plan
    from sparktop.ui.screens.plan_file import PlanFileScreen

    app, pilot, pane = whatif
    await pilot.press("b")  # clean
    pane.add("gemma2:27b")
    await pilot.pause()
    assert pane.baseline_mode == "clean"
    target = tmp_path / "clean.toml"
    pane.plan_path = target
    await pilot.press("s")
    assert isinstance(app.screen, PlanFileScreen)
    await pilot.press("enter")
    await pilot.pause()
    assert 'baseline = "clean"' in target.read_text(), "the saved file does not say its baseline"
    await pilot.press("b")  # another baseline on show ...
    assert pane.baseline_mode == "spark"
    await pilot.press("l")
    app.screen.query_one("#path").value = str(target)
    await pilot.press("enter")
    await pilot.pause()
    assert pane.baseline_mode == "clean", "`l` did not bring the file's baseline back"

    for mode in ("live", "clean", "spark"):
        while pane.baseline_mode != mode:
            await pilot.press("b")
        await pilot.pause()
        ev, snapshot, plan = pane.evaluation, pane.snapshot, pane.plan
        assert ev is not None and snapshot is not None and plan is not None and snapshot.memory.total == POOL
        path = target if mode == "clean" else tmp_path / f"{mode}.toml"
        if mode != "clean":
            plan.baseline = mode  # as `s` sets it before writing (WhatIfPane.action_save)
            save_plan(plan, path)
            assert f'baseline = "{mode}"' in path.read_text()
        _code, out = run_plan(snapshot, "--json", "--file", str(path))
        cli = json.loads(out)
        assert cli["baseline"]["source"] == ev.baseline.source and cli["fit"] == ev.verdict, (
            cli["baseline"],
            mode,
        )
        assert cli["baseline"]["pool_gb"] == pytest.approx(ev.baseline.pool / GB, abs=0.01), mode
        # The command line still wins: --machine=spark over the file's live or clean.
        _code, out = run_plan(snapshot, "--json", "--machine=spark", "--file", str(path))
        pool = json.loads(out)["baseline"]["pool_gb"]
        assert pool != pytest.approx(round(snapshot.memory.total / GB, 2)), mode
