"""Where `sparktop web`'s secrets are, and are not (issue #31 items 6 and 7, issue #32 "Rough").

A real `sparktop web --demo` run as a service runs it (its output a log file, not a terminal), real HTTP and
WebSocket clients; the other local user is `nobody`, through setpriv.
"""

from __future__ import annotations

import os
import pty
import re
import select
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from tests.fixtures.exporters import free_port, get, stop_process
from tests.fixtures.web import Web, start_web

AS_NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
LOAD = max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
SETTLE_S = 20.0 * LOAD

# What `nobody` runs: the status a GET gets (the system's python, the standard library only).
FETCH = """
import sys, urllib.request, urllib.error
try:
    with urllib.request.urlopen(sys.argv[1], timeout=10) as reply:
        print(reply.status, len(reply.read()))
except urllib.error.HTTPError as exc:
    print(exc.code, len(exc.read()))
"""


def as_nobody(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*AS_NOBODY, *argv], capture_output=True, text=True, timeout=60, cwd="/")


@pytest.fixture
def web() -> Iterator[Web]:
    """A `sparktop web` of the test's own: the test that stops it, and reads what it left, takes this one."""
    server = start_web()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def running_web() -> Iterator[Web]:
    """One `sparktop web` for the tests that only ask it (each start is ~1 s of CPU)."""
    server = start_web()
    try:
        yield server
    finally:
        server.stop()


async def open_session(session: aiohttp.ClientSession, web: Web) -> aiohttp.ClientWebSocketResponse:
    async with session.get(web.url) as page:
        assert page.status == 200
    ws = await session.ws_connect(f"{web.base}/ws?width=100&height=30", headers={"Origin": web.base})
    await ws.receive(timeout=SETTLE_S)
    return ws


async def test_no_log_line_holds_the_token_nor_a_file_once_web_stops(web: Web) -> None:
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        ws = await open_session(session, web)
        # The page's script and the WebSocket with the token in the query, as a client may send them.
        referer = {"Referer": web.url}
        async with session.get(f"{web.base}/static/js/textual.js", headers=referer) as reply:
            assert reply.status == 200
        async with session.get(f"{web.base}/download/nothing?token={web.token}", headers=referer) as reply:
            assert reply.status == 404
        async with session.get(f"{web.base}/?token=a-guess") as reply:
            assert reply.status in (200, 403)  # the cookie stands in for the wrong query
        await ws.close()
    kept = url_file_of(web)
    assert kept.exists()
    stop_process(web.process, timeout=SETTLE_S)
    log = web.log()
    assert '"GET /?token=… HTTP/1.1" 200' in log  # the access log is there, and it was written
    assert "GET /download/nothing?token=… HTTP/1.1" in log
    assert web.token not in log
    assert "a-guess" not in log
    assert not kept.exists()  # nor is it kept in a file once web has stopped: a stale token is of no use


def test_the_sessions_feed_answers_no_other_user(running_web: Web) -> None:
    """As reported: the start line names the feed's loopback port, and its /snapshot.json (names, users,
    memory) answered every local user. Now it needs a token that no other user can read."""
    for path in ("/snapshot.json", "/metrics", "/healthz", "/"):
        done = as_nobody("/usr/bin/python3", "-c", FETCH, running_web.exporter_url + path)
        assert done.stdout.split()[:1] == ["401"], (path, done.stdout, done.stderr)
    assert get(f"{running_web.exporter_url}/snapshot.json")[0] == 401  # this user too, without the token


async def test_a_session_reads_the_feed_with_a_token_no_other_user_can_read(running_web: Web) -> None:
    web = running_web
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        ws = await open_session(session, web)
        (process,) = web.sessions()
        feed_token = web.feed_token()
        # The session reads the feed with it (it draws the demo's containers, which only the feed has).
        async with aiohttp.ClientSession() as plain:
            headers = {"Authorization": f"Bearer {feed_token}"}
            async with plain.get(f"{web.exporter_url}/snapshot.json", headers=headers) as reply:
                assert reply.status == 200 and "ssd-tetris-train-1" in await reply.text()
        # Neither token is on a session's command line, which every user can read.
        argv = " ".join(process.cmdline())
        assert feed_token not in argv and web.token not in argv
        # Its environment is its user's alone.
        done = as_nobody("cat", f"/proc/{process.pid}/environ")
        assert done.returncode != 0 and feed_token not in done.stdout
        assert feed_token not in web.log() and web.token not in web.log()
        await ws.close()


def url_file_of(web: Web) -> Path:
    """The file web's first line names as holding the URL to open."""
    first = web.log().splitlines()[0]
    return Path(re.search(r"open the URL in (\S+)", first).group(1))  # type: ignore[union-attr]


def test_the_url_is_kept_in_a_file_only_its_user_reads_while_web_runs(running_web: Web) -> None:
    """(And removed when web stops: test_no_log_line_holds_the_token, which stops its own.)"""
    web = running_web
    first = web.log().splitlines()[0]
    path = url_file_of(web)
    assert path.read_text() == f"{web.base}/?token={web.token}\n"
    info = path.stat()
    assert stat.S_IMODE(info.st_mode) == 0o600 and info.st_uid == os.geteuid()
    assert web.token not in first  # not in a log: stderr is the journal under systemd
    done = as_nobody("cat", str(path))
    assert done.returncode != 0 and web.token not in done.stdout


def test_on_a_terminal_the_url_is_printed_and_kept(tmp_path: Path) -> None:
    port = free_port()
    leader, follower = pty.openpty()
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path)}
    process = subprocess.Popen(
        [sys.executable, "-m", "sparktop", "web", "--demo", "--port", str(port)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=follower, env=env,
    )  # fmt: skip
    os.close(follower)
    try:
        shown = b""
        deadline = time.monotonic() + SETTLE_S
        while b"\n" not in shown and time.monotonic() < deadline:
            if select.select([leader], [], [], 0.5)[0]:
                shown += os.read(leader, 4096)
        line = shown.decode(errors="replace").splitlines()[0]
        found = re.search(r"(http://127\.0\.0\.1:\d+/\?token=\S+) .*also in (\S+?)\)", line)
        assert found is not None, line
        assert Path(found.group(2)).read_text() == found.group(1) + "\n"
    finally:
        stop_process(process, timeout=SETTLE_S)
        os.close(leader)
