"""`sparktop serve`: run the collector and expose it to Prometheus (and `sparktop --nodes`) over HTTP.

Read-only by construction: the server answers GET and HEAD on /metrics, /snapshot.json and /healthz only.
"""

from __future__ import annotations

import argparse
import signal
import time

from sparktop.commands.common import (
    add_command_lines_argument,
    add_line_arguments,
    add_source_arguments,
    interrupt_on_stop_signals,
    lines_of,
    load_settings,
)
from sparktop.core.safe_text import say

DEFAULT_PORT = 9877
DEFAULT_LISTEN = f"127.0.0.1:{DEFAULT_PORT}"
# exporter.dcgm's modes, spelled out so building the parser imports no exporter (a test keeps them equal)
DCGM_CHOICES = ("auto", "all", "fb", "off")


def parse_listen(text: str) -> tuple[str, int]:
    """'ADDR:PORT', ':PORT' (loopback) or '[v6]:PORT' → (host, port); ValueError with one line otherwise."""
    host, sep, port_text = text.rpartition(":")
    if not sep or not port_text.isdigit():
        raise ValueError(f"--listen {text!r}: expected ADDR:PORT, e.g. 127.0.0.1:{DEFAULT_PORT}")
    port = int(port_text)
    if not 0 <= port <= 65535:
        raise ValueError(f"--listen {text!r}: port must be 0-65535")
    host = host.strip("[]") or "127.0.0.1"
    return host, port


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`sparktop serve`'s arguments (cli.SUBCOMMANDS)."""

    parser.description = (
        "Prometheus exporter: /metrics, /snapshot.json (as `--once --json`) and /healthz. "
        "Read-only: nothing over HTTP acts on the machine."
    )
    parser.add_argument(
        "--listen", default=DEFAULT_LISTEN, metavar="ADDR:PORT",
        help=f"where to listen (default {DEFAULT_LISTEN}, this machine only; 0.0.0.0:PORT exposes it)",
    )  # fmt: skip
    parser.add_argument(
        "--dcgm", choices=DCGM_CHOICES, default="auto",
        help="also export dcgm-exporter's GPU fields under its names and labels: auto (default) on a "
        "unified-memory GPU (DCGM cannot report its memory), fb only FB_USED/FREE there (beside "
        "dcgm-exporter), all on every GPU (no dcgm-exporter), off",
    )  # fmt: skip
    parser.add_argument(
        "--consumer-pids", action="store_true",
        help="one consumer series per process, with a `pid` label (default: processes of one name summed, "
        "so the series do not grow with every process that ever ran)",
    )  # fmt: skip
    add_command_lines_argument(parser)
    add_line_arguments(parser)
    add_source_arguments(parser)


def run(opts: argparse.Namespace) -> int:
    from sparktop.commands.common import command_parser
    from sparktop.exporter.metrics import ExportOptions
    from sparktop.exporter.server import ExporterServer
    from sparktop.exporter.state import SamplingLoop
    from sparktop.sources.factory import SourceError, open_source

    parser = command_parser("sparktop serve", add_arguments)  # for its usage errors
    try:
        host, port = parse_listen(opts.listen)
    except ValueError as exc:
        parser.error(str(exc))
    config, _problems = load_settings(parser, opts)
    interval, safe, aggressive, hours = lines_of(config)
    try:
        source = open_source(demo=opts.demo, replay=opts.replay, seed=opts.seed, config=config)
    except SourceError as exc:
        say("sparktop serve", exc)
        return 2
    loop = SamplingLoop(
        source, interval, safe, aggressive, history_hours=hours, warn=lambda line: say("sparktop serve", line)
    )
    try:
        options = ExportOptions(dcgm=opts.dcgm, consumer_pids=opts.consumer_pids)
        server = ExporterServer(loop, host, port, options, command_lines=opts.command_lines)
    except OSError as exc:
        source.close()
        say("sparktop serve", f"cannot listen on {opts.listen}: {exc.strerror or exc}")
        return 2
    loop.step()  # the first scrape already has data
    loop.start()
    say("sparktop serve", f"{server.url}/metrics ({source.name} source)")
    interrupt_on_stop_signals(signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
    try:
        # Inside the try: the server answers from its own thread at once, and a stop signal sent on that first
        # answer may reach this thread while start() still runs (a loaded machine: exit by SIGINT, not 0).
        server.start()
        while True:
            # In slices, not signal.pause(): a signal the kernel hands to another thread runs its handler
            # here only once this thread wakes, and pause() wakes for a signal to this thread alone.
            time.sleep(1.0)
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        loop.stop()
    return 0
