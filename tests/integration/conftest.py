"""Fixtures for the tests that need a real Docker engine (`@pytest.mark.docker`).

- `docker_engine` (session): a private dockerd with the busybox image; `.socket_url`, `.client`, `.image`,
  `.run(name, cmd, labels=None, shm_size=None, **kw)`, `.stop()`, `.start()`, `.restart()`.
- `docker_run` (function): `docker_engine.run` whose containers are removed when the test ends.
- `lab` (module): compose project audio-lab (services whisper, tts) and a container holding 64 MB in
  /dev/shm (`--shm-size 300m`, filled before the fixture returns), on the session engine.
- `restartable_engine` (function): one second engine per session, shared by the tests that stop, restart or
  crash an engine, so the session engine and its containers are never disturbed; started (again) and
  emptied of containers for each test. A dockerd start is ~0.5 s of CPU: a fresh engine per test paid it
  once more than the test's own restart.

Engines live in this checkout's own directory (`engines_dir()`); the reaper of stale engines looks nowhere
else, so suites of other checkouts running at the same time are never touched.

If dockerd cannot be started the fixtures FAIL with dockerd's log tail; they never skip.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.integration.engine import (
    SHM_BYTES,
    DockerEngine,
    EngineError,
    reap_stale_engines,
    unique_name,
    wait_for_shm_fill,
)


def _start(engine: DockerEngine) -> DockerEngine:
    try:
        return engine.start()
    except EngineError as exc:
        engine.close()
        pytest.fail(
            f"cannot start the private Docker engine for the integration tests:\n{exc}", pytrace=False
        )


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[DockerEngine]:
    reap_stale_engines()
    engine = _start(DockerEngine())
    try:
        yield engine
    finally:
        engine.close()


@pytest.fixture
def docker_run(docker_engine: DockerEngine) -> Iterator[Callable[..., object]]:
    ids: list[str] = []

    def run(name: str, cmd: str | list[str], labels=None, shm_size=None, **kw):
        container = docker_engine.run(name, cmd, labels=labels, shm_size=shm_size, **kw)
        ids.append(container.id)
        return container

    yield run
    docker_engine.remove(ids)


@pytest.fixture(scope="session")
def restartable_engine_of_the_session() -> Iterator[DockerEngine]:
    """The engine behind `restartable_engine`: use that one (it is started and emptied for each test)."""
    engine = _start(DockerEngine())
    try:
        yield engine
    finally:
        engine.close()


@pytest.fixture
def restartable_engine(restartable_engine_of_the_session: DockerEngine) -> DockerEngine:
    """The session's second engine, running (a test before may have stopped or crashed it) and without the
    containers earlier tests left on it."""
    engine = _start(restartable_engine_of_the_session)
    engine.remove_all()
    return engine


@pytest.fixture(scope="module")
def lab(docker_engine: DockerEngine) -> Iterator[dict[str, object]]:
    sleep = "sh -c 'sleep 3600'"
    made = {
        "whisper": docker_engine.run(
            unique_name("audio-lab-whisper"),
            sleep,
            labels={"com.docker.compose.project": "audio-lab", "com.docker.compose.service": "whisper"},
        ),
        "tts": docker_engine.run(
            unique_name("audio-lab-tts"),
            sleep,
            labels={"com.docker.compose.project": "audio-lab", "com.docker.compose.service": "tts"},
        ),
        "shm": docker_engine.run(
            unique_name("shm-holder"),
            f"sh -c 'head -c {SHM_BYTES} /dev/zero > /dev/shm/x; sleep 3600'",
            shm_size="300m",
        ),
    }
    wait_for_shm_fill(made["shm"])  # every test of the module may count on the 64 MB, run alone too
    yield made
    docker_engine.remove(c.id for c in made.values())
