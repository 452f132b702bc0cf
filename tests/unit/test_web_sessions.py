"""`sparktop web`'s sessions are bounded (issue #31 items 4 and 5, issue #32 item 12).

Real servers and real WebSocket clients (aiohttp), real processes counted: textual-serve's server (sparktop's
GuardedServer), one for the module, running a session command that plays a hostile or a watching session
(it ignores SIGTERM and never reads its input; it writes down the size it was given).

Checked on a real `sparktop web --demo` in tests/integration/test_web_guard.py, where each web and session
serves several checks: the cap with closed sessions still quitting, a session's address-space limit, and
the exit on SIGHUP and SIGTERM (status 0, quietly).
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import psutil
import pytest

from sparktop.web.browser_server import MAX_HEIGHT, MAX_WIDTH
from tests.fixtures.exporters import free_port, stop_process
from tests.fixtures.load import load_per_core
from tests.fixtures.web import running

# A machine shared with other test runs is slow: deadlines are generous, the defects were far beyond them.
LOAD = load_per_core()
SETTLE_S = 20.0 * LOAD
WebSocket = aiohttp.ClientWebSocketResponse


def client() -> aiohttp.ClientSession:
    return aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))


async def until(check, timeout: float) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        await asyncio.sleep(0.1)
    return bool(check())


# --- textual-serve's server with a session command of the test's ----------------------------------------

# Says it is a Textual app, then draws for ever without reading its input (the "quit" textual-serve sends
# it): a session busy drawing. SIGTERM is noted in a file and ignored. A frame every 10 ms: never an end to
# its output, as a busy session's (drawing flat out, it and the server relaying it took 1.4 cores for the
# whole test).
STUBBORN = """
import os, signal, sys, time
def noted(*_):
    with open(sys.argv[1], "a") as out:
        out.write(f"TERM {os.getpid()}\\n")
signal.signal(signal.SIGTERM, noted)
out = sys.stdout.buffer
out.write(b"__GANGLION__\\n")
out.flush()
payload = b"x" * 4096
while True:
    out.write(b"D" + len(payload).to_bytes(4, "big") + payload)
    out.flush()
    time.sleep(0.01)
"""

# Writes down the terminal size it started with and every message textual-serve sends it.
WATCHER = """
import json, os, sys
log = open(sys.argv[1], "a", buffering=1)
log.write(json.dumps({"start": [os.environ["COLUMNS"], os.environ["ROWS"]]}) + "\\n")
sys.stdout.buffer.write(b"__GANGLION__\\n")
sys.stdout.buffer.flush()
stdin = sys.stdin.buffer
while True:
    head = stdin.read(5)
    if len(head) < 5:
        break
    body = stdin.read(int.from_bytes(head[1:], "big"))
    if head[:1] == b"M":
        log.write(body.decode() + "\\n")
"""

# The server's waits are the test's (argv 4-6: a session's input, then quit and SIGTERM): what they guard is
# that the session ends, not how long the defaults wait (10 s for input, 2 + 3 s to quit: 15 s a test).
SERVER = """
import sys
from sparktop.web import browser_server
browser_server.INPUT_WAIT_S = float(sys.argv[4])
server = browser_server.GuardedServer(sys.argv[1], host="127.0.0.1", port=int(sys.argv[2]), title="t",
                                      token="t0ken", max_sessions=int(sys.argv[3]))
server.quit_wait_s, server.term_wait_s = float(sys.argv[5]), float(sys.argv[6])
server.serve()
"""


@dataclass
class Served:
    process: subprocess.Popen[bytes]
    port: int
    notes: Path
    script: Path  # what each session runs: the test's, written by `play`

    def play(self, session_script: str) -> None:
        """The sessions started from now on run `session_script`, their notes in an empty file."""
        self.script.write_text(textwrap.dedent(session_script))
        self.notes.write_text("")

    def end_sessions(self) -> None:
        """SIGKILL to the sessions still running (the test's own: the module's tests run one at a time)."""
        sessions = self.sessions()
        for session in sessions:
            session.kill()
        psutil.wait_procs(sessions, timeout=SETTLE_S)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def sessions(self) -> list[psutil.Process]:
        return running(psutil.Process(self.process.pid).children())

    async def connect(self, client: aiohttp.ClientSession, query: str = "") -> WebSocket:
        return await client.ws_connect(f"{self.base}/ws?token=t0ken{query}", headers={"Origin": self.base})


async def connect_when_free(served: Served, client: aiohttp.ClientSession, query: str = "") -> WebSocket:
    """A connection as soon as a slot is free: the server frees one when it has seen the session's process
    end (it polls it), a moment after this test may have; well before an old aiohttp's 10 s close timeout,
    which held the slot once the process was gone."""
    deadline = time.monotonic() + min(5.0 * LOAD, 8.0)
    while True:
        try:
            return await served.connect(client, query)
        except aiohttp.WSServerHandshakeError as refused:
            if refused.status != 503 or time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)


def serve(
    tmp_path: Path, max_sessions: int, input_wait_s: float, quit_wait_s: float, term_wait_s: float
) -> Served:
    script = tmp_path / "session.py"
    script.touch()
    notes = tmp_path / "notes"
    notes.touch()
    port = free_port()
    command = f"exec {sys.executable} {script} {notes}"
    process = subprocess.Popen(
        [sys.executable, "-c", SERVER, command, str(port), str(max_sessions),
         str(input_wait_s), str(quit_wait_s), str(term_wait_s)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    served = Served(process, port, notes, script)
    deadline = time.monotonic() + SETTLE_S
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return served
        except OSError:
            time.sleep(0.1)
    stop_process(process, 5)
    pytest.fail("the server did not listen", pytrace=False)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One server for the module's tests (a start is ~0.6 s of CPU), one session at a time; each test says
    what its sessions run. A session ends 2 s after input it does not take (the defect: never); asked to
    quit, it has 1 s, then 2 s after SIGTERM: the slot must stay taken all the while, which a client sees at
    once."""
    served = serve(
        tmp_path_factory.mktemp("served"), max_sessions=1, input_wait_s=2.0, quit_wait_s=1.0, term_wait_s=2.0
    )
    try:
        yield served
    finally:
        served.end_sessions()
        stop_process(served.process, 10)


def playing(server: Served, session_script: str) -> Iterator[Served]:
    server.play(session_script)
    try:
        yield server
    finally:
        server.end_sessions()  # the next test's first session waits for the slot (connect_when_free)


@pytest.fixture
def stubborn(server: Served) -> Iterator[Served]:
    yield from playing(server, STUBBORN)


@pytest.fixture
def watcher(server: Served) -> Iterator[Served]:
    yield from playing(server, WATCHER)


async def test_a_busy_session_that_ignores_sigterm_is_killed_when_its_socket_closes(stubborn: Served) -> None:
    async with client() as first:
        ws = await connect_when_free(stubborn, first)
        await ws.receive(timeout=SETTLE_S)  # it draws
        (process,) = stubborn.sessions()
        await ws.close()
    # Its slot stays taken while its process lives (the defect: freed at once, the process drawing on).
    async with client() as second:
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await stubborn.connect(second)
        assert refused.value.status == 503
        assert process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    # Asked to quit, then SIGTERM (ignored), then SIGKILL: gone within the server's few seconds.
    assert await until(lambda: not stubborn.sessions(), 2 * SETTLE_S), "the session outlived its socket"
    assert stubborn.notes.read_text() == f"TERM {process.pid}\n"  # TERM first, to it alone
    async with client() as third:  # and its slot is free again, as soon as the server has seen it gone
        ws = await connect_when_free(stubborn, third)
        await ws.receive(timeout=SETTLE_S)
        await ws.close()


async def test_a_session_that_takes_no_input_ends_when_its_socket_closes(stubborn: Served) -> None:
    """Keys typed into a session that reads none fill its input pipe; the server, waiting to deliver them,
    must still see the socket close and end the session."""
    async with client() as session:
        ws = await connect_when_free(stubborn, session)
        await ws.receive(timeout=SETTLE_S)
        (process,) = stubborn.sessions()
        for _ in range(64):  # 1 MiB of keys: far more than a pipe holds
            await ws.send_json(["stdin", "k" * 16384])
        await ws.close()
    assert await until(
        lambda: not process.is_running() or process.status() == psutil.STATUS_ZOMBIE, 3 * SETTLE_S
    )
    assert await until(lambda: not stubborn.sessions(), SETTLE_S)


async def test_a_browser_gets_no_terminal_larger_than_a_screen(watcher: Served) -> None:
    async with client() as session:
        ws = await connect_when_free(watcher, session, "&width=20000&height=5000")
        await ws.send_json(["resize", {"width": 6000, "height": 2000}])
        await ws.send_json(["resize", {"width": -5, "height": "x"}])
        await ws.send_json(["resize", {"width": 120, "height": 40}])
        await ws.send_str("not json")  # skipped, the session goes on
        await ws.send_json(["resize", {"width": 100, "height": 30}])
        assert await until(lambda: '"width": 100' in watcher.notes.read_text(), SETTLE_S)
        await ws.close()
    seen = [json.loads(line) for line in watcher.notes.read_text().splitlines()]
    assert seen[0] == {"start": [str(MAX_WIDTH), str(MAX_HEIGHT)]}
    sizes = [(m["width"], m["height"]) for m in seen[1:] if m.get("type") == "resize"]
    assert sizes == [(MAX_WIDTH, MAX_HEIGHT), (10, 24), (120, 40), (100, 30)]
