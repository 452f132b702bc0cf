"""`sparktop web`: the dashboard in a browser, through textual-serve.

One collector for every browser session: this process samples the machine once per interval (the same
`SamplingLoop` as `sparktop serve`) and publishes it on a private loopback exporter; textual-serve starts one
dashboard process per browser tab, and each of them reads that exporter's /snapshot.json
(`sparktop --exporter URL`) instead of reading /proc, NVML and Docker itself. Ten open tabs cost ten cheap
HTTP reads per tick, not ten collectors.

Sessions are read-only (stop and signal keys refuse, and the header says so) unless `--allow-actions`; with
it, a session acts on this machine's Docker engine and processes — bound to 127.0.0.1 by default, because
textual-serve has no authentication of its own.
"""

from __future__ import annotations

import argparse
import shlex
import socket
import sys

from sparktop.serve_cli import add_line_arguments, lines_of, load_settings
from sparktop.text import say

DEFAULT_PORT = 8765


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`sparktop web`'s arguments (cli.SUBCOMMANDS)."""
    from sparktop.cli import add_source_arguments

    parser.description = "The dashboard in a browser (textual-serve). Read-only unless --allow-actions."
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine)"
    )
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    parser.add_argument(
        "--allow-actions", action="store_true",
        help="let browser sessions stop containers and signal processes (default: read-only)",
    )  # fmt: skip
    add_line_arguments(parser)
    add_source_arguments(parser)


def _parser() -> argparse.ArgumentParser:
    from sparktop.cli import CliParser

    parser = CliParser(prog="sparktop web")
    add_arguments(parser)
    return parser


def session_command(exporter_url: str, allow_actions: bool, config: str | None) -> str:
    """What textual-serve runs for each browser session: the dashboard on the shared exporter."""
    args = [sys.executable, "-m", "sparktop.cli", "--exporter", exporter_url]
    args.append("--exporter-actions" if allow_actions else "--read-only")
    if config:
        args += ["--config", config]
    return shlex.join(args)


def _port_free(host: str, port: int) -> str | None:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            return exc.strerror or str(exc)
    return None


def main(argv: list[str]) -> int:
    return run(_parser().parse_args(argv))


def run(opts: argparse.Namespace) -> int:
    from sparktop.collect.factory import SourceError, make_source
    from sparktop.exporter.server import ExporterServer
    from sparktop.exporter.state import SamplingLoop

    parser = _parser()  # for its usage errors
    if not 0 < opts.port <= 65535:
        parser.error("--port must be 1-65535")
    config, _problems = load_settings(parser, opts)
    interval, safe, aggressive, hours = lines_of(config)
    problem = _port_free(opts.host, opts.port)
    if problem:
        say("sparktop web", f"cannot listen on {opts.host}:{opts.port}: {problem}")
        return 2
    try:
        source = make_source(demo=opts.demo, replay=opts.replay, seed=opts.seed, config=config)
    except SourceError as exc:
        say("sparktop web", exc)
        return 2
    loop = SamplingLoop(source, interval, safe, aggressive, history_hours=hours)
    exporter = ExporterServer(loop, "127.0.0.1", 0)  # private: only this machine's sessions read it
    loop.step()
    loop.start()
    exporter.start()
    from textual_serve.server import Server

    mode = "actions allowed" if opts.allow_actions else "read-only"
    command = session_command(exporter.url, opts.allow_actions, str(opts.config) if opts.config else None)
    print(
        f"sparktop web: http://{opts.host}:{opts.port} ({mode}); sessions read {exporter.url}",
        file=sys.stderr,
    )
    try:
        Server(command, host=opts.host, port=opts.port, title=f"sparktop ({mode})").serve()
    finally:
        exporter.shutdown()
        loop.stop()
    return 0
