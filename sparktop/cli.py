"""`sparktop` entry point: the live dashboard, one-shot output, recording and the planner guard."""

from __future__ import annotations

import argparse
import gc
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from sparktop import __version__
from sparktop.format import fmt_bytes, fmt_size

if TYPE_CHECKING:
    from sparktop.collect.source import SnapshotSource
    from sparktop.model import Snapshot

SUBCOMMANDS = ("record", "plan", "serve", "web", "guard")


def _add_source_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("data source (default: this machine, live)")
    group.add_argument(
        "--demo",
        nargs="?",
        const="default",
        metavar="SCENARIO",
        help="a simulated DGX Spark (scenarios: default, audio, training, critical, everything, idle)",
    )
    group.add_argument("--replay", metavar="FILE", help="play back a recording made with `sparktop record`")
    group.add_argument("--seed", type=int, default=0, help="random seed of the demo (default 0)")


def _main_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sparktop",
        description="Terminal dashboard for the NVIDIA DGX Spark: unified memory, per-container attribution, "
        "what-if planning. Subcommands: `sparktop record FILE`, `sparktop plan WORKLOAD...` "
        "(see `sparktop plan --help`).",
    )
    parser.add_argument("--version", action="version", version=f"sparktop {__version__}")
    _add_source_arguments(parser)
    parser.add_argument("--once", action="store_true", help="print one snapshot and exit")
    parser.add_argument("--json", action="store_true", help="with --once: print the snapshot as JSON")
    parser.add_argument("--interval", type=float, help="refresh interval in seconds (default 1)")
    parser.add_argument("--safe", type=float, metavar="GB", help="safe line in GB (default 80)")
    parser.add_argument("--max", type=float, metavar="GB", help="aggressive line in GB (default 100)")
    parser.add_argument("--units", choices=("GiB", "GB"), help="units for sizes (default GiB)")
    parser.add_argument("--theme", help="theme name (default sparktop-dark)")
    parser.add_argument("--config", type=Path, metavar="FILE", help="config file (default: XDG config dir)")
    parser.add_argument("--read-only", action="store_true", help="disable every container stop and signal")
    # `sparktop web --allow-actions` lets its sessions act on this machine although they read an exporter.
    parser.add_argument("--exporter-actions", action="store_true", help=argparse.SUPPRESS)
    cluster = parser.add_argument_group("cluster view (read-only; see `sparktop serve`)")
    cluster.add_argument("--cluster", action="store_true", help="every node side by side")
    cluster.add_argument("--prometheus", metavar="URL", help="read the nodes from this Prometheus server")
    cluster.add_argument("--nodes", metavar="HOST:PORT,...", help="read the nodes from their exporters")
    cluster.add_argument(
        "--exporter", metavar="URL", help="the dashboard of one `sparktop serve` (/snapshot.json), read-only"
    )
    return parser


def _record_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sparktop record",
        description="Append snapshots to a JSONL file (gzip-compressed when FILE ends in .gz: about 20 times "
        "smaller), flushed every tick; "
        "replay with `sparktop --replay FILE`. A recording holds the command line, user and memory of every "
        "process on the machine (arguments included, passwords or tokens given on a command line too): it is "
        "created readable by you only (0600); think before sharing it.",
    )
    parser.add_argument("file", type=Path)
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between snapshots (default 1)")
    parser.add_argument("--duration", type=float, help="stop after this many seconds (default: until Ctrl-C)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--append", action="store_true", help="append to an existing recording")
    mode.add_argument("--overwrite", action="store_true", help="replace an existing file")
    _add_source_arguments(parser)
    return parser


def _positive(parser: argparse.ArgumentParser, name: str, value: float | None) -> None:
    if value is not None and value <= 0:
        parser.error(f"{name} must be greater than 0")


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "plan":
        return _run_plan(args[1:])
    if args and args[0] == "record":
        return _run_record(args[1:])
    if args and args[0] == "serve":
        from sparktop import serve_cli

        return serve_cli.main(args[1:])
    if args and args[0] == "web":
        from sparktop import web_cli

        return web_cli.main(args[1:])
    if args and args[0] == "guard":
        from sparktop.guard import cli as guard_cli

        return guard_cli.main(args[1:])
    parser = _main_parser()
    opts = parser.parse_args(args)
    for name in ("interval", "safe", "max"):
        _positive(parser, f"--{name}", getattr(opts, name))
    if opts.json and not opts.once:
        parser.error("--json needs --once")
    if opts.cluster or opts.prometheus or opts.nodes:
        return _run_cluster(parser, opts)
    # Start-up makes a few hundred thousand objects that live as long as the dashboard (modules, CSS,
    # widgets); the cyclic GC would walk them again and again (~10 % of the time to the first frame). It
    # comes back on once the first frame is drawn, with those objects frozen out of its way.
    pause_gc = not opts.once and gc.isenabled()
    if pause_gc:
        gc.disable()
    try:
        return _open_source_and_run(opts)
    finally:
        if pause_gc:
            gc.enable()


def _open_source_and_run(opts: argparse.Namespace) -> int:
    from sparktop.collect.factory import SourceError, open_source
    from sparktop.text import visible_lines

    try:
        if opts.exporter:
            from sparktop.cluster.exporters import ExporterSource

            if opts.demo is not None or opts.replay is not None:
                raise SourceError("choose one of --exporter, --demo and --replay")
            # Another process's collector: nothing here can act on that machine's containers.
            opts.read_only = opts.read_only or not opts.exporter_actions
            source: SnapshotSource = ExporterSource(opts.exporter, local_actions=opts.exporter_actions)
        else:
            source = open_source(demo=opts.demo, replay=opts.replay, seed=opts.seed)
    except SourceError as exc:
        print(visible_lines(f"sparktop: {exc}"), file=sys.stderr)
        return 2
    try:
        if opts.once:
            return _print_once(source, as_json=opts.json, units=opts.units or "GiB")
        return _run_dashboard(source, opts)
    finally:
        source.close()


def _print_once(source: SnapshotSource, as_json: bool, units: str) -> int:
    from sparktop.session import Session
    from sparktop.text import json_visible, visible_lines

    snapshot = Session().ingest(source.sample())
    if as_json:
        print(json_visible(snapshot.model_dump_json(indent=2)))
    else:
        print(visible_lines(summarize(snapshot, units)))
    return 0


def summarize(snapshot: Snapshot, units: str = "GiB") -> str:
    """A few lines a person can read in a script's log."""
    mem = snapshot.memory
    lines = [
        f"pool   {fmt_size(mem.used, units)} of {fmt_size(mem.total, units)} used, "
        f"{fmt_size(mem.available, units)} available ({100 * mem.available / max(mem.total, 1):.0f} %)",
    ]
    if mem.pressure and mem.pressure.some:
        full = mem.pressure.full.avg10 if mem.pressure.full else 0.0
        lines.append(f"psi    some avg10 {mem.pressure.some.avg10:.1f}  full avg10 {full:.1f}")
    if not snapshot.gpu.available:
        lines.append(f"gpu    {snapshot.gpu.reason}")
    for gpu in snapshot.gpu.gpus:
        util = "n/a" if gpu.utilization_pct is None else f"{gpu.utilization_pct:.0f} %"
        power = "n/a" if gpu.power_w is None else f"{gpu.power_w:.0f} W"
        temp = "n/a" if gpu.temperature_c is None else f"{gpu.temperature_c:.0f} °C"
        unified = "unified memory" if gpu.unified_memory else "discrete memory"
        lines.append(f"gpu{gpu.index}   {gpu.name}: util {util}, {temp}, {power} ({unified})")
    if not snapshot.docker.available and snapshot.docker.reason:
        lines.append(f"docker {snapshot.docker.reason}")
    if snapshot.accounting:
        acct = snapshot.accounting
        for consumer in sorted(acct.consumers, key=lambda c: c.total, reverse=True)[:10]:
            gpu_bytes = consumer.gpu_bytes if snapshot.gpu.available else None  # no GPU: "—", not 0
            cpu, gpu_side = fmt_bytes(consumer.cpu_bytes, units), fmt_bytes(gpu_bytes, units)
            lines.append(f"  {consumer.label[:40]:40} cpu {cpu:>10}  gpu {gpu_side:>10}")
        unattributed = fmt_bytes(acct.unattributed, units)
        lines.append(f"  {'unattributed (kernel, driver, cache)':40} {unattributed:>14}")
    lines.extend(f"error  {err}" for err in snapshot.errors)
    return "\n".join(lines)


def _run_dashboard(source: SnapshotSource, opts: argparse.Namespace) -> int:
    import os

    from sparktop.config import load_config
    from sparktop.terminal import dashboard_refusal, terminal_size
    from sparktop.text import visible_lines

    config, problems = load_config(opts.config)
    for problem in problems:  # they quote the file's keys and values
        print(visible_lines(f"sparktop: {problem} (using defaults)"), file=sys.stderr)
    overrides = {
        "interval": opts.interval,
        "safe_gb": opts.safe,
        "max_gb": opts.max,
        "units": opts.units,
        "theme": opts.theme,
    }
    for key, value in overrides.items():
        if value is not None:
            setattr(config, key, value)
    if opts.read_only:
        config.read_only = True
    recorded_interval = getattr(source, "recorded_interval", None)
    if opts.interval is None and recorded_interval:
        config.interval = recorded_interval  # a recording plays at its own pace unless --interval says
    if config.safe_gb >= config.max_gb:
        print(f"sparktop: safe line {config.safe_gb} GB must be below {config.max_gb} GB", file=sys.stderr)
        return 2
    refusal = dashboard_refusal(os.environ, terminal_size())
    if refusal is not None:
        print(f"sparktop: {refusal}", file=sys.stderr)
        return 2
    from sparktop.ui.app import SparktopApp

    app = SparktopApp(
        source,
        config,
        read_only=config.read_only,
        startup_messages=problems,
        on_first_frame=_resume_gc,
        exit_on_signals=(signal.SIGTERM, signal.SIGHUP, signal.SIGINT),
    )
    app.run()
    # Textual has restored the terminal and printed the traceback of a crash on stderr by now; a crash
    # (return code 1) or a signal (128 + its number) must not look like success to a script.
    return app.return_code or 0


def _resume_gc() -> None:
    """The first frame is drawn: what exists now lives as long as the app, so the collector need not look
    at it again."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def _run_cluster(parser: argparse.ArgumentParser, opts: argparse.Namespace) -> int:
    from sparktop.config import load_config

    if bool(opts.prometheus) == bool(opts.nodes):
        parser.error("--cluster needs one of --prometheus URL and --nodes HOST:PORT,...")
    config, problems = load_config(opts.config)
    for problem in problems:
        print(f"sparktop: {problem} (using defaults)", file=sys.stderr)
    overrides = {"safe_gb": opts.safe, "max_gb": opts.max, "units": opts.units, "theme": opts.theme}
    for key, value in overrides.items():
        if value is not None:
            setattr(config, key, value)
    if opts.prometheus:
        from sparktop.cluster.prometheus import PrometheusCluster

        cluster: object = PrometheusCluster(opts.prometheus)
    else:
        from sparktop.cluster.exporters import ExporterNodes

        addresses = [a.strip() for a in opts.nodes.split(",") if a.strip()]
        if not addresses:
            parser.error("--nodes needs at least one HOST:PORT")
        cluster = ExporterNodes(addresses, config.safe_bytes, config.max_bytes)
    from sparktop.ui.cluster import ClusterApp

    ClusterApp(cluster, config, interval=opts.interval or 2.0).run()  # type: ignore[arg-type]
    return 0


def _run_record(argv: list[str]) -> int:
    from sparktop.collect.factory import SourceError, open_source
    from sparktop.collect.replay import record
    from sparktop.session import IngestingSource, Session

    parser = _record_parser()
    opts = parser.parse_args(argv)
    _positive(parser, "--interval", opts.interval)
    _positive(parser, "--duration", opts.duration)
    mode = "append" if opts.append else "overwrite" if opts.overwrite else "new"
    try:
        source = open_source(demo=opts.demo, replay=opts.replay, seed=opts.seed)
    except SourceError as exc:
        print(f"sparktop record: {exc}", file=sys.stderr)
        return 2
    # Recorded snapshots carry the accounting the dashboard shows, made by the same session code.
    source = IngestingSource(source, Session())
    # `kill`, `timeout` or a closed session end the recording as Ctrl-C does: the file is closed properly
    # (a compressed one gets its end marker) and the count is reported.
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _interrupt)
    try:
        count = record(source, opts.file, interval=opts.interval, duration=opts.duration, mode=mode)
    except FileExistsError as exc:
        print(f"sparktop record: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"sparktop record: {opts.file}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    finally:
        source.close()
    print(f"sparktop record: wrote {count} snapshots to {opts.file}", file=sys.stderr)
    return 0


def _interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def _run_plan(argv: list[str]) -> int:
    from sparktop import plan_cli

    return plan_cli.main(argv)


if __name__ == "__main__":
    sys.exit(main())
