"""Where `sparktop web`'s secrets are, and are not (issue #31 items 6 and 7, issue #32 "Rough").

A real `sparktop web --demo` run as a service runs it (its output a log file, not a terminal), real HTTP and
WebSocket clients; the other local user is `nobody`, through setpriv. That no log line holds the token, and
no file once web has stopped, and that on a terminal the URL is printed and kept, are checked where web is
stopped with a session open, on each signal (tests/integration/test_web_guard.py: one `web` and one session
for all that a stop must do).
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
from pathlib import Path

import aiohttp
import pytest

from sparktop.web.lifeline import FEED_TOKEN_ENV
from tests.fixtures.exporters import get
from tests.fixtures.load import load_per_core
from tests.fixtures.web import Web, sessions_opened_since, shared_web

AS_NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
SETTLE_S = 20.0 * load_per_core()

# What `nobody` runs: the status a GET gets, a line per URL (the system's python, the standard library only).
FETCH = """
import sys, urllib.request, urllib.error
for url in sys.argv[1:]:
    try:
        with urllib.request.urlopen(url, timeout=10) as reply:
            print(reply.status, len(reply.read()))
    except urllib.error.HTTPError as exc:
        print(exc.code, len(exc.read()))
"""


def as_nobody(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*AS_NOBODY, *argv], capture_output=True, text=True, timeout=60, cwd="/")


@pytest.fixture
def running_web(request: pytest.FixtureRequest) -> Web:
    """The worker's shared `sparktop web`: these tests only ask it, and each finds its own session."""
    return shared_web(request)


async def open_session(session: aiohttp.ClientSession, web: Web) -> aiohttp.ClientWebSocketResponse:
    async with session.get(web.url) as page:
        assert page.status == 200
    ws = await session.ws_connect(f"{web.base}/ws?width=100&height=30", headers={"Origin": web.base})
    await ws.receive(timeout=SETTLE_S)
    return ws


def test_the_sessions_feed_answers_no_other_user(running_web: Web) -> None:
    """As reported: the start line names the feed's loopback port, and its /snapshot.json (names, users,
    memory) answered every local user. Now it needs a token that no other user can read."""
    paths = ("/snapshot.json", "/metrics", "/healthz", "/")
    done = as_nobody("/usr/bin/python3", "-c", FETCH, *(running_web.exporter_url + path for path in paths))
    statuses = [line.split()[0] for line in done.stdout.splitlines()]
    assert len(statuses) == len(paths), (done.stdout, done.stderr)
    for path, status in zip(paths, statuses, strict=True):
        assert status == "401", (path, done.stdout, done.stderr)
    assert get(f"{running_web.exporter_url}/snapshot.json")[0] == 401  # this user too, without the token


async def test_a_session_reads_the_feed_with_a_token_no_other_user_can_read(running_web: Web) -> None:
    web = running_web
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        before = web.sessions()
        ws = await open_session(session, web)
        (process,) = sessions_opened_since(web, before)
        feed_token = process.environ()[FEED_TOKEN_ENV]  # this test's session holds it
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
    """(And removed when web stops: tests/integration/test_web_guard.py's
    test_web_ends_on_a_signal_with_its_sessions_and_leaves_no_token_behind, which stops its own.)"""
    web = running_web
    first = web.log().splitlines()[0]
    path = url_file_of(web)
    assert path.read_text() == f"{web.base}/?token={web.token}\n"
    info = path.stat()
    assert stat.S_IMODE(info.st_mode) == 0o600 and info.st_uid == os.geteuid()
    assert web.token not in first  # not in a log: stderr is the journal under systemd
    done = as_nobody("cat", str(path))
    assert done.returncode != 0 and web.token not in done.stdout
