"""What the commands share: the exit codes, the usage-error parser, the source, config and line flags, and
the settings read from the config file with the flags on top (one rule for every command)."""

from __future__ import annotations

import argparse
import signal
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from sparktop.core.safe_text import say

if TYPE_CHECKING:
    from sparktop.settings.config import Config

EXIT_BAD_INPUT = 3  # a bad flag or value, on every subcommand (plan's 1 and 2 mean TIGHT and OOM RISK)
EXIT_NO_DATA = 2  # the data source cannot be read (an exporter or Prometheus down), or no terminal to draw on
# A reader that stops early (`sparktop --once --json | head`) ends our output: exit as a program that
# SIGPIPE ended would, without a traceback.
EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE


def interrupt_on_stop_signals(*signums: signal.Signals) -> None:
    """`kill`, `systemctl stop` or a closed session stop a headless command as Ctrl-C does: KeyboardInterrupt
    in the main thread, which then cleans up in its own time. The handler takes no lock: it runs in the main
    thread between two bytecodes, perhaps inside `Event.wait()` holding that event's lock, where a handler
    calling `event.set()` would wait for itself forever."""
    for signum in signums:
        signal.signal(signum, _interrupt)


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


class CliParser(argparse.ArgumentParser):
    """argparse that exits 3 on a usage error (2 means "OOM risk" for `plan`, and one code for bad input
    serves scripts best) with one line on stderr, pointing at --help rather than printing the whole usage."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.command_parsers: dict[str, argparse.ArgumentParser] = {}  # name -> its parser (build_parser)

    def error(self, message: str) -> NoReturn:
        from sparktop.core.safe_text import visible

        # The message quotes the bad argument back (`unrecognized arguments: -ESC]2;…`): made visible, and
        # kept to one line (argparse's own messages may hold a newline).
        line = " ".join(visible(message).split())
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: {line} (see {self.prog} --help)\n")


def command_parser(prog: str, add_arguments: Callable[[argparse.ArgumentParser], None]) -> CliParser:
    """A command's own parser (`sparktop serve`, ...), for the usage errors its `run` finds after parsing and
    for tests reading a unit file's ExecStart."""
    parser = CliParser(prog=prog)
    add_arguments(parser)
    return parser


def demo_scenario(name: str) -> str:
    """`--demo NAME` checked as the command line is read, so an unknown one is a usage error (exit 3) like
    any other bad flag value."""
    from sparktop.sources.demo import DEMO_SCENARIOS

    if name not in DEMO_SCENARIOS:
        raise argparse.ArgumentTypeError(
            f"unknown demo scenario {name!r}; choose one of: {', '.join(DEMO_SCENARIOS)}"
        )
    return name


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("data source (default: this machine, live)")
    one_source = group.add_mutually_exclusive_group()  # both given: a usage error, exit 3
    one_source.add_argument(
        "--demo",
        nargs="?",
        const="default",
        type=demo_scenario,
        metavar="SCENARIO",
        help="a simulated DGX Spark (scenarios: default, audio, training, critical, everything, idle, "
        "servers, contention; discrete: a workstation with a discrete H100 instead)",
    )
    one_source.add_argument(
        "--replay", metavar="FILE", help="play back a recording made with `sparktop record`"
    )
    group.add_argument("--seed", type=int, default=0, help="random seed of the demo (default 0)")
    group.add_argument(
        "--root",
        metavar="DIR",
        help="read the host mounted at DIR (sparktop in a container: its /proc, /sys/fs/cgroup, Docker "
        "socket and /etc/hostname under DIR; run it with --pid=host --cgroupns=host)",
    )


def add_config_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, metavar="FILE", help="config file (default: XDG config dir)")


def add_line_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--interval", type=float, help="seconds between samples (default: config, 1)")
    parser.add_argument(
        "--safe", type=float, metavar="GB", help="safe line in GB (default 80; 80/128 of a small pool)"
    )
    parser.add_argument(
        "--max", type=float, metavar="GB", help="aggressive line in GB (default 100; 100/128 of a small pool)"
    )
    add_config_argument(parser)


def add_command_lines_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--command-lines", action="store_true",
        help="include each process's command line in /snapshot.json (default: left out; an argv may hold "
        "a password, and whoever reaches the port would read it)",
    )  # fmt: skip


# Each setting a flag can set: config key -> (the flag, its attribute in the parsed arguments). A flag left
# out (None, or False for an on/off flag) keeps the file's value.
LINE_FLAGS: dict[str, tuple[str, str]] = {
    "interval": ("--interval", "interval"),
    "safe_gb": ("--safe", "safe"),
    "max_gb": ("--max", "max"),
    "host_root": ("--root", "root"),
}
DASHBOARD_FLAGS: dict[str, tuple[str, str]] = {
    "interval": ("--interval", "interval"),
    "safe_gb": ("--safe", "safe"),
    "max_gb": ("--max", "max"),
    "units": ("--units", "units"),
    "theme": ("--theme", "theme"),
    "read_only": ("--read-only", "read_only"),
    "host_root": ("--root", "root"),
}


def settings_from(
    opts: argparse.Namespace, flags: dict[str, tuple[str, str]] = DASHBOARD_FLAGS
) -> tuple[Config, list[str]]:
    """The config file with the flags on top, by the same rules. Problems in the file are returned (that
    key keeps its default); a bad flag raises SettingsError naming it."""
    from sparktop.settings.config import apply_overrides, load_config

    config, problems = load_config(opts.config)
    overrides: dict[str, tuple[str, Any]] = {}
    for key, (flag, dest) in flags.items():
        value = getattr(opts, dest)
        overrides[key] = (flag, None if value is False else value)
    return apply_overrides(config, overrides), problems


def load_settings(parser: argparse.ArgumentParser, opts: argparse.Namespace) -> tuple[Config, list[str]]:
    """The config file with the flags on top, by the dashboard's rules: the file's problems are printed
    (that key keeps its default) and returned (the guard says what a bad [guard] table means), a bad flag
    is a usage error naming it."""
    from sparktop.settings.files import SettingsError

    try:  # a --config file that cannot be read is a bad flag
        config, problems = settings_from(opts, LINE_FLAGS)
    except SettingsError as exc:
        parser.error(str(exc))
    for problem in problems:
        say(parser.prog, problem)
    return config, problems


def lines_of(config: Config) -> tuple[float, float | None, float | None, float]:
    """(interval, safe bytes, max bytes, history hours); a line the user did not set is None: the session
    places the reference's on the machine's pool (analysis/lines.py)."""
    from sparktop.analysis.lines import LineChoice

    choice = LineChoice.of(config)
    return config.interval, choice.safe, choice.aggressive, config.history_hours
