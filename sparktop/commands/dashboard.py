"""The dashboard (no command): the live view, `--once` (text or JSON), and the cluster view."""

from __future__ import annotations

import argparse
import gc
import os
import signal
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from sparktop.commands.common import (
    EXIT_BAD_INPUT,
    EXIT_NO_DATA,
    add_config_argument,
    add_source_arguments,
    settings_from,
)
from sparktop.core.format import fmt_available_pct, fmt_bytes, fmt_cell, fmt_size
from sparktop.core.machine import describe_machine
from sparktop.core.safe_text import say
from sparktop.settings.config import INTERVAL_RANGE, Config
from sparktop.settings.files import SettingsError

if TYPE_CHECKING:
    from sparktop.cluster.node import ClusterSource
    from sparktop.core.snapshot import Snapshot
    from sparktop.sources.snapshot_source import SnapshotSource


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The dashboard's flags: the top-level parser's own (no command)."""
    add_source_arguments(parser)
    parser.add_argument(
        "--once", action="store_true", help="print one snapshot (with --cluster: the nodes) and exit"
    )
    parser.add_argument("--json", action="store_true", help="with --once: print the snapshot as JSON")
    parser.add_argument("--interval", type=float, help="refresh interval in seconds, 0.1 to 3600 (default 1)")
    parser.add_argument(
        "--speed", type=int, metavar="N", help="with --replay: N snapshots a tick, N× the recorded pace (] [)"
    )
    parser.add_argument(
        "--start",
        metavar="TIME",
        help="with --replay: start TIME into the recording (90, 1:30, 1:02:03; --start=-5:00: 5 min before "
        "its end)",
    )
    parser.add_argument(
        "--safe", type=float, metavar="GB", help="safe line in GB (default 80; 80/128 of a small pool)"
    )
    parser.add_argument(
        "--max", type=float, metavar="GB", help="aggressive line in GB (default 100; 100/128 of a small pool)"
    )
    parser.add_argument("--units", choices=("GiB", "GB"), help="units for sizes (default GiB)")
    parser.add_argument("--theme", help="theme name (default sparktop-dark)")
    add_config_argument(parser)
    parser.add_argument("--read-only", action="store_true", help="disable every container stop and signal")
    # `sparktop web --allow-actions` lets its sessions act on this machine although they read an exporter.
    parser.add_argument("--exporter-actions", action="store_true", help=argparse.SUPPRESS)
    # A browser session of `sparktop web` (its pid): dies with it, and read-only it touches no file.
    parser.add_argument("--web-session", type=int, metavar="PID", help=argparse.SUPPRESS)
    cluster = parser.add_argument_group("cluster view (read-only; see `sparktop serve`)")
    cluster.add_argument("--cluster", action="store_true", help="every node side by side")
    cluster.add_argument("--prometheus", metavar="URL", help="read the nodes from this Prometheus server")
    cluster.add_argument("--nodes", metavar="HOST:PORT,...", help="read the nodes from their exporters")
    cluster.add_argument(
        "--exporter", metavar="URL", help="the dashboard of one `sparktop serve` (/snapshot.json), read-only"
    )


def run(parser: argparse.ArgumentParser, opts: argparse.Namespace) -> int:
    if opts.json and not opts.once:
        parser.error("--json needs --once")
    if opts.exporter and (opts.demo is not None or opts.replay is not None):
        parser.error("choose one of --exporter, --demo and --replay")
    replay_start = _replay_options(parser, opts)
    feed_token = None
    if opts.web_session is not None:
        from sparktop.web.lifeline import bound_memory, exit_with_parent
        from sparktop.web.lifeline import feed_token as take_feed_token

        exit_with_parent(opts.web_session)
        bound_memory()
        feed_token = take_feed_token()

    try:
        config, problems = settings_from(opts)
    except SettingsError as exc:
        say("sparktop", exc)
        return EXIT_BAD_INPUT
    for problem in problems:  # they quote the file's keys and values
        say("sparktop", problem)
    if opts.cluster or opts.prometheus or opts.nodes:
        return _run_cluster(parser, opts, config)
    # Start-up makes a few hundred thousand objects that live as long as the dashboard (modules, CSS,
    # widgets); the cyclic GC would walk them again and again (~10 % of the time to the first frame). It
    # comes back on once the first frame is drawn, with those objects frozen out of its way.
    pause_gc = not opts.once and gc.isenabled()
    if pause_gc:
        gc.disable()
    try:
        return _open_source_and_run(opts, config, problems, replay_start, feed_token)
    finally:
        if pause_gc:
            gc.enable()


def _open_source_and_run(
    opts: argparse.Namespace,
    config: Config,
    problems: list[str],
    replay_start: float | None = None,
    feed_token: str | None = None,
) -> int:
    from sparktop.sources.factory import SourceError, open_source
    from sparktop.sources.snapshot_source import SourceUnavailable

    try:
        if opts.exporter:
            from sparktop.cluster.exporters import ExporterSource

            # Another process's collector: nothing here can act on that machine's containers.
            opts.read_only = opts.read_only or not opts.exporter_actions
            source: SnapshotSource = ExporterSource(
                opts.exporter, local_actions=opts.exporter_actions, token=feed_token
            )
        else:
            source = open_source(demo=opts.demo, replay=opts.replay, seed=opts.seed, config=config)
    except SourceError as exc:
        say("sparktop", exc)
        return EXIT_NO_DATA
    try:
        if opts.once:
            return _print_once(source, as_json=opts.json, units=config.units, problems=problems)
        # A read-only browser session's user is not this machine's user: no plan files, no `B`.
        files = opts.web_session is None or not opts.read_only
        return _run_dashboard(
            source,
            config,
            problems,
            interval_flag=opts.interval is not None,
            files=files,
            replay_speed=opts.speed or 1,
            replay_start=replay_start,
        )
    except SourceUnavailable as exc:  # an exporter down, not answering, or on another schema: one line
        say("sparktop", exc)
        return EXIT_NO_DATA
    finally:
        source.close()


def _print_once(source: SnapshotSource, as_json: bool, units: str, problems: Sequence[str] = ()) -> int:
    from sparktop.core.encoding import for_stream, json_for_stream
    from sparktop.core.safe_text import json_visible, visible_lines
    from sparktop.session.session import Session
    from sparktop.sources.replay import ReplaySource
    from sparktop.sources.snapshot_source import settled_sample

    # A recording: its last snapshot, what a post-mortem wants (the first is where it started).
    sample = source.play_to_end() if isinstance(source, ReplaySource) else settled_sample(source)
    # Accounted here: a recording may hold none, or a failed one.
    snapshot = Session(views=False).ingest(sample)
    # Problems in the user's files belong with the snapshot's own errors: a script reading the JSON sees them.
    snapshot.errors.extend(f"config: {problem}" for problem in problems)
    if as_json:
        print(json_for_stream(json_visible(snapshot.model_dump_json(indent=2)), sys.stdout))
    else:
        text = summarize(snapshot, units)
        progress = source.progress()
        if progress is not None:
            text = f"replay  the last snapshot: {progress.describe()}\n{text}"
        print(for_stream(visible_lines(text), sys.stdout))
    return 0


def summarize(snapshot: Snapshot, units: str = "GiB") -> str:
    """A few lines a person can read in a script's log."""
    from sparktop.analysis.gpu_use import sm_pct_by_consumer, sm_unmeasured_reason
    from sparktop.analysis.slowdown import slowdown_lines
    from sparktop.analysis.throttle import throttle_line

    mem = snapshot.memory
    available_pct = fmt_available_pct(100 * mem.available / max(mem.total, 1))
    lines = [
        f"pool   {fmt_size(mem.used, units)} of {fmt_size(mem.total, units)} used, "
        f"{fmt_size(mem.available, units)} available ({available_pct})",
    ]
    if mem.pressure and mem.pressure.some:
        full = mem.pressure.full.avg10 if mem.pressure.full else 0.0
        lines.append(f"psi    some avg10 {mem.pressure.some.avg10:.1f}  full avg10 {full:.1f}")
    lines.append(f"machine {describe_machine(snapshot.gpu, units)}")
    if not snapshot.gpu.available:
        lines.append(f"gpu    {snapshot.gpu.reason}")
    for gpu in snapshot.gpu.gpus:
        util = "n/a" if gpu.utilization_pct is None else f"{gpu.utilization_pct:.0f} %"
        power = "n/a" if gpu.power_w is None else f"{gpu.power_w:.0f} W"
        temp = "n/a" if gpu.temperature_c is None else f"{gpu.temperature_c:.0f} °C"
        unified = "unified memory" if gpu.unified_memory else "discrete memory"
        lines.append(f"gpu{gpu.index}   {gpu.name}: util {util}, {temp}, {power} ({unified})")
        throttle = throttle_line(gpu, snapshot.timestamp)
        if throttle:
            lines.append(f"gpu{gpu.index}   slowed: {throttle}")
    sm_reason = sm_unmeasured_reason(snapshot)
    if sm_reason:
        lines.append(f"gpu    no sm %: {sm_reason}")
    sm_by_consumer = sm_pct_by_consumer(snapshot)
    for device in snapshot.accounting.gpu_memory if snapshot.accounting else ():
        holders = [f"{s.label} {fmt_bytes(s.nbytes, units)}" for s in device.shares[:5]]
        if device.other:
            holders.append(f"other {fmt_bytes(device.other, units)}")
        used = f"{fmt_size(device.used, units)} of {fmt_size(device.total, units)} used"
        lines.append(f"gpu{device.index}   memory {used}" + (f": {', '.join(holders)}" if holders else ""))
    if not snapshot.docker.available and snapshot.docker.reason:
        lines.append(f"docker {snapshot.docker.reason}")
    if snapshot.accounting:
        acct = snapshot.accounting
        # By all each holds: a discrete GPU's memory is not in the pool, yet its holders are the news.
        top = sorted(acct.consumers, key=lambda c: c.total + c.device_gpu_bytes, reverse=True)[:10]
        # Each figure in its own unit, as in the tables. No GPU: "—", not 0. A discrete GPU's memory is the
        # consumer's too, though not in the pool.
        gpus = [c.gpu_bytes + c.device_gpu_bytes if snapshot.gpu.available else None for c in top]
        for consumer, gpu_bytes in zip(top, gpus, strict=True):
            cpu = fmt_cell(consumer.cpu_bytes, units)
            gpu_side = fmt_cell(gpu_bytes, units)
            sm = sm_by_consumer.get(consumer.key)
            sm_side = "" if sm is None else f"  sm {sm:3.0f} %"
            lines.append(f"  {consumer.label[:40]:40} cpu {cpu:>10}  gpu {gpu_side:>10}{sm_side}")
        unattributed = fmt_bytes(acct.unattributed, units)
        lines.append(f"  {'unattributed (kernel, driver, cache)':40} {unattributed:>14}")
    lines.extend(f"slower {line}" for line in slowdown_lines(snapshot))
    lines.extend(f"error  {err}" for err in snapshot.errors)
    lines.extend(f"note   {note}" for note in snapshot.notes)
    return "\n".join(lines)


def _replay_options(parser: argparse.ArgumentParser, opts: argparse.Namespace) -> float | None:
    """Checks --speed and --start (a replay's, in the dashboard) and returns --start in seconds (negative:
    before the end)."""

    given = [flag for flag, value in (("--speed", opts.speed), ("--start", opts.start)) if value is not None]
    if given and (opts.replay is None or opts.once):
        parser.error(f"{' and '.join(given)} need{'s' if len(given) == 1 else ''} --replay, without --once")
    if opts.speed is not None:  # the player's module only for a replay: a live start need not load it
        from sparktop.session.playback import MAX_SPEED

        if not 1 <= opts.speed <= MAX_SPEED:
            parser.error(f"--speed must be 1 to {MAX_SPEED} (snapshots a tick), not {opts.speed}")
    if opts.start is None:
        return None
    from sparktop.sources.replay import parse_clock

    try:
        return parse_clock(opts.start)
    except ValueError as exc:
        parser.error(f"--start: {exc}")


def _run_dashboard(
    source: SnapshotSource,
    config: Config,
    problems: list[str],
    interval_flag: bool,
    files: bool = True,
    replay_speed: int = 1,
    replay_start: float | None = None,
) -> int:
    import os

    from sparktop.ui.terminal_check import dashboard_refusal, terminal_size

    recorded_interval = source.recorded_interval
    if recorded_interval and not interval_flag:
        # A recording plays at its own pace unless --interval says, within the same bounds as any interval.
        low, high = INTERVAL_RANGE
        config = config.model_copy(update={"interval": min(max(float(recorded_interval), low), high)})
    refusal = dashboard_refusal(os.environ, terminal_size())
    if refusal is not None:
        say("sparktop", refusal)
        return 2
    from sparktop.ui.app import SparktopApp

    app = SparktopApp(
        source,
        config,
        read_only=config.read_only,
        files_allowed=files,
        startup_messages=problems,
        on_first_frame=_resume_gc,
        exit_on_signals=(signal.SIGTERM, signal.SIGHUP, signal.SIGINT),
        replay_speed=replay_speed,
        replay_start=replay_start,
    )
    app.run()
    # Textual has restored the terminal and printed the traceback of a crash on stderr by now; a crash
    # (return code 1) or a signal (128 + its number) must not look like success to a script.
    return app.return_code or 0


def _run_cluster(parser: argparse.ArgumentParser, opts: argparse.Namespace, config: Config) -> int:
    from sparktop.cluster.node import ClusterError

    if bool(opts.prometheus) == bool(opts.nodes):
        parser.error("--cluster needs one of --prometheus URL and --nodes HOST:PORT,...")
    if opts.prometheus:
        from sparktop.cluster.prometheus import PrometheusCluster

        cluster: ClusterSource = PrometheusCluster(opts.prometheus)
    else:
        from sparktop.analysis.lines import LineChoice
        from sparktop.cluster.exporters import ExporterNodes

        addresses = [a.strip() for a in opts.nodes.split(",") if a.strip()]
        try:
            cluster = ExporterNodes(addresses, LineChoice.of(config))
        except ValueError as exc:  # none, or more than the view reads
            parser.error(str(exc))
    if opts.once:
        try:
            return _print_nodes(cluster, as_json=opts.json, units=config.units)
        except ClusterError as exc:
            say("sparktop", exc)
            return EXIT_NO_DATA
    from sparktop.ui.terminal_check import dashboard_refusal, terminal_size

    refusal = dashboard_refusal(os.environ, terminal_size())
    if refusal is not None:
        say("sparktop", refusal.replace("`sparktop --once`", "`sparktop --cluster ... --once`"))
        return EXIT_NO_DATA
    from sparktop.ui.cluster import ClusterApp

    app = ClusterApp(
        cluster,
        config,
        interval=opts.interval or 2.0,
        exit_on_signals=(signal.SIGTERM, signal.SIGHUP, signal.SIGINT),
    )
    app.run()
    return app.return_code or 0


def _print_nodes(cluster: ClusterSource, as_json: bool, units: str) -> int:
    """One fetch of every node, printed: exit 0 whatever the nodes' states (each says its own)."""
    from sparktop.cluster.report import nodes_json, nodes_text
    from sparktop.core.encoding import for_stream, json_for_stream
    from sparktop.core.safe_text import json_visible, visible_lines

    nodes = cluster.fetch()
    left_out = getattr(cluster, "left_out", 0)
    if as_json:
        print(json_for_stream(json_visible(nodes_json(nodes, cluster.description, left_out)), sys.stdout))
    else:
        text = nodes_text(nodes, cluster.description, left_out, units)
        print(for_stream(visible_lines(text), sys.stdout))
    return 0


def _resume_gc() -> None:
    """The first frame is drawn: what exists now lives as long as the app, so the collector need not look
    at it again."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()
