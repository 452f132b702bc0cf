"""Where `sparktop web` tells the browser to connect: the page opens its WebSocket at the server's public
URL, and the Origin check and the cookie follow the name the browser used, so it must be a name a browser
can reach (the WebSocket and page origins must agree)."""

from __future__ import annotations

import socket

import pytest

from sparktop.web.browser_server import GuardedServer


@pytest.mark.parametrize(
    "host, expected",
    [
        ("127.0.0.1", "http://127.0.0.1:8765"),
        ("::1", "http://[::1]:8765"),
        ("0.0.0.0", f"http://{socket.gethostname()}:8765"),  # textual-serve said http://0.0.0.0:8765
        ("::", f"http://{socket.gethostname()}:8765"),
        ("spark-a.lan", "http://spark-a.lan:8765"),
    ],
)
def test_the_printed_url_and_the_pages_websocket_use_a_reachable_name(host: str, expected: str) -> None:
    server = GuardedServer("true", host=host, port=8765, title="t", token="secret")
    assert server.public_url == expected
    assert server.start_url == f"{expected}/?token=secret"
