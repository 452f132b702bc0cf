"""DockerDiscovery against the real private engine: names, images, compose labels, caching, failures."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from docker.models.containers import Container

from sparktop.collect import docker as sdocker
from sparktop.collect.docker import GROUP_HINT, DockerDiscovery
from tests.fixtures.load import wall_limit
from tests.integration.engine import DockerEngine, run_as_user, unique_name

pytestmark = pytest.mark.docker

SLEEP = "sh -c 'sleep 3600'"


@pytest.fixture(scope="module")
def names_lab(docker_engine: DockerEngine) -> Iterator[dict[str, Container]]:
    """What the names are read from: compose project audio-lab (services whisper, tts) and a container of
    no project. (The shared `lab` also fills a container's /dev/shm, polled with an exec per try, for the
    tests that read memory; names need none of it.)"""

    def run(stem: str, labels: dict[str, str]) -> Container:
        return docker_engine.run(unique_name(stem), SLEEP, labels=labels)

    made = {
        service: run(
            f"audio-lab-{service}",
            {"com.docker.compose.project": "audio-lab", "com.docker.compose.service": service},
        )
        for service in ("whisper", "tts")
    }
    made["plain"] = run("plain", {})
    yield made
    docker_engine.remove(c.id for c in made.values())


class FakeClock:
    def __init__(self, t: float = 1000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


def test_names_images_labels_and_status(docker_engine: DockerEngine, names_lab: dict) -> None:
    discovery = DockerDiscovery(base_url=docker_engine.socket_url)
    names, status = discovery.containers()
    discovery.close()

    assert status.available, status.reason
    assert status.reason is None
    for key, container in names_lab.items():
        info = names[container.id]  # full 64-hex ids, as cgroups name them
        assert len(container.id) == 64
        assert info["name"] == container.name
        assert info["image"] == docker_engine.image
        assert info["status"] == "running"
        if key == "plain":
            assert info["compose_project"] is None and info["compose_service"] is None
        else:
            assert info["compose_project"] == "audio-lab"
            assert info["compose_service"] == key
    assert set(names[names_lab["whisper"].id]) == {
        "name", "image", "status", "compose_project", "compose_service", "ports"
    }  # fmt: skip
    assert names[names_lab["whisper"].id]["ports"] == []  # --network none publishes nothing


def test_discovery_on_a_unix_socket_loads_no_sdk(docker_engine: DockerEngine, names_lab: dict) -> None:
    # The names come over the socket with the standard library: the SDK (requests, urllib3; ~7 MiB) is
    # loaded for control only. A fresh interpreter, so no other test's import counts.
    probe = (
        "import json, sys\n"
        "from sparktop.collect.docker import DockerDiscovery\n"
        f"names, status = DockerDiscovery(base_url={docker_engine.socket_url!r}).containers()\n"
        "loaded = sorted(m for m in ('docker', 'requests', 'urllib3') if m in sys.modules)\n"
        "print(json.dumps([status.available, sorted(names), loaded]))\n"
    )
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", probe], cwd=repo, capture_output=True, text=True,
                          timeout=120, check=True)  # fmt: skip
    available, ids, loaded = json.loads(done.stdout)
    assert available
    assert {c.id for c in names_lab.values()} <= set(ids)
    assert loaded == []


def test_only_running_containers_are_listed(docker_engine: DockerEngine, docker_run) -> None:
    done = docker_run(unique_name("finished"), "true")
    done.wait(timeout=30)
    discovery = DockerDiscovery(base_url=docker_engine.socket_url)
    names, status = discovery.containers()
    assert status.available
    assert done.id not in names


def test_refresh_is_cached_until_refresh_s_passes(docker_engine: DockerEngine, docker_run, names_lab) -> None:
    clock = FakeClock()
    discovery = DockerDiscovery(base_url=docker_engine.socket_url, refresh_s=3.0, clock=clock)
    names, _ = discovery.containers()
    assert discovery.fetches == 1
    late = docker_run(unique_name("late"), SLEEP)

    clock.advance(2.9)
    names, status = discovery.containers()
    assert status.available
    assert late.id not in names, "a container started after the fetch appeared before refresh_s"
    assert discovery.fetches == 1

    clock.advance(0.2)
    names, _ = discovery.containers()
    assert late.id in names
    assert discovery.fetches == 2

    # invalidate() (after a stop, say) refreshes on the next call whatever the schedule
    late.stop(timeout=0)
    discovery.invalidate()
    names, _ = discovery.containers()
    assert late.id not in names
    assert discovery.fetches == 3
    discovery.close()


def test_returned_dicts_are_copies(docker_engine: DockerEngine, names_lab) -> None:
    discovery = DockerDiscovery(base_url=docker_engine.socket_url, clock=FakeClock())
    names, _ = discovery.containers()
    names[names_lab["tts"].id]["name"] = "scribbled"
    names.clear()
    again, _ = discovery.containers()
    assert again[names_lab["tts"].id]["name"] == names_lab["tts"].name


def test_missing_socket(docker_engine: DockerEngine) -> None:
    url = docker_engine.missing_socket_url()
    discovery = DockerDiscovery(base_url=url)
    names, status = discovery.containers()
    assert names == {}
    assert not status.available
    assert status.reason == f"Docker socket {url[len('unix://') :]} not found — showing containers by ID"


def test_default_socket_missing_says_so(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """No DOCKER_HOST, no socket at the default path: the reason names the default path."""
    default = tmp_path / "var-run" / "docker.sock"
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setattr(sdocker, "DEFAULT_SOCKET", str(default))
    names, status = DockerDiscovery().containers()
    assert names == {}
    assert status.reason == f"Docker socket {default} not found — showing containers by ID"


def test_docker_host_is_honoured(
    monkeypatch: pytest.MonkeyPatch, docker_engine: DockerEngine, names_lab
) -> None:
    monkeypatch.setenv("DOCKER_HOST", docker_engine.socket_url)
    names, status = DockerDiscovery().containers()
    assert status.available
    assert names_lab["whisper"].id in names


def test_socket_nobody_listens_on(docker_engine: DockerEngine) -> None:
    url = docker_engine.dead_socket_url()
    names, status = DockerDiscovery(base_url=url).containers()
    assert names == {}
    assert not status.available
    path = url[len("unix://") :]
    assert (
        status.reason
        == f"Docker engine not answering on {path} (connection refused) — showing containers by ID"
    )


def _probe(url: str) -> tuple[int, dict, dict]:
    import os

    discovery = DockerDiscovery(base_url=url)
    names, status = discovery.containers()
    return os.getuid(), names, status.model_dump()


def test_permission_denied_names_the_docker_group(docker_engine: DockerEngine, names_lab) -> None:
    """A real EACCES: the probe runs as `nobody`, outside the docker group, against the engine's
    root-owned 0660 socket (root itself passes every permission check)."""
    uid, names, status = run_as_user(_probe, docker_engine.socket_url)
    assert uid == 65534
    assert names == {}
    assert status["available"] is False
    assert status["reason"] == f"permission denied on {docker_engine.socket_path} — {GROUP_HINT}"
    assert GROUP_HINT == "add yourself to the docker group: sudo usermod -aG docker $USER"


def test_engine_down_mid_run_keeps_stale_names_and_recovers(restartable_engine: DockerEngine) -> None:
    container = restartable_engine.run(
        unique_name("survivor"), SLEEP, labels={"com.docker.compose.project": "p"}
    )
    clock = FakeClock()
    discovery = DockerDiscovery(base_url=restartable_engine.socket_url, refresh_s=3.0, clock=clock)
    names, status = discovery.containers()
    assert status.available and container.id in names

    restartable_engine.stop()  # like `systemctl stop docker`: its containers stop, its socket goes away
    clock.advance(3.0)
    t0 = time.monotonic()
    names, status = discovery.containers()
    assert time.monotonic() - t0 < wall_limit(2.5, defect=30), (
        "a refresh against a dead engine blocked the tick"
    )
    assert not status.available
    assert discovery.stale
    assert names[container.id]["name"] == container.name  # the last names are kept
    assert names[container.id]["compose_project"] == "p"
    assert status.reason == "Docker engine stopped answering (socket gone) — names from 3 s ago, retrying"
    assert discovery.fetches == 2

    # A gone socket fails in a millisecond: asked again every refresh_s, never backed off to half a minute;
    # the notice's age is the names' age now, not frozen at the failure.
    clock.advance(2.0)
    names, status = discovery.containers()
    assert discovery.fetches == 2
    assert status.reason == "Docker engine stopped answering (socket gone) — names from 5 s ago, retrying"
    for fetches in range(3, 8):
        clock.advance(3.0)
        names, status = discovery.containers()
        assert discovery.fetches == fetches
    assert status.reason == "Docker engine stopped answering (socket gone) — names from 20 s ago, retrying"

    restartable_engine.start()
    clock.advance(3.0)  # within refresh_s of the engine's return: fresh names, the stale notice gone
    names, status = discovery.containers()
    assert discovery.fetches == 8
    assert status.available and status.reason is None
    assert not discovery.stale
    assert container.id not in names  # dockerd stopped it on shutdown
    discovery.close()


def test_engine_never_raises_on_garbage_url() -> None:
    names, status = DockerDiscovery(base_url="unix://").containers()
    assert names == {} and not status.available and status.reason
    names, status = DockerDiscovery(base_url="tcp://127.0.0.1:1").containers()
    assert names == {} and not status.available
    assert "connection refused" in status.reason
