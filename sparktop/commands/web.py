"""`sparktop web`: the dashboard in a browser, through textual-serve.

One collector for every browser session: this process samples the machine once per interval (the same
`SamplingLoop` as `sparktop serve`) and publishes it on a private loopback exporter; textual-serve starts one
dashboard process per browser tab, and each of them reads that exporter's /snapshot.json
(`sparktop --exporter URL`) instead of reading /proc, NVML and Docker itself. Ten open tabs cost ten cheap
HTTP reads per tick, not ten collectors.

Sessions are read-only (stop and signal keys refuse, and the header says so, and no key reads or writes a
file on the server) unless `--allow-actions`; with it, a session acts on this machine's Docker engine and
processes, and only on a loopback bind. Every page and session needs the token printed at start, from this
server's own origin (web/browser_server.py); at most --max-sessions at once; each session dies with this
process.

Where the token is: in the URL printed at start when stderr is a terminal, and in a file only this user can
read (`url_file`, for as long as the server runs), so it can be found again; never in a log line (stderr is
the journal under systemd) nor on a session's command line. The sessions' feed (the loopback exporter) needs
a second token, handed to each session in its environment (web/lifeline.py, FEED_TOKEN_ENV).
"""

from __future__ import annotations

import argparse
import os
import shlex
import socket
import sys
from pathlib import Path

from sparktop.commands.common import add_command_lines_argument, add_line_arguments, lines_of, load_settings
from sparktop.core.safe_text import say

DEFAULT_PORT = 8765
DEFAULT_MAX_SESSIONS = 4  # web_server.DEFAULT_MAX_SESSIONS (not imported here: it loads aiohttp)
# The port taken, the source unreadable, or the web extra not installed.
EXIT_CANNOT_START = 2
# What `pip install 'sparktop[web]'` adds (pyproject.toml), by the name it is imported as.
WEB_EXTRA_MODULES = ("textual_serve", "aiohttp", "aiohttp_jinja2", "jinja2")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`sparktop web`'s arguments (cli.SUBCOMMANDS)."""
    from sparktop.commands.common import add_source_arguments

    parser.description = "The dashboard in a browser (textual-serve). Read-only unless --allow-actions."
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine)"
    )
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    parser.add_argument(
        "--allow-actions", action="store_true",
        help="let browser sessions stop containers and signal processes (default: read-only; loopback only)",
    )  # fmt: skip
    parser.add_argument(
        "--max-sessions", type=int, default=DEFAULT_MAX_SESSIONS, metavar="N",
        help=f"browser sessions open at once, each a dashboard process (default {DEFAULT_MAX_SESSIONS})",
    )  # fmt: skip
    add_command_lines_argument(parser)  # the sessions' exporter is on a loopback port any local user reaches
    add_line_arguments(parser)
    add_source_arguments(parser)


def session_command(exporter_url: str, allow_actions: bool, config: str | None) -> str:
    """What textual-serve runs for each browser session: the dashboard on the shared exporter, dying with
    this process (`--web-session PID`). textual-serve runs it through a shell: `exec`, so that the session is
    this process's own child, which the parent-death signal needs."""
    args = [sys.executable, "-m", "sparktop.commands.main", "--exporter", exporter_url]
    args += ["--web-session", str(os.getpid())]
    args.append("--exporter-actions" if allow_actions else "--read-only")
    if config:
        args += ["--config", config]
    return "exec " + shlex.join(args)


def url_file(port: int) -> Path:
    """Where the URL to open (with its token) is kept while `web` on `port` runs: 0600 in the state dir."""
    from sparktop.settings.files import state_dir

    return state_dir() / f"web-{port}.url"


def _keep_url(url: str, port: int) -> tuple[Path | None, str | None]:
    """(the file now holding `url`, None) or (None, why it could not be written)."""
    from sparktop.core.private_files import open_private_file

    path = url_file(port)
    try:
        with open_private_file(path, "overwrite") as out:
            out.write(url + "\n")
    except OSError as exc:
        return None, str(exc)
    return path, None


def _port_free(host: str, port: int) -> str | None:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            return exc.strerror or str(exc)
    return None


def run(opts: argparse.Namespace) -> int:
    from sparktop.commands.common import command_parser
    from sparktop.exporter.server import ExporterServer
    from sparktop.exporter.state import SamplingLoop
    from sparktop.sources.factory import SourceError, open_source

    try:
        from sparktop.web.browser_server import PAGE_DIR, GuardedServer, is_loopback, new_token
        from sparktop.web.lifeline import FEED_TOKEN_ENV
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").partition(".")[0]
        if missing not in WEB_EXTRA_MODULES:
            raise
        # Into the environment sparktop runs from, whichever that is (a venv, pipx's).
        pip = f"{shlex.quote(sys.executable)} -m pip install 'sparktop[web]'"
        say("sparktop web", f"the browser view needs the web extra ({missing} is not installed): {pip}")
        return EXIT_CANNOT_START

    parser = command_parser("sparktop web", add_arguments)  # for its usage errors
    if not 0 < opts.port <= 65535:
        parser.error("--port must be 1-65535")
    if opts.max_sessions < 1:
        parser.error("--max-sessions must be at least 1")
    if opts.allow_actions and not is_loopback(opts.host):
        # Whoever reaches the port with the token could kill any process here: not over a network.
        parser.error(f"--allow-actions only on a loopback address (127.0.0.1, ::1), not --host {opts.host}")
    config, _problems = load_settings(parser, opts)
    interval, safe, aggressive, hours = lines_of(config)
    problem = _port_free(opts.host, opts.port)
    if problem:
        say("sparktop web", f"cannot listen on {opts.host}:{opts.port}: {problem}")
        return EXIT_CANNOT_START
    try:
        source = open_source(demo=opts.demo, replay=opts.replay, seed=opts.seed, config=config)
    except SourceError as exc:
        say("sparktop web", exc)
        return EXIT_CANNOT_START
    loop = SamplingLoop(source, interval, safe, aggressive, history_hours=hours)
    # Only this machine's sessions read it, but any local user could: command lines only if asked for.
    # Any local user can reach a loopback port: the sessions' feed needs a token of its own, which each
    # session finds in its environment (textual-serve copies this process's), readable by this user only.
    feed_token = new_token()
    exporter = ExporterServer(loop, "127.0.0.1", 0, command_lines=opts.command_lines, token=feed_token)
    os.environ[FEED_TOKEN_ENV] = feed_token
    loop.step()
    loop.start()
    exporter.start()
    mode = "actions allowed" if opts.allow_actions else "read-only"
    command = session_command(exporter.url, opts.allow_actions, str(opts.config) if opts.config else None)
    server = GuardedServer(
        command, host=opts.host, port=opts.port, title=f"sparktop ({mode})", token=new_token(),
        max_sessions=opts.max_sessions,
        templates_path=PAGE_DIR,  # textual-serve's page, its font served locally
    )  # fmt: skip
    kept, problem = _keep_url(server.start_url, opts.port)
    feed = f"sessions read {exporter.url} (with their own token)"
    if sys.stderr.isatty() or kept is None:
        # As Jupyter does, on a terminal (not a log): the URL with its token; also in the file.
        where = f"also in {kept}" if kept is not None else f"not kept in a file: {problem}"
        say("sparktop web", f"{server.start_url} ({mode}; {where}); {feed}")
    else:
        say(
            "sparktop web",
            f"{server.public_url} ({mode}): open the URL in {kept} (only you can read it); {feed}",
        )
    sys.stderr.flush()
    try:
        server.serve()
    finally:
        exporter.shutdown()
        loop.stop()
        if kept is not None:
            kept.unlink(missing_ok=True)
    return 0
