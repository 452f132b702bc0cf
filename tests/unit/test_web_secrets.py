"""Where `sparktop web`'s secrets are, and are not (issue #31 items 6 and 7, issue #32 "Rough").

A real `sparktop web --demo` run as a service runs it (its output a log file, not a terminal), a real HTTP
client; the other local user is `nobody`, through setpriv. That no log line holds the token, and
no file once web has stopped, and that on a terminal the URL is printed and kept, are checked where web is
stopped with a session open, on each signal (tests/integration/test_web_guard.py: one `web` and one session
for all that a stop must do). That a session reads the feed with a token no other user can read (its
environment, not its command line): test_web_guard.py's test_sessions_are_capped_..._and_end_on_sigterm, on
a session it opens anyway (reads_the_feed_with_a_token_no_other_user_can_read).
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
from pathlib import Path

import pytest

from tests.fixtures.exporters import get
from tests.fixtures.web import Web, shared_web

AS_NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]

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
    """The worker's shared `sparktop web`: these tests only ask it (they open no session)."""
    return shared_web(request)


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
