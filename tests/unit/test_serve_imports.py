"""What `sparktop serve` has imported once it runs (issue 33 item 4: serve ≤ 40 MiB resident).

Every module a process imports stays resident: `serve` pays for what it loads, not for what it uses. The real
command starts (`sparktop.commands.main.main`) in a fresh interpreter on this machine's live source, with no
config file, a private state directory and libnvidia-ml not loadable (answered at the ctypes boundary, as on
a machine without the NVIDIA driver); after three ticks (the add-on collectors come with the second) and one
scrape of /metrics it lists `sys.modules`. Deterministic: what is imported, never how much memory that is.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.fixtures.http_servers import RecordingServer
from tests.fixtures.imports import printed_modules, run_probe, under

REPO = Path(__file__).resolve().parents[2]

# Run in the child: serve as the command line starts it; a thread scrapes once after three ticks, prints the
# modules and stops it with SIGTERM (its own stop signal).
PROBE = r"""
import ctypes, json, os, signal, socket, sys, threading, time

real_cdll = ctypes.CDLL

def cdll(name, *args, **kwargs):
    if name == "libnvidia-ml.so.1":  # a machine without the NVIDIA driver
        raise OSError(f"{name}: cannot open shared object file: No such file or directory")
    return real_cdll(name, *args, **kwargs)

ctypes.CDLL = cdll

import sparktop.exporter.server as server_module
import sparktop.exporter.state as state_module

made = {}
for cls in (state_module.SamplingLoop, server_module.ExporterServer):
    def init(self, *args, _real=cls.__init__, _name=cls.__name__, **kwargs):
        _real(self, *args, **kwargs)
        made[_name] = self
    cls.__init__ = init

def scrape_then_list():
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (len(made) == 2 and made["SamplingLoop"].ticks >= 3):
        time.sleep(0.05)
    port = made["ExporterServer"].address[1]
    # bytes for the host: this probe must not import the IDNA codec itself
    with socket.create_connection((b"127.0.0.1", port), timeout=30) as conn:
        conn.sendall(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        reply = b""
        while chunk := conn.recv(65536):
            reply += chunk
    print("STATUS " + reply.split(b"\r\n", 1)[0].decode(), flush=True)
    print("MODULES " + json.dumps(sorted(sys.modules)), flush=True)
    os.kill(os.getpid(), signal.SIGTERM)

threading.Thread(target=scrape_then_list, daemon=True).start()
from sparktop.commands.main import main
sys.exit(main(sys.argv[1:]))
"""

# Modules (and everything under them) that `serve` must not load for what it does here.
NOT_IN_SERVE = (
    # what only a screen, a recording's player, the planner, the cluster view, the browser view or the guard
    # needs
    "textual",
    "rich",
    "plotext",
    "sparktop.ui",
    "sparktop.plan",
    "sparktop.settings.plan",
    "sparktop.settings.catalog",
    "sparktop.cluster",
    "sparktop.web",
    "sparktop.guard",
    "sparktop.stopping",
    "sparktop.sources.replay",
    "sparktop.session.playback",
    # the Docker SDK and its HTTP stack: container names come over the engine's socket (standard library)
    "docker",
    "requests",
    "urllib3",
    "pickle",  # a replay's checkpoints
    "tomllib",  # a config file's parser: there is none
    "encodings.idna",  # no reverse DNS lookup at bind; ASCII names go to getaddrinfo as bytes
    "pynvml",  # NVML's bindings (~2.4 MiB) where its library does not load
)


def clean_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.lower().endswith("_proxy")}
    env["PYTHONPATH"] = str(REPO)
    env["XDG_STATE_HOME"] = str(tmp_path / "state")  # this test's own footprint database
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")  # no config file
    return env


def test_serve_imports_only_what_it_serves(tmp_path: Path) -> None:
    args = ("serve", "--listen", "127.0.0.1:0", "--interval", "0.2")
    done = run_probe(PROBE, *args, cwd=tmp_path, env=clean_env(tmp_path), timeout=300)
    modules = printed_modules(done, "scrape")
    assert "STATUS HTTP/1.0 200 OK" in done.stdout.splitlines()
    # the probe saw the real thing: the exporter, its add-on collectors and the footprint store
    for present in ("prometheus_client", "sparktop.exporter.server", "sparktop.collect.servers.collector",
                    "sparktop.footprints.store", "sparktop.collect.nvml"):  # fmt: skip
        assert present in modules
    assert under(modules, NOT_IN_SERVE) == []
    assert done.returncode == 0, done.stderr[-2000:]


CHILD_REQUEST = """
import sys
from sparktop.core.http_client import request
reply = request(sys.argv[1], timeout=10, max_body=1024, env={})
print(reply.status, "encodings.idna" in sys.modules)
"""


def test_a_request_to_an_ascii_name_does_not_import_the_idna_codec(tmp_path: Path) -> None:
    """CPython encodes a str host for getaddrinfo with the IDNA codec, whose import (stringprep,
    unicodedata) stays resident: the model-server probes of `serve` paid ~0.5 MiB for it."""
    server = RecordingServer()
    try:
        url = f"http://localhost:{server.port}/"
        done = run_probe(CHILD_REQUEST, url, cwd=tmp_path, env=clean_env(tmp_path), timeout=60)
    finally:
        server.close()
    assert done.stdout.split() == ["200", "False"], done.stderr[-2000:]
