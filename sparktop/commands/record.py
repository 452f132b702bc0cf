"""`sparktop record FILE`: append snapshots to a JSONL file, for `sparktop --replay FILE`."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

from sparktop.commands.common import interrupt_on_stop_signals
from sparktop.core.safe_text import say
from sparktop.core.snapshot import Snapshot
from sparktop.session.runner import SessionRunner
from sparktop.session.session import Session
from sparktop.settings.config import INTERVAL_RANGE, apply_overrides, finite_check, load_config
from sparktop.settings.files import SettingsError
from sparktop.sources.recording import Recorder, RecordMode
from sparktop.sources.snapshot_source import SnapshotSource


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from sparktop.commands.common import add_config_argument, add_source_arguments

    parser.description = (
        "Append snapshots to a JSONL file (gzip-compressed when FILE ends in .gz: about 20 times smaller), "
        "flushed every tick; replay with `sparktop --replay FILE`. A "
        "recording holds the command line, user and memory of every process on the machine (arguments "
        "included, passwords or tokens given on a command line too): it is created readable by you only "
        "(0600); think before sharing it."
    )
    parser.add_argument("file", type=Path)
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between snapshots (default 1)")
    parser.add_argument("--duration", type=float, help="stop after this many seconds (default: until Ctrl-C)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--append", action="store_true", help="append to an existing recording")
    mode.add_argument("--overwrite", action="store_true", help="replace an existing file")
    add_source_arguments(parser)
    add_config_argument(parser)  # the model servers it lists are recorded too


_INTERVAL = finite_check(*INTERVAL_RANGE, "seconds")
_DURATION = finite_check(0, 10 * 365 * 86400, "seconds", low_open=True)


def run(args: argparse.Namespace) -> int:
    from sparktop.sources.factory import SourceError, open_source

    for flag, check, value in (
        ("--interval", _INTERVAL, args.interval),
        ("--duration", _DURATION, args.duration),
    ):
        if value is None:
            continue
        try:
            check(value)
        except ValueError as exc:
            say("sparktop record", SettingsError(None, None, flag, str(exc)))
            return 3
    mode: RecordMode = "append" if args.append else "overwrite" if args.overwrite else "new"
    try:
        config, problems = load_config(getattr(args, "config", None))
    except SettingsError as exc:  # a --config file that cannot be read is a bad flag
        say("sparktop record", exc)
        return 3
    for problem in problems:  # that key keeps its default, as in the dashboard
        say("sparktop record", f"config: {problem}")
    try:
        config = apply_overrides(config, {"host_root": ("--root", args.root)})
    except SettingsError as exc:
        say("sparktop record", exc)
        return 3
    try:
        source = open_source(demo=args.demo, replay=args.replay, seed=args.seed, config=config)
    except SourceError as exc:
        say("sparktop record", exc)
        return 2
    # `kill`, `timeout` or a closed session end the recording as Ctrl-C does: the file is closed properly
    # (a compressed one gets its end marker) and the count is reported.
    interrupt_on_stop_signals(signal.SIGTERM, signal.SIGHUP)
    try:
        count = record(
            source,
            args.file,
            interval=args.interval,
            duration=args.duration,
            mode=mode,
            # a failed sample and the footprint database failing: one line each, and the recording goes on
            on_error=lambda line: say("sparktop record", line),
        )
    except FileExistsError as exc:
        say("sparktop record", exc)
        return 2
    except OSError as exc:
        say("sparktop record", f"{args.file}: {exc.strerror or exc}")
        return 2
    finally:
        source.close()
    say("sparktop record", f"wrote {count} snapshots to {args.file}")
    return 0


def record(
    source: SnapshotSource,
    path: str | os.PathLike[str],
    interval: float = 1.0,
    duration: float | None = None,
    mode: RecordMode = "new",
    on_tick: Callable[[Snapshot], object] | None = None,
    *,
    on_error: Callable[[str], None] | None = None,
    fsync: bool = True,
    monotonic: Callable[[], float] = time.monotonic,
    wait: Callable[[float], object] | None = None,
) -> int:
    """Sample `source` every `interval` seconds into `path` until `duration` has passed (None: until Ctrl-C,
    or until a replayed recording ends). Returns the number of snapshots written.

    The sampling is `SessionRunner`'s, on its thread: the grid, the session (so each line carries the
    accounting the dashboard shows), footprint problems and failed samples (a line to `on_error`, and the
    recording goes on). `duration` is a number of ticks on the grid: those that start before it. Ctrl-C
    (KeyboardInterrupt on this thread) stops it cleanly: the tick in progress is finished and written, and
    every line is complete and on disk. A line that cannot be written (disk full) stops it and the OSError
    is raised. `monotonic` and `wait` are the schedule's clock and sleep, for tests."""
    if interval <= 0:
        raise ValueError("interval must be greater than 0")
    with Recorder(path, mode=mode, fsync=fsync) as recorder:
        unwritten: list[OSError] = []

        def write(snapshot: Snapshot) -> None:
            try:
                recorder.write(snapshot)
            except OSError as exc:
                unwritten.append(exc)
                runner.stop()
                return
            if on_tick is not None:
                on_tick(snapshot)

        runner = SessionRunner(
            source,
            Session(views=False),
            interval,
            on_snapshot=write,
            on_error=on_error,
            monotonic=monotonic,
            wait=wait,
            thread_name="sparktop-record",
        )
        try:
            with contextlib.suppress(KeyboardInterrupt):
                # Inside: the sampling thread may take ticks (and the user press Ctrl-C) before start()
                # returns on this thread.
                runner.start(max_ticks=None if duration is None else ticks_within(duration, interval))
                # In slices: a signal the kernel hands to another thread reaches this one within a second.
                while not runner.join(1.0):
                    pass
        finally:
            # The tick in progress ends with its line written; a second Ctrl-C ends the wait (a line cut short
            # is skipped on replay).
            with contextlib.suppress(KeyboardInterrupt):
                runner.stop(timeout=None)
        if unwritten:
            raise unwritten[0]
        return recorder.count


def ticks_within(duration: float, interval: float) -> int:
    """How many ticks of the grid 0, interval, 2·interval … start before `duration` (at least one)."""
    n = math.ceil(duration / interval)
    if n > 1 and (n - 1) * interval >= duration:  # the division rounded up past a whole number
        n -= 1
    elif n * interval < duration:
        n += 1
    return max(1, n)
