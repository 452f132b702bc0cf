"""`sparktop web` against a hostile browser (issue #27 item 1), its sessions' lifetime and bounds (issues #23,
#31, #32).

A real `sparktop web --demo` process and a real HTTP / WebSocket client (aiohttp): any web page the admin's
browser opens can reach a server on 127.0.0.1, so a request from another origin, another Host, or without
the per-start token must get nothing; the token URL printed at start gets a session; sessions are capped,
closed ones included until their process is gone, and each bounds its memory; a read-only session's keys
write no file on the server; on SIGTERM, SIGHUP or SIGKILL `web` ends and its sessions with it, quietly and
with status 0 where it can, leaving no token in its log nor in a file.

Each session is a whole dashboard process (~0.7 s of CPU) and each `web` ~0.5 s: the tests that only ask a
server use the worker's shared one (tests/fixtures/web.py shared_web); the cap's web is also SIGTERM's, and
each check that needs a session of its own is made on the fewest sessions.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pty
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import aiohttp
import psutil
import pytest

from sparktop.web.lifeline import FEED_TOKEN_ENV, SESSION_ADDRESS_SPACE
from tests.fixtures.exporters import free_port, get
from tests.fixtures.load import load_per_core, wall_limit
from tests.fixtures.web import (
    Web,
    await_page,
    await_start_line,
    running,
    sessions_opened_since,
    shared_web,
    start_web,
)

ANSI = re.compile(r"\x1b\[[0-9;?$<>=]*[A-Za-z~]|\x1b\][^\x07]*\x07|\x1b[()][A-Z0-9]|\x1b[=>]")
# How long a session may take to start, draw or end, a web to answer: generous (a loaded machine), the defects
# were far beyond it or never ended.
SETTLE_S = 20.0 * load_per_core()
WebSocket = aiohttp.ClientWebSocketResponse
AS_NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]  # another local user


@pytest.fixture
def web(request: pytest.FixtureRequest) -> Web:
    """The worker's shared web, for the tests that only ask a server (they start no session)."""
    return shared_web(request)


def client() -> aiohttp.ClientSession:
    # aiohttp keeps no cookie for an IP address unless told to; browsers do.
    return aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))


async def ws_status(web: Web, query: str = "", headers: dict[str, str] | None = None) -> int:
    """The HTTP status a WebSocket handshake gets (101: a session was opened, and is closed again)."""
    async with client() as session:
        try:
            ws = await session.ws_connect(f"{web.base}/ws?width=80&height=24{query}", headers=headers)
        except aiohttp.WSServerHandshakeError as exc:
            return exc.status
        await ws.close()
        return 101


async def read_until(ws: WebSocket, text: str, timeout: float = SETTLE_S) -> str:
    """What the session drew (escape sequences stripped) up to the first frame that shows `text`."""
    seen = ""
    deadline = time.monotonic() + timeout
    while text not in ANSI.sub("", seen):
        left = deadline - time.monotonic()
        if left <= 0:
            pytest.fail(f"{text!r} not shown within {timeout:.0f} s; last: {ANSI.sub('', seen)[-300:]!r}")
        message = await ws.receive(timeout=left)
        if message.type == aiohttp.WSMsgType.BINARY:
            seen += message.data.decode("utf-8", "replace")
        elif message.type == aiohttp.WSMsgType.TEXT:
            seen += message.data
        elif message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
            pytest.fail(f"the session closed before showing {text!r}")
    return ANSI.sub("", seen)


# How long a slot may stay taken after its process is gone (the server polls it): well under the 10 s an old
# aiohttp's close handshake held it.
FREED_S = wall_limit(3.0, defect=10.0)


async def until(check: Callable[[], bool], timeout: float = SETTLE_S) -> None:
    deadline = time.monotonic() + timeout
    while not check() and time.monotonic() < deadline:
        await asyncio.sleep(0.1)


async def open_session(session: aiohttp.ClientSession, web: Web) -> WebSocket:
    """As the browser does: the token URL (which sets the cookie), then the page's WebSocket. A refusal for
    the cap (503) is asked again for up to FREED_S: the server frees a slot when it has seen the session's
    process end (it polls it), a moment after this test's `web.sessions()` may have."""
    async with session.get(f"{web.base}/?token={web.token}") as page:
        assert page.status == 200
    deadline = time.monotonic() + FREED_S
    while True:
        try:
            return await session.ws_connect(
                f"{web.base}/ws?width=120&height=36", headers={"Origin": web.base}
            )
        except aiohttp.WSServerHandshakeError as refused:
            if refused.status != 503 or time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)


# --- who may have a page and a session ----------------------------------------------------------------------


async def test_the_page_needs_the_token_printed_at_start(web: Web) -> None:
    async with client() as session:
        for url in ("/", "/?token=wrong", "/download/x"):
            async with session.get(web.base + url) as reply:
                assert reply.status == 403, url
                assert "token" in await reply.text()
        async with session.get(f"{web.base}/?token={web.token}") as reply:
            assert reply.status == 200
            assert reply.headers["Referrer-Policy"] == "no-referrer"  # the token never leaves in a Referer
            cookie = reply.cookies[f"sparktop-web-{web.port}"]
            assert cookie.value == web.token and cookie["httponly"] and cookie["samesite"] == "Strict"
    # The page's own script and fonts are the same for everyone: no token needed.
    assert get(f"{web.base}/static/js/textual.js")[0] == 200


async def test_a_foreign_origin_or_host_gets_no_session(web: Web) -> None:
    token = f"&token={web.token}"
    before = web.sessions()  # the shared web's: another test's, still ending
    # The attack as reported: a page elsewhere opening the WebSocket (even one that learnt the token).
    assert await ws_status(web, token, {"Origin": "http://evil.example"}) == 403
    assert await ws_status(web, token, {"Origin": "null"}) == 403
    assert await ws_status(web, token, {"Origin": f"http://127.0.0.1:{web.port + 1}"}) == 403
    # DNS rebinding: evil.example resolved to 127.0.0.1, so Origin and Host agree, on a foreign name.
    rebound = f"evil.example:{web.port}"
    assert await ws_status(web, token, {"Origin": f"http://{rebound}", "Host": rebound}) == 403
    # This server's own origin, without the token.
    assert await ws_status(web, "", {"Origin": web.base}) == 403
    assert await ws_status(web, "&token=wrong", {"Origin": web.base}) == 403
    assert sessions_opened_since(web, before) == []  # not one process was started for them


async def test_sessions_are_capped_closed_ones_included_each_read_only_and_bounded_and_end_on_sigterm(
    tmp_path: Path,
) -> None:
    """One `web` (--max-sessions 2, run as a service) and three sessions (each a dashboard process, ~0.65 s of
    CPU, more at the largest size) for all of these:
    - the first, the token URL's as a browser opens it, is read-only: `B` over the WebSocket, as a hostile
      page typed it, leaves no history file in the state dir; it reads web's private feed with a token no
      other user can read (issue #31 item 6, test_web_secrets.py's topic);
    - the second draws a whole frame at the largest size under its address-space limit;
    - the cap (2 here): a third session is refused while two are open, and starts no process;
    - as reported (issue #31): a session opened large and closed while it draws, and a new one asked for at
      once. A new session is let in only while the dashboards still alive (the closed one included) are
      under the cap: the defect freed a slot when its socket closed and let a new dashboard start beside the
      one still quitting (asked at the moment of the close, the defect is caught on every run). The closed
      session frees its place: two are open again; the new one dies with its connection;
    - then SIGTERM (a service manager) to `web`, the first session still open: all that a stop must do
      (`ends_on_a_signal_with_its_sessions`), as for SIGHUP and SIGKILL below."""
    web = start_web("--max-sessions", "2", state_dir=tmp_path)
    try:
        await capped_read_only_and_bounded_then_stopped(web)
    finally:
        web.stop()


async def capped_read_only_and_bounded_then_stopped(web: Web) -> None:
    most = 0
    sampling = True

    async def sample() -> None:  # all along, whatever the moments checked below
        nonlocal most
        while sampling:
            most = max(most, len(web.sessions()))
            await asyncio.sleep(0.05)

    async def open_large(session: aiohttp.ClientSession) -> WebSocket:
        return await session.ws_connect(f"{web.base}/ws?width=1500&height=500", headers={"Origin": web.base})

    kept_url = url_file_of(web)
    sampler = asyncio.create_task(sample())
    try:
        async with client() as session, client() as third:
            kept = await open_session(session, web)  # the token URL's, as a browser opens it
            await is_a_read_only_session_that_writes_no_file(kept, web, [])
            (kept_process,) = web.sessions()
            await reads_the_feed_with_a_token_no_other_user_can_read(web, kept_process)
            # Read as a browser reads (answering the server's heartbeat pings) until the stop below: left
            # unread, a loaded machine's slow steps passed the 15 s heartbeat and the server closed it.
            reading = asyncio.create_task(drain(kept))
            large = await open_large(session)
            await until(lambda: len(web.sessions()) == 2)  # its process started (the server may be a moment)
            (large_process,) = [p for p in web.sessions() if p != kept_process]
            await draws_at_the_largest_size_within_its_limit(large, large_process)
            async with third.get(web.url) as page:
                assert page.status == 200
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await open_large(third)
            assert refused.value.status == 503, "a third session beside two open ones is refused"
            assert len(web.sessions()) == 2, "the refused session started a dashboard process"
            await large.close()  # while it draws (the demo's next update, at the largest size)
            # At once: the new session let in must find the closed dashboard gone (the kept one takes the
            # cap's other place).
            deadline = time.monotonic() + 2 * SETTLE_S
            while True:
                try:
                    ws = await open_large(session)
                    break
                except aiohttp.WSServerHandshakeError as refused:
                    assert refused.status == 503, refused
                    assert time.monotonic() < deadline, "a closed session never freed its place"
                    await asyncio.sleep(0.05)
            still = running([large_process])
            assert still == [], "let in beside a closed dashboard still alive, and an open one"
            message = await ws.receive(timeout=SETTLE_S)  # it has started
            assert message.type in (aiohttp.WSMsgType.TEXT, aiohttp.WSMsgType.BINARY), message
            # Its process is seen a moment later on a loaded machine (one side-by-side run counted 1 here).
            await until(lambda: len(web.sessions()) == 2)
            assert len(web.sessions()) == 2, "the closed session freed its place: two are open again"
            await ws.close()
            await until(lambda: web.sessions() == [kept_process], 2 * SETTLE_S)
            assert web.sessions() == [kept_process], "a session outlived its connection"
            sampling = False
            await sampler
            assert most <= 2, f"{most} dashboard processes alive with --max-sessions 2"
            assert list(web.state_dir.rglob("history-*")) == [], "a read-only session wrote a history file"
            reading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reading
            await ends_on_a_signal_with_its_sessions(web, signal.SIGTERM, session, kept, kept_url)
    finally:
        sampling = False
        await sampler


async def drain(ws: WebSocket) -> None:
    """Read what the session sends until it closes, as a browser does (aiohttp answers pings as it reads)."""
    while (await ws.receive()).type not in (
        aiohttp.WSMsgType.CLOSE,
        aiohttp.WSMsgType.CLOSED,
        aiohttp.WSMsgType.ERROR,
    ):
        pass


async def is_a_read_only_session_that_writes_no_file(
    ws: WebSocket, web: Web, others: list[psutil.Process]
) -> None:
    """The session on `ws` (the one of web's sessions not in `others`) says it is read-only in a browser, runs
    read-only as web's own session, and `B` (write a history file) writes nothing on the server."""
    shown = await read_until(ws, "Memory pool")
    assert "READ-ONLY" in shown and "BROWSER" in shown, "the header says read-only, in a browser"
    (argv,) = [p.cmdline() for p in web.sessions() if p not in others]
    assert "--read-only" in argv, argv
    assert argv[argv.index("--web-session") + 1] == str(web.process.pid), argv
    await ws.send_json(["stdin", "B"])
    await read_until(ws, "no files on the server")


async def reads_the_feed_with_a_token_no_other_user_can_read(web: Web, process: psutil.Process) -> None:
    """The session `process` holds the feed's token in its environment and reads the feed with it (it draws
    the demo's containers, which only the feed has); neither token is on its command line, which every user
    can read, nor in web's log; its environment is its user's alone (`nobody` cannot read it)."""
    feed_token = process.environ()[FEED_TOKEN_ENV]
    async with aiohttp.ClientSession() as plain:
        headers = {"Authorization": f"Bearer {feed_token}"}
        async with plain.get(f"{web.exporter_url}/snapshot.json", headers=headers) as reply:
            assert reply.status == 200 and "ssd-tetris-train-1" in await reply.text(), (
                "the feed with its token"
            )
    argv = " ".join(process.cmdline())
    assert feed_token not in argv and web.token not in argv, "a token on a session's command line"
    done = subprocess.run(
        [*AS_NOBODY, "cat", f"/proc/{process.pid}/environ"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )
    assert done.returncode != 0 and feed_token not in done.stdout, "another user read a session's environment"
    assert feed_token not in web.log() and web.token not in web.log(), "a token in web's log"


async def draws_at_the_largest_size_within_its_limit(ws: WebSocket, process: psutil.Process) -> None:
    """The session on `ws` (its dashboard `process`) draws a whole frame at the largest size, and its address
    space is capped at SESSION_ADDRESS_SPACE, soft and hard."""
    seen = ""
    deadline = time.monotonic() + 2 * SETTLE_S
    while "Memory pool" not in seen and time.monotonic() < deadline:  # it runs at the largest size
        message = await ws.receive(timeout=SETTLE_S)
        if message.type == aiohttp.WSMsgType.BINARY:
            seen += message.data.decode("utf-8", "replace")
    assert "Memory pool" in seen, "no whole frame at the largest size"
    limits = Path(f"/proc/{process.pid}/limits").read_text()
    line = next(line for line in limits.splitlines() if line.startswith("Max address space"))
    soft, hard = line.split()[3:5]
    assert int(soft) == int(hard) == SESSION_ADDRESS_SPACE, line


def test_allow_actions_is_refused_on_a_network_address(capsys: pytest.CaptureFixture[str]) -> None:
    from sparktop.commands.main import main

    for host in ("0.0.0.0", "::", "192.0.2.1"):  # refused before anything listens: in-process is enough
        with pytest.raises(SystemExit) as exited:
            main(["web", "--demo", "--host", host, "--allow-actions", "--port", str(free_port())])
        assert exited.value.code == 3
        assert "--allow-actions only on a loopback address" in capsys.readouterr().err


# --- `web` ends on a signal, its sessions with it (issue #23 "Long sessions", issues #31, #32) --------------


# On a terminal, as Jupyter does: "sparktop web: http://…/?token=… (read-only; also in FILE); sessions read …"
ON_A_TERMINAL = re.compile(
    r"sparktop web: (http://\S+)/\?token=(\S+) \(.*also in (\S+?)\); sessions read (http://\S+)"
)


def start_web_on_terminal(state_dir: Path) -> tuple[Web, threading.Thread]:
    """`sparktop web --demo` with a terminal for its stderr (a user's shell), and a thread that copies what it
    shows there to the log file until the terminal closes (join it before reading all of it)."""
    port = free_port()
    log_path = state_dir / f"web-{port}.log"
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "sparktop", "web", "--demo", "--port", str(port)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=follower,
        env={**os.environ, "XDG_STATE_HOME": str(state_dir)},
    )  # fmt: skip
    os.close(follower)

    def copy() -> None:
        with log_path.open("ab", buffering=0) as log:
            while True:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:  # EIO: the terminal's last writer is gone
                    break
                if not chunk:
                    break
                log.write(chunk)
        os.close(leader)

    log_path.touch()
    copier = threading.Thread(target=copy, daemon=True)
    copier.start()
    deadline = time.monotonic() + SETTLE_S
    match = await_start_line(process, log_path, ON_A_TERMINAL, deadline)
    web = Web(process, port, match.group(2), match.group(4), state_dir, log_path)
    assert match.group(1) == web.base, match.group(0)
    await_page(web, deadline)
    return web, copier


def url_file_of(web: Web) -> Path:
    """The file web's first line names as holding the URL to open (as a service: "open the URL in FILE"; on a
    terminal: "also in FILE)")."""
    first = web.log().splitlines()[0]
    found = re.search(r"open the URL in (\S+)", first) or re.search(r"also in (\S+?)\)", first)
    assert found is not None, first
    return Path(found.group(1))


@pytest.mark.parametrize("how", [signal.SIGHUP, signal.SIGKILL], ids=["SIGHUP", "SIGKILL"])
async def test_web_ends_on_a_signal_with_its_sessions_and_leaves_no_token_behind(
    tmp_path: Path, how: signal.Signals
) -> None:
    """One `web` and one session per signal (each a process of ~0.7 s of CPU; SIGTERM's is the cap test's
    web, test_sessions_are_capped_..._and_end_on_sigterm) for all that a stop must do
    (`ends_on_a_signal_with_its_sessions`). SIGHUP (a closed terminal) starts it on a terminal."""
    on_a_terminal = how == signal.SIGHUP
    copier = None
    if on_a_terminal:
        web, copier = start_web_on_terminal(tmp_path)
    else:
        web = start_web(state_dir=tmp_path)
    try:
        kept = url_file_of(web)
        async with client() as session:
            ws = await open_session(session, web)
            await read_until(ws, "Memory pool")
            await ends_on_a_signal_with_its_sessions(web, how, session, ws, kept, copier)
    finally:
        web.stop()


async def ends_on_a_signal_with_its_sessions(
    web: Web,
    how: signal.Signals,
    session: aiohttp.ClientSession,
    ws: WebSocket,
    kept: Path,
    copier: threading.Thread | None = None,
) -> None:
    """`web`, with its session on `ws` open (browser `session`), stopped by `how`:
    - its sessions end with it, whatever the signal, though a browser holds them open (issue #23);
    - SIGTERM (a service manager) and SIGHUP (a closed terminal, `systemctl reload`) end it with status 0,
      quietly: no "Event loop is closed" traceback for a session's pipe (issue #31);
    - its log (the journal under systemd: SIGTERM and SIGKILL start it so) never holds the token nor a
      guessed one, though its access lines are there. On a terminal (`copier` copies it to the log) its first
      line shows the URL with the token, once, and the file it names keeps it (issue #32 "Rough");
    - the file that kept the URL (`kept`) is gone once it has stopped: a stale token is of no use."""
    on_a_terminal = copier is not None
    assert kept.read_text() == web.url + "\n", "the URL to open is kept in the file the start line names"
    # The page's script and the WebSocket with the token in the query, as a client may send them.
    referer = {"Referer": web.url}
    async with session.get(f"{web.base}/static/js/textual.js", headers=referer) as reply:
        assert reply.status == 200
    async with session.get(f"{web.base}/download/nothing?token={web.token}", headers=referer) as reply:
        assert reply.status == 404
    async with session.get(f"{web.base}/?token=a-guess") as reply:
        assert reply.status in (200, 403)  # the cookie stands in for the wrong query
    children = web.sessions()
    assert children
    # A browser that stops reading: its session blocks on output (what held `web` for 23 s).
    web.process.send_signal(how)
    # 5 s: a session quits as the TUI does (terminal restored), which a loaded machine slows (scaled by its
    # load); the defect was a session that never ended.
    limit = wall_limit(5.0, defect=60.0)
    _, still = psutil.wait_procs(children, timeout=limit)
    assert still == [], f"session processes outlived `web` ({how.name}) by {limit:.0f} s: {still}"
    await ws.close()
    # Its own exit, as slow as the sessions' on a loaded machine (a second suite beside this one: over 5 s);
    # the defect held it 23 s.
    code = await asyncio.to_thread(web.process.wait, wall_limit(5.0, defect=23.0))
    if copier is not None:
        copier.join(SETTLE_S)
    log = web.log()
    assert '"GET /?token=… HTTP/1.1" 200' in log, "the access log is there, and it was written"
    assert "GET /download/nothing?token=… HTTP/1.1" in log
    shown = 1 if on_a_terminal else 0  # the start line on a terminal, as Jupyter's
    assert log.count(web.token) == shown, f"the token is in web's log {log.count(web.token)} times"
    assert "a-guess" not in log, "a guessed token is in web's log"
    if how != signal.SIGKILL:  # nothing runs after a SIGKILL
        assert code == 0, f"web ended with status {code} on {how.name}: {log}"
        assert "Event loop is closed" not in log and "Traceback" not in log, log
        assert not kept.exists(), f"the URL with the token is still kept in {kept} after web stopped"
