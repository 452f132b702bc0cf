"""`sparktop web` against a hostile browser (issue #27 item 1) and its sessions' lifetime (issue #23).

A real `sparktop web --demo` process and a real HTTP / WebSocket client (aiohttp): any web page the admin's
browser opens can reach a server on 127.0.0.1, so a request from another origin, another Host, or without
the per-start token must get nothing; the token URL printed at start gets a session; sessions are capped; a
session process dies with `web`; a read-only session's keys write no file on the server.
"""

from __future__ import annotations

import asyncio
import re
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import aiohttp
import psutil
import pytest

from tests.fixtures.exporters import free_port, get
from tests.fixtures.load import wall_limit
from tests.fixtures.web import Web, start_web

ANSI = re.compile(r"\x1b\[[0-9;?$<>=]*[A-Za-z~]|\x1b\][^\x07]*\x07|\x1b[()][A-Z0-9]|\x1b[=>]")


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Web]:
    server = start_web("--max-sessions", "2", state_dir=tmp_path_factory.mktemp("web-state"))
    try:
        yield server
    finally:
        server.stop()


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


async def read_until(ws: aiohttp.ClientWebSocketResponse, text: str, timeout: float = 20.0) -> str:
    """What the session drew (escape sequences stripped) up to the first frame that shows `text`."""
    seen = ""
    deadline = time.monotonic() + timeout
    while text not in ANSI.sub("", seen):
        left = deadline - time.monotonic()
        if left <= 0:
            pytest.fail(f"{text!r} not shown within {timeout} s; last: {ANSI.sub('', seen)[-300:]!r}")
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
FREED_S = 3.0


async def until(check: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check() and time.monotonic() < deadline:
        await asyncio.sleep(0.1)


async def no_sessions_left(web: Web) -> None:
    """The module's tests share one server: a session of the test before may still be ending (a loaded
    machine, once in CI) and would count as one of this test's."""
    await until(lambda: not web.sessions())
    assert web.sessions() == [], "a session of an earlier test outlived it by 10 s"


async def open_session(session: aiohttp.ClientSession, web: Web) -> aiohttp.ClientWebSocketResponse:
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
    await no_sessions_left(web)
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
    assert web.sessions() == []  # not one process was started for them


async def test_the_token_url_gets_a_read_only_session_that_writes_no_file_and_dies_with_its_connection(
    web: Web,
) -> None:
    """One session for both (each is a dashboard process, ~1 s of CPU): `B` over the WebSocket, as the hostile
    page typed it, leaves no history file in the state dir."""
    await no_sessions_left(web)
    async with client() as session:
        ws = await open_session(session, web)
        shown = await read_until(ws, "Memory pool")
        assert "READ-ONLY" in shown and "BROWSER" in shown
        (argv,) = [p.cmdline() for p in web.sessions()]
        assert "--read-only" in argv and argv[argv.index("--web-session") + 1] == str(web.process.pid)
        await ws.send_json(["stdin", "B"])
        await read_until(ws, "no files on the server")
        await ws.close()
    await until(lambda: not web.sessions())
    assert web.sessions() == []
    assert list(web.state_dir.rglob("history-*")) == []


async def test_sessions_are_capped(web: Web) -> None:
    await no_sessions_left(web)
    async with client() as first, client() as second, client() as third:
        a = await open_session(first, web)
        b = await open_session(second, web)
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await open_session(third, web)
        assert refused.value.status == 503
        # Each session's process starts just after its handshake: wait for the two, and no third.
        await until(lambda: len(web.sessions()) == 2)
        assert len(web.sessions()) == 2
        await a.close()
        await b.close()
    await until(lambda: not web.sessions())
    async with client() as again:  # a closed session frees its place
        c = await open_session(again, web)
        await read_until(c, "Memory pool")
        await c.close()


def test_allow_actions_is_refused_on_a_network_address(capsys: pytest.CaptureFixture[str]) -> None:
    from sparktop.commands.main import main

    for host in ("0.0.0.0", "::", "192.0.2.1"):  # refused before anything listens: in-process is enough
        with pytest.raises(SystemExit) as exited:
            main(["web", "--demo", "--host", host, "--allow-actions", "--port", str(free_port())])
        assert exited.value.code == 3
        assert "--allow-actions only on a loopback address" in capsys.readouterr().err


# --- sessions die with `web` (issue #23, "Long sessions") ---------------------------------------------------


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
async def test_sessions_end_with_their_parent(tmp_path: Path, how: signal.Signals) -> None:
    web = start_web(state_dir=tmp_path)
    try:
        async with client() as session:
            ws = await open_session(session, web)
            await read_until(ws, "Memory pool")
            children = web.sessions()
            assert children
            # A browser that stops reading: its session blocks on output (what held `web` for 23 s).
            web.process.send_signal(how)
            # 5 s: a session quits as the TUI does (terminal restored), which a loaded machine slows (scaled
            # by its load); the defect was a session that never ended.
            limit = wall_limit(5.0, defect=60.0)
            _, alive = psutil.wait_procs(children, timeout=limit)
            assert alive == [], f"session processes outlived `web` ({how.name}) by {limit:.0f} s: {alive}"
            await ws.close()
        # Its own exit, as slow as the sessions' on a loaded machine (a second suite beside this one: over
        # 5 s); the defect held it 23 s.
        web.process.wait(timeout=wall_limit(5.0, defect=23.0))
    finally:
        web.stop()
