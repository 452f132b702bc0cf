"""The browser view: `sparktop web --demo` loaded in Debian's headless chromium driven by Selenium.

The page draws the terminal on a canvas, so the test reads what the app sends it: a script added before the
page loads records the websocket's frames (the app's terminal output); escape sequences are stripped to get
the text on screen.
"""

from __future__ import annotations

import re
import time
import urllib.request
from collections.abc import Callable, Iterator

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains

from sparktop.core.snapshot import Snapshot
from tests.fixtures.exporters import require
from tests.fixtures.load import load_per_core
from tests.fixtures.web import Web, sessions_opened_since, shared_web

ANSI = re.compile(r"\x1b\[[0-9;?$<>=]*[A-Za-z~]|\x1b\][^\x07]*\x07|\x1b[()][A-Z0-9]|\x1b[=>]")
RECORD_WEBSOCKET = """
window.__out = [];
const Native = window.WebSocket;
class Recording extends Native {
  constructor(...args) {
    super(...args);
    this.addEventListener('message', (ev) => {
      const d = ev.data;
      if (typeof d === 'string') window.__out.push(d);
      else if (d instanceof ArrayBuffer) window.__out.push(new TextDecoder().decode(d));
      else if (d && d.text) d.text().then((t) => window.__out.push(t));
    });
  }
}
window.WebSocket = Recording;
"""


@pytest.fixture
def web(request: pytest.FixtureRequest) -> Web:
    return shared_web(request)  # the page needs the token URL, as a user opens it


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    chromium = require("chromium", "chromium")
    driver_path = require("chromedriver", "chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    # No GPU here: without these, WebGL ran on a software rasteriser, redrawing the page at each of the demo's
    # updates (~0.7 s of CPU more over the test); xterm.js draws on its 2D canvas instead, and the test reads
    # the frames the app sends, not pixels.
    flags = ("--disable-gpu", "--disable-software-rasterizer")
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--window-size=1400,900",
        *flags,
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": RECORD_WEBSOCKET})
    try:
        yield driver
    finally:
        driver.quit()


def _screen_text(driver: webdriver.Chrome) -> str:
    return ANSI.sub("", driver.execute_script("return window.__out.join('')"))


def _wait(what: str, check: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout * load_per_core()
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}", pytrace=False)


def _containers(web: Web) -> list[str]:
    """The containers the sessions' feed shows (it needs its token, which a session holds)."""
    feed = urllib.request.Request(
        f"{web.exporter_url}/snapshot.json", headers={"Authorization": f"Bearer {web.feed_token()}"}
    )
    with urllib.request.urlopen(feed, timeout=10) as reply:
        return sorted(c.id for c in Snapshot.model_validate_json(reply.read()).containers)


def test_browser_view(web: Web, browser: webdriver.Chrome) -> None:
    others = web.sessions()  # the shared web's sessions of other tests: not this browser's
    browser.get(web.url)
    # The first frame may come in several messages (and the page's script, drawing on a 2D canvas, may take
    # them in a moment apart): waited for until it shows all that is checked below.
    first_frame = ("Memory pool", "Dashboard", "ssd-tetris-train-1")
    _wait(
        f"the dashboard showing {first_frame}", lambda: all(t in _screen_text(browser) for t in first_frame)
    )
    shown = _screen_text(browser)
    header = next(line for line in shown.splitlines() if "sparktop" in line)
    assert "BROWSER" in header and "READ-ONLY" in header and "ACTIONS ALLOWED" not in header
    assert "Dashboard" in shown and "ssd-tetris-train-1" in shown

    before = len(_screen_text(browser))
    browser.find_element("css selector", "#terminal").click()
    ActionChains(browser).send_keys("2").perform()  # the Containers tab
    _wait("the containers table", lambda: "project" in _screen_text(browser)[before:])  # its header

    containers = _containers(web)
    before = len(_screen_text(browser))
    ActionChains(browser).send_keys("s").perform()  # stop the selected container
    _wait("the refusal", lambda: "read-only mode" in _screen_text(browser)[before:])
    after = _screen_text(browser)[before:]
    assert "Stop container" not in after and "Cancel" not in after  # no confirmation was offered
    time.sleep(1.5)  # the demo would drop a stopped container within a second or two
    assert _containers(web) == containers

    # Sessions share one collector: each is a dashboard process reading the web process's exporter.
    # (web.sessions(): the dashboard itself, not the shell that starts it.)
    sessions = [process.cmdline() for process in sessions_opened_since(web, others)]
    assert sessions, "no session process found"
    for argv in sessions:
        assert "--exporter" in argv and web.exporter_url in argv and "--read-only" in argv
        assert "--demo" not in argv
