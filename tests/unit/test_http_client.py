"""sparktop's one HTTP client (issue 27 items 2, 6; issue 25 item 7), against real servers on loopback: a
server that drips its answer, redirects to other hosts and schemes, bodies over the cap, and a real proxy
that records whether it was used."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from sparktop.core.http_client import HttpError, proxy_for, request
from tests.fixtures.http_servers import (
    Canned,
    DripServer,
    Listener,
    RecordingServer,
    http_answer,
    self_signed,
)
from tests.fixtures.load import wall_limit

MODELS = b'{"models": []}'


@pytest.fixture
def recording() -> Iterator[RecordingServer]:
    server = RecordingServer()
    yield server
    server.close()


# --- the deadline is for the whole answer ----------------------------------------------------------------


@pytest.mark.parametrize("fast", [0, 60], ids=["drips-its-headers", "drips-its-body"])
def test_a_server_that_drips_is_cut_off_at_the_deadline(fast: int) -> None:
    # One byte every 0.1 s: a per-read timeout of 0.5 s never fires (the old client read it for ~15 s).
    drip = DripServer(http_answer(b"x" * 40) + b" " * 40, gap=0.1, fast=fast)
    try:
        started = time.monotonic()
        with pytest.raises(HttpError, match=r"no complete answer within 0\.5 s") as info:
            request(f"{drip.url}/api/ps", timeout=0.5, max_body=1024)
        assert time.monotonic() - started < wall_limit(1.0, defect=4.0)  # the whole drip: 4-8 s
        assert not info.value.reachable
    finally:
        drip.close()


def test_an_answer_within_the_deadline_is_read_whole(recording: RecordingServer) -> None:
    recording.route = lambda method, target: Canned(body=MODELS, headers={"X-Sparktop-Age-Seconds": "1.5"})
    reply = request(f"{recording.url}/api/ps?x=1", timeout=2.0, max_body=1024)
    assert (reply.status, reply.body, reply.json()) == (200, MODELS, {"models": []})
    assert reply.headers.get("x-sparktop-age-seconds") == "1.5"  # names as any case
    (seen,) = recording.seen
    assert (seen.method, seen.target) == ("GET", "/api/ps?x=1")


def test_a_body_over_the_cap_is_an_error_not_a_truncated_answer(recording: RecordingServer) -> None:
    recording.route = lambda method, target: Canned(body=b"[" + b"0," * 600 + b"0]")
    with pytest.raises(HttpError, match="answer larger than 1 KiB") as info:
        request(recording.url, timeout=2.0, max_body=1024)
    assert info.value.reachable
    # Without a Content-Length (read until the server closes) the cap holds as well.
    drip = DripServer(b"HTTP/1.0 200 OK\r\n\r\n" + b"y" * 5000, gap=0, fast=10**6)
    try:
        with pytest.raises(HttpError, match="answer larger than 1 KiB"):
            request(drip.url, timeout=2.0, max_body=1024)
    finally:
        drip.close()


def test_a_post_sends_its_body(recording: RecordingServer) -> None:
    reply = request(
        recording.url + "/hook",
        method="POST",
        body=b'{"kind": "warning"}',
        headers={"Content-Type": "application/json"},
        timeout=2.0,
        max_body=1024,
    )
    assert reply.status == 200
    (seen,) = recording.seen
    assert seen.method == "POST" and seen.headers["Content-Type"] == "application/json"


# --- redirects are not followed ---------------------------------------------------------------------------


def test_a_redirect_to_another_host_is_returned_not_followed() -> None:
    elsewhere = RecordingServer(host="127.0.0.2")  # another host's models, not the local Ollama's
    redirecting = RecordingServer(lambda m, t: Canned(302, headers={"Location": f"{elsewhere.url}/api/ps"}))
    try:
        reply = request(f"{redirecting.url}/api/ps", timeout=2.0, max_body=1024)
        assert reply.status == 302
        with pytest.raises(
            HttpError, match=r"HTTP 302 Found \(a redirect to http://127\.0\.0\.2:\d+/api/ps: not"
        ):
            reply.ok_body()
        assert elsewhere.seen == []
    finally:
        elsewhere.close()
        redirecting.close()


def test_a_redirect_to_ftp_sends_nothing_there() -> None:
    ftp = Listener()
    redirecting = RecordingServer(
        lambda m, t: Canned(301, headers={"Location": f"ftp://127.0.0.1:{ftp.port}/"})
    )
    try:
        with pytest.raises(HttpError, match=r"HTTP 301 .*ftp://.*not followed"):
            request(f"{redirecting.url}/metrics", timeout=2.0, max_body=1024).ok_body()
        time.sleep(0.1)
        assert ftp.connections == 0 and ftp.received == []  # no `USER anonymous`
    finally:
        ftp.close()
        redirecting.close()


def test_only_http_and_https_are_spoken() -> None:
    with pytest.raises(HttpError, match="ftp scheme: only http:// and https://"):
        request("ftp://127.0.0.1:2121/", timeout=1.0, max_body=1024)


# --- proxies: curl's rules, loopback never --------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "env", "expected"),
    [
        ("http://127.0.0.1:11434/api/ps", {"http_proxy": "http://proxy:3128"}, None),
        ("http://localhost:8000/metrics", {"http_proxy": "proxy:3128", "all_proxy": "p:1"}, None),
        ("http://[::1]:8000/metrics", {"http_proxy": "proxy:3128"}, None),
        ("http://127.8.9.10:8000/", {"all_proxy": "proxy:3128"}, None),
        ("http://node2:9877/", {"http_proxy": "proxy:3128"}, "proxy:3128"),
        ("http://node2:9877/", {"HTTP_PROXY": "proxy:3128"}, None),  # curl: http_proxy in lower case only
        ("https://hooks.example.com/x", {"HTTPS_PROXY": "proxy:3128"}, "proxy:3128"),
        ("https://hooks.example.com/x", {"http_proxy": "proxy:3128"}, None),
        ("http://node2:9877/", {"ALL_PROXY": "proxy:1"}, "proxy:1"),
        ("http://node2.lab.example/", {"http_proxy": "p:1", "no_proxy": "lab.example"}, None),
        ("http://node2.lab.example/", {"http_proxy": "p:1", "NO_PROXY": ".lab.example"}, None),
        ("http://notlab.example/", {"http_proxy": "p:1", "no_proxy": "lab.example"}, "p:1"),
        ("http://10.1.2.3:9877/", {"http_proxy": "p:1", "no_proxy": "example.com, 10.0.0.0/8"}, None),
        ("http://10.1.2.3:9877/", {"http_proxy": "p:1", "no_proxy": "10.1.2.3"}, None),
        ("http://11.1.2.3:9877/", {"http_proxy": "p:1", "no_proxy": "10.0.0.0/8"}, "p:1"),
        ("http://node2:9877/", {"http_proxy": "p:1", "no_proxy": "*"}, None),
    ],
)
def test_proxy_choice_follows_curl_and_never_proxies_loopback(url, env, expected) -> None:
    assert proxy_for(url, env) == expected


def test_a_real_proxy_carries_requests_for_other_hosts(recording: RecordingServer) -> None:
    recording.route = lambda method, target: Canned(body=MODELS)
    env = {"http_proxy": recording.url}
    reply = request("http://node2.lab.example:9877/snapshot.json", timeout=2.0, max_body=1024, env=env)
    assert reply.body == MODELS
    (seen,) = recording.seen
    assert seen.target == "http://node2.lab.example:9877/snapshot.json"  # the absolute URL, to the proxy
    assert seen.headers["Host"] == "node2.lab.example:9877"


def test_loopback_goes_direct_with_a_proxy_set(recording: RecordingServer) -> None:
    proxy = RecordingServer()
    try:
        env = {"http_proxy": proxy.url, "all_proxy": proxy.url, "no_proxy": ""}
        reply = request(f"{recording.url}/metrics", timeout=2.0, max_body=1024, env=env)
        assert reply.status == 200 and len(recording.seen) == 1
        assert proxy.seen == []
    finally:
        proxy.close()


def test_no_proxy_sends_the_request_direct() -> None:
    proxy = RecordingServer()
    try:
        env = {"http_proxy": proxy.url, "no_proxy": "unresolvable.invalid"}
        with pytest.raises(HttpError):  # direct: the name does not resolve; the proxy is not asked
            request("http://unresolvable.invalid:1/", timeout=2.0, max_body=1024, env=env)
        assert proxy.seen == []
    finally:
        proxy.close()


def test_https_goes_through_the_proxy_as_a_tunnel() -> None:
    proxy = RecordingServer(lambda method, target: Canned(status=403, body=b"denied"))
    try:
        env = {"https_proxy": f"http://user:pa%3Ass@127.0.0.1:{proxy.port}"}
        with pytest.raises(HttpError, match="proxy refused the tunnel: HTTP 403"):
            request("https://hooks.example.com/x", timeout=2.0, max_body=1024, env=env)
        (seen,) = proxy.seen
        assert (seen.method, seen.target) == ("CONNECT", "hooks.example.com:443")
        assert seen.headers["Proxy-Authorization"] == "Basic dXNlcjpwYTpzcw=="  # user:pa:ss
    finally:
        proxy.close()


def test_a_proxy_that_is_down_is_one_line() -> None:
    with pytest.raises(HttpError) as info:
        request(
            "http://node2.lab.example:9877/", timeout=2.0, max_body=1024, env={"http_proxy": "127.0.0.1:9"}
        )
    assert str(info.value) == "through the proxy 127.0.0.1:9: connection refused"


def test_an_unsupported_proxy_scheme_is_one_line() -> None:
    with pytest.raises(HttpError, match="only http:// proxies are supported"):
        request("http://node2:1/", timeout=1.0, max_body=1024, env={"http_proxy": "socks5://127.0.0.1:1080"})


@pytest.mark.parametrize("value", ["http://[::1", "http://[not-an-address]:3128", "http://proxy:port/"])
def test_a_malformed_proxy_is_one_line(value: str) -> None:
    """Issue 32 item 11: `http_proxy='http://[::1'` raised ValueError out of urlsplit."""
    with pytest.raises(HttpError, match=r"^proxy .*: ") as info:
        request("http://node2.lab.example:1/", timeout=1.0, max_body=1024, env={"http_proxy": value})
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("url", ["http://[::1:9877/metrics", "http://[zz::1]:9877/"])
def test_a_malformed_address_is_one_line(url: str) -> None:
    with pytest.raises(HttpError, match=r"^bad address "):
        request(url, timeout=1.0, max_body=1024, env={"http_proxy": "http://127.0.0.1:9"})
    assert proxy_for(url, {"http_proxy": "http://127.0.0.1:9"}) is None  # no proxy for what cannot be sent


# --- one line for each failure ----------------------------------------------------------------------------


def test_failures_are_one_line() -> None:
    listener = Listener(greeting=b"SSH-2.0-OpenSSH_9.6\r\n\x00\x01garbage\r\n")
    try:
        with pytest.raises(HttpError, match=r"^not an HTTP answer \(BadStatusLine\)$") as info:
            request(f"http://127.0.0.1:{listener.port}/", timeout=2.0, max_body=1024)
        assert info.value.reachable
    finally:
        listener.close()
    with pytest.raises(HttpError, match=r"^connection refused$") as refused:
        request("http://127.0.0.1:9/", timeout=1.0, max_body=1024)
    assert not refused.value.reachable


def test_json_that_is_too_deep_is_not_json(recording: RecordingServer) -> None:
    recording.route = lambda method, target: Canned(body=b"[" * 100_000)
    with pytest.raises(HttpError, match="answer is not JSON"):
        request(recording.url, timeout=2.0, max_body=1024 * 1024).json()


# --- TLS: the same deadline through the handshake and the records --------------------------------------


def test_https_is_read_and_a_tls_drip_is_cut_off(tmp_path, monkeypatch) -> None:
    cert, context = self_signed(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    server = RecordingServer(lambda m, t: Canned(body=MODELS), tls=context)
    drip = DripServer(http_answer(b"x" * 40), gap=0.1, tls=context)
    try:
        assert request(f"{server.url}/api/ps", timeout=2.0, max_body=1024).body == MODELS
        started = time.monotonic()
        with pytest.raises(HttpError, match=r"no complete answer within 0\.5 s"):
            request(f"{drip.url}/api/ps", timeout=0.5, max_body=1024)
        assert time.monotonic() - started < wall_limit(1.0, defect=4.0)  # the whole drip: 4-8 s
    finally:
        server.close()
        drip.close()
    monkeypatch.delenv("SSL_CERT_FILE")
    other = RecordingServer(tls=context)
    try:
        with pytest.raises(HttpError, match="TLS certificate not accepted"):
            request(other.url, timeout=2.0, max_body=1024)
    finally:
        other.close()


def test_a_deadline_error_says_it_timed_out() -> None:
    drip = DripServer(http_answer(b"{}"), gap=0.2)
    try:
        with pytest.raises(HttpError) as info:
            request(drip.url, timeout=0.3, max_body=1024)
    finally:
        drip.close()
    assert info.value.timed_out and not info.value.reachable
    with pytest.raises(HttpError) as refused:
        request("http://127.0.0.1:9/", timeout=1.0, max_body=1024)
    assert not refused.value.timed_out
