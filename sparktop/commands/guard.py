"""`sparktop guard [--dry-run]`: the headless service that forecasts exhaustion, warns, keeps the black box
and — only with a policy in the config file's `[guard]` table — stops what is listed there first."""

from __future__ import annotations

import argparse
import signal
import time
from pathlib import Path

from sparktop.commands.common import EXIT_BAD_INPUT, interrupt_on_stop_signals
from sparktop.core.safe_text import say


def state_dir() -> Path:
    from sparktop.settings.files import state_dir as settings_state_dir

    return settings_state_dir()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`sparktop guard`'s arguments (commands.main.SUBCOMMANDS)."""
    from sparktop.commands.common import add_line_arguments, add_source_arguments

    parser.description = (
        "Forecast memory exhaustion, warn (terminal, system journal, hooks), keep a black-box recording, "
        "and, only with a policy in the config's [guard] table, stop what is listed there first."
    )
    parser.add_argument("--dry-run", action="store_true", help="say what the policy would stop; stop nothing")
    parser.add_argument("--blackbox-dir", type=Path, metavar="DIR", help="where the black box is kept")
    parser.add_argument("--no-blackbox", action="store_true", help="do not keep a black-box recording")
    parser.add_argument("--duration", type=float, metavar="S", help="stop after S seconds (default: run on)")
    add_line_arguments(parser)
    add_source_arguments(parser)


def run(opts: argparse.Namespace) -> int:
    from sparktop.commands.common import command_parser, lines_of, load_settings
    from sparktop.guard.alerts import Alerts
    from sparktop.guard.blackbox import BlackBox
    from sparktop.guard.service import STATE_FILE, Guard
    from sparktop.session.runner import SessionRunner
    from sparktop.session.session import Session
    from sparktop.sources.factory import SourceError, open_source
    from sparktop.stopping.stop_log import ActionLog

    parser = command_parser("sparktop guard", add_arguments)  # for its usage errors
    if opts.duration is not None and not opts.duration > 0:
        parser.error("--duration must be greater than 0")
    # The config file is read once: its [guard] table (validated like every other setting; one with a
    # problem is not used, so the guard forecasts, warns and records, and never acts on a policy it could
    # not read) and the lines.
    config, problems = load_settings(parser, opts)
    settings = config.guard
    interval, safe, aggressive, hours = lines_of(config)
    for problem in problems:  # load_settings has printed them; say what a bad [guard] table means here
        if "guard." in problem or ": guard:" in problem:
            say("sparktop guard", f"{problem}: the [guard] table is not used (no policy)")
    try:
        source = open_source(demo=opts.demo, replay=opts.replay, seed=opts.seed, config=config)
    except SourceError as exc:
        say("sparktop guard", exc)
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
    demo = source.name == "demo"
    session = Session(safe_bytes=safe, max_bytes=aggressive, history_hours=hours)
    guard = Guard(
        settings,
        session,
        Alerts(command=settings.command, webhook=settings.webhook, journal=not demo),
        controller=source.controller(),
        # a demo's simulated stops never reach the real action log
        action_log=None if demo else ActionLog(),
        blackbox=box,
        state_path=None if demo else state_dir() / STATE_FILE,
        dry_run=opts.dry_run,
    )
    dry = " (dry run: stops nothing)" if opts.dry_run and settings.armed else ""
    print(
        f"sparktop guard: {settings.describe_policy()}{dry}; {source.name} source; "
        f"black box {box.directory if box else 'off'}",
        flush=True,
    )
    interrupt_on_stop_signals(signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
    runner = SessionRunner(
        source,
        session,
        interval,
        on_snapshot=guard.on_snapshot,
        on_error=lambda line: say("sparktop guard", line),
    )
    runner.start()
    started = time.monotonic()
    try:
        # until a stop signal (KeyboardInterrupt here), the end of a replayed recording, or --duration
        deadline = None if opts.duration is None else started + opts.duration
        while not runner.join(None if deadline is None else max(0.0, deadline - time.monotonic())):
            if deadline is not None and time.monotonic() >= deadline:
                break
    except KeyboardInterrupt:
        pass
    finally:
        runner.stop()
        guard.close()
        source.close()
    return 0
