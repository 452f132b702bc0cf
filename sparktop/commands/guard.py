"""`sparktop guard [--dry-run]`: the headless service that forecasts exhaustion, warns, keeps the black box
and — only with a policy in the config file's `[guard]` table — stops what is listed there first.
`sparktop guard --check`: what each rule of that policy matches now, and why a rule matches nothing."""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from sparktop.commands.common import EXIT_BAD_INPUT, EXIT_NO_DATA, interrupt_on_stop_signals
from sparktop.core.safe_text import say

if TYPE_CHECKING:
    from sparktop.settings.guard import GuardSettings
    from sparktop.sources.snapshot_source import SnapshotSource


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
    parser.add_argument(
        "--check",
        action="store_true",
        help="say what each stop rule matches now and why a rule matches nothing, then exit (1: a rule "
        "matches nothing now); stops nothing",
    )
    parser.add_argument("--blackbox-dir", type=Path, metavar="DIR", help="where the black box is kept")
    parser.add_argument("--no-blackbox", action="store_true", help="do not keep a black-box recording")
    parser.add_argument("--duration", type=float, metavar="S", help="stop after S seconds (default: run on)")
    add_line_arguments(parser)
    add_source_arguments(parser)


def run(opts: argparse.Namespace) -> int:
    from sparktop.commands.common import command_parser, lines_of, load_settings
    from sparktop.guard.alerts import Alerts, is_terminal, stamp
    from sparktop.guard.blackbox import BlackBox
    from sparktop.guard.matching import match_rules, unmatchable
    from sparktop.guard.service import STATE_FILE, Guard
    from sparktop.session.runner import SessionRunner
    from sparktop.session.session import Session
    from sparktop.sources.factory import SourceError, open_source
    from sparktop.sources.snapshot_source import take_sample
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
    if opts.check:
        try:
            return check(settings, source)
        finally:
            source.close()
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
    session = Session(safe_bytes=safe, max_bytes=aggressive, history_hours=hours, views=False)
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
    runner = SessionRunner(
        source,
        session,
        interval,
        on_snapshot=guard.on_snapshot,
        on_error=lambda line: say("sparktop guard", line),
    )
    # The first sample, before the start line: that line says which rules cannot match now (no engine to
    # name containers, nothing running), instead of a policy that silently protects nothing.
    first = take_sample(source) if settings.armed else None
    missing = unmatchable(match_rules(settings.stop, first.snapshot)) if first and first.snapshot else None
    started_line = (
        f"sparktop guard: {settings.describe_policy()}{dry}"
        + (f"; cannot match now: {missing}" if missing else "")
        + f"; {source.name} source; black box {box.directory if box else 'off'}"
    )
    # Before the start line, and everything after it inside the try: a service manager (or a script) may stop
    # the guard the moment it says it started, and the black box must still be closed properly.
    interrupt_on_stop_signals(signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
    try:
        print(stamp(started_line, time.time() if is_terminal(sys.stdout) else None), flush=True)
        if first is not None and first.snapshot is not None:
            runner.ingest(first.snapshot)
        runner.start()
        started = time.monotonic()
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


CHECK_GAP_S = 1.0  # between --check's two samples: enough to show what is growing
CHECK_MATCHES_SHOWN = 10  # per rule, the fastest growing first


def check(settings: GuardSettings, source: SnapshotSource) -> int:
    """`guard --check`: each rule, what it matches now (with each match's size and growth over two samples)
    or why it matches nothing, and what the guard would stop if the trigger held now."""
    from sparktop.core.format import fmt_bytes
    from sparktop.core.safe_text import visible
    from sparktop.guard.matching import match_rules
    from sparktop.guard.policy import GrowthWatch, find_target, growth_text, watch_matches
    from sparktop.sources.snapshot_source import take_sample

    print(f"sparktop guard --check: {settings.describe_policy()}", flush=True)
    if not settings.stop:
        say("sparktop guard", "no stop rules in the [guard] table: the guard never acts")
        return 1
    watch = GrowthWatch(settings.window_s)
    snapshot = None
    for i in range(2):
        if i and source.name == "live":
            time.sleep(CHECK_GAP_S)
        sampled = take_sample(source)
        if sampled.snapshot is None:
            break
        snapshot = sampled.snapshot
        watch_matches(watch, match_rules(settings.stop, snapshot), snapshot.timestamp)
    if snapshot is None:
        say("sparktop guard", "no sample to check the rules against")
        return EXIT_NO_DATA
    reports = match_rules(settings.stop, snapshot)
    for n, report in enumerate(reports, 1):
        print(visible(f"rule {n}: {report.rule.describe()}"))
        if not report.matches:
            print(visible(f"  matches nothing: {report.why_not}"))
            continue
        ranked = sorted(
            report.matches, key=lambda m: ((watch.growth(m.key) or (0, 0.0))[0], m.bytes), reverse=True
        )
        for match in ranked[:CHECK_MATCHES_SHOWN]:
            grew = growth_text(watch.growth(match.key))
            owner = f", user {match.user}" if match.user is not None else ""
            size = fmt_bytes(match.bytes) + (f", {grew}" if grew else "")
            print(visible(f"  matches {match.label}: {size}{owner}"))
        if len(ranked) > CHECK_MATCHES_SHOWN:
            print(f"  and {len(ranked) - CHECK_MATCHES_SHOWN} more matches")
    target = find_target(settings.stop, snapshot, watch=watch, reports=reports)
    if target is None:
        print("if the trigger held now: nothing to stop (no rule matches anything)")
    else:
        print(visible(f"if the trigger held now: stop {target.label} ({target.rule}): {target.why}"))
    return 1 if any(not r.matches for r in reports) else 0
