"""`sparktop guard [--dry-run]`: the headless service that forecasts exhaustion, warns, keeps the black box
and — only with a policy in the config file's `[guard]` table — stops what is listed there first."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
import tomllib
from pathlib import Path

from pydantic import ValidationError

from sparktop.guard.policy import GuardSettings

EXIT_BAD_INPUT = 3


def state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "sparktop"


def load_guard_settings(path: Path | None) -> tuple[GuardSettings, list[str]]:
    """The `[guard]` table of the config file, validated. A problem is one line naming the file and key; the
    guard then runs with the defaults (forecast, warn, record: never act on a policy it could not read)."""
    from sparktop.config import default_config_path

    path = path or default_config_path()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return GuardSettings(), []
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return GuardSettings(), [f"{path}: {exc}"]
    table = data.get("guard", {})
    if not isinstance(table, dict):
        return GuardSettings(), [f"{path}: guard: must be a table ([guard])"]
    try:
        return GuardSettings.model_validate(table), []
    except ValidationError as exc:
        lines = []
        for error in exc.errors():
            where = ".".join(str(p) for p in ("guard", *error["loc"]))
            lines.append(f"{path}: {where}: {error['msg']}")
        return GuardSettings(), lines


def _parser() -> argparse.ArgumentParser:
    from sparktop.serve_cli import add_line_arguments, add_source_arguments

    parser = argparse.ArgumentParser(
        prog="sparktop guard",
        description="Forecast memory exhaustion, warn (terminal, system journal, hooks), keep a black-box "
        "recording, and, only with a policy in the config's [guard] table, stop what is listed there first.",
    )
    parser.add_argument("--dry-run", action="store_true", help="say what the policy would stop; stop nothing")
    parser.add_argument("--blackbox-dir", type=Path, metavar="DIR", help="where the black box is kept")
    parser.add_argument("--no-blackbox", action="store_true", help="do not keep a black-box recording")
    parser.add_argument("--duration", type=float, metavar="S", help="stop after S seconds (default: run on)")
    add_line_arguments(parser)
    add_source_arguments(parser)
    return parser


def main(argv: list[str]) -> int:
    from sparktop.action_log import ActionLog
    from sparktop.blackbox import BlackBox
    from sparktop.collect.controllers import controller_for
    from sparktop.collect.factory import SourceError, make_source
    from sparktop.guard.alerts import Alerts
    from sparktop.guard.service import STATE_FILE, Guard
    from sparktop.runner import SessionRunner
    from sparktop.serve_cli import load_lines
    from sparktop.session import Session

    parser = _parser()
    opts = parser.parse_args(argv)
    if opts.duration is not None and not opts.duration > 0:
        parser.error("--duration must be greater than 0")
    interval, safe, aggressive, hours = load_lines(parser, opts)
    settings, problems = load_guard_settings(opts.config)
    for problem in problems:
        print(f"sparktop guard: {problem} (the guard will not act)", file=sys.stderr)
    try:
        source = make_source(demo=opts.demo, replay=opts.replay, seed=opts.seed)
    except SourceError as exc:
        print(f"sparktop guard: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    box = None
    if settings.blackbox and not opts.no_blackbox:
        directory = opts.blackbox_dir or (Path(settings.blackbox_dir) if settings.blackbox_dir else None)
        box = BlackBox(
            directory or state_dir() / "blackbox",
            max_bytes=int(settings.blackbox_max_mb * 1024**2),
            max_age_s=settings.blackbox_max_hours * 3600,
            fsync_every_s=settings.fsync_s,
        )
    demo = getattr(source, "name", "") == "demo"
    session = Session(safe_bytes=safe, max_bytes=aggressive, history_hours=hours)
    guard = Guard(
        settings,
        session,
        Alerts(command=settings.command, webhook=settings.webhook, journal=not demo),
        controller=controller_for(source),
        # a demo's simulated stops never reach the real action log
        action_log=None if demo else ActionLog(),
        blackbox=box,
        state_path=None if demo else state_dir() / STATE_FILE,
        dry_run=opts.dry_run,
    )
    dry = " (dry run: stops nothing)" if opts.dry_run and settings.armed else ""
    print(
        f"sparktop guard: {settings.describe_policy()}{dry}; {getattr(source, 'name', 'live')} source; "
        f"black box {box.directory if box else 'off'}",
        flush=True,
    )
    stopping = threading.Event()

    def stop(_signum: int, _frame: object) -> None:
        stopping.set()

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, stop)
    runner = SessionRunner(
        source,
        session,
        interval,
        on_snapshot=guard.on_snapshot,
        on_error=lambda line: print(f"sparktop guard: {line}", file=sys.stderr, flush=True),
    )
    runner.start()
    started = time.monotonic()
    try:
        # until a signal, the end of a replayed recording, or --duration
        while not stopping.wait(0.2) and runner.running:
            if opts.duration is not None and time.monotonic() - started >= opts.duration:
                break
    finally:
        runner.stop()
        guard.close()
        source.close()
    return 0
