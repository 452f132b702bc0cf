"""DockerController against the real private engine: stop, kill, compose projects, and every failure mapped
to one readable ControlError line."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator

import docker.errors
import pytest
from docker.models.containers import Container

from sparktop.collect.control import ContainerController, ControlError, StopTimeout
from sparktop.collect.docker import GROUP_HINT, DockerController
from tests.fixtures.load import wall_limit
from tests.integration.engine import DockerEngine, hung_runtime, run_as_user, unique_name

pytestmark = pytest.mark.docker

SLEEP = "sh -c 'sleep 3600'"
# Exits at once on SIGTERM: `wait` is interrupted by the trapped signal.
POLITE = "sh -c 'trap \"exit 0\" TERM; sleep 3600 & wait'"
# Ignores SIGTERM explicitly (busybox sh as PID 1 would ignore it anyway: PID 1 has no default action).
STUBBORN = "sh -c 'trap \"\" TERM; sleep 3600'"


@pytest.fixture
def controller(docker_engine: DockerEngine) -> Iterator[DockerController]:
    ctl = DockerController(base_url=docker_engine.socket_url)
    yield ctl
    ctl.close()


@pytest.fixture(scope="module")
def bystander(docker_engine: DockerEngine) -> Iterator[Container]:
    """A running container no test here stops: the `whisper` of another project beside
    test_project_containers's audio-lab, and the container nobody's stop must leave running."""
    labels = {"com.docker.compose.project": "other-lab", "com.docker.compose.service": "whisper"}
    container = docker_engine.run(unique_name("other-lab-whisper"), SLEEP, labels=labels)
    yield container
    docker_engine.remove([container.id])


def _state(engine: DockerEngine, cid: str) -> dict:
    return engine.client.api.inspect_container(cid)["State"]


def test_is_a_container_controller(controller: DockerController) -> None:
    ctl: ContainerController = controller
    assert callable(ctl.stop) and callable(ctl.kill)


def test_stop_a_container_that_honours_sigterm_by_its_short_id(docker_engine, docker_run, controller) -> None:
    """A stop is SIGTERM first: a container that exits on it is stopped at once, exit status 0. By the
    12-character ID `docker ps` shows (the other stops here name the full one)."""
    c = docker_run(unique_name("polite"), POLITE)
    t0 = time.monotonic()
    controller.stop(c.id[:12], timeout=10)
    took = time.monotonic() - t0
    state = _state(docker_engine, c.id)
    assert state["Status"] == "exited", "the stop by the short ID did not stop it"
    assert state["ExitCode"] == 0, "it did not exit on its SIGTERM"
    assert took < 5, f"a stop of a container that exits on SIGTERM took {took:.1f} s"


def test_stop_a_container_that_ignores_sigterm_is_killed_after_the_timeout(
    docker_engine, docker_run, controller
) -> None:
    """docker stop sends SIGKILL after the timeout, so ignoring SIGTERM is no StopTimeout: the stop takes
    about `timeout` seconds and the container ends with 137 (128 + SIGKILL)."""
    for cmd in (STUBBORN, SLEEP):  # explicit trap, and busybox sh as PID 1 (ignores TERM by default)
        c = docker_run(unique_name("stubborn"), cmd)
        t0 = time.monotonic()
        controller.stop(c.id, timeout=1)
        took = time.monotonic() - t0
        state = _state(docker_engine, c.id)
        assert state["Status"] == "exited", cmd
        assert state["ExitCode"] == 137, cmd
        assert 0.9 <= took < 6, f"{cmd}: stop took {took:.1f} s"


def test_stop_that_the_engine_cannot_finish_raises_stop_timeout(docker_engine, docker_run) -> None:
    """A hung runtime: the container's containerd shim is SIGSTOPped, so neither SIGTERM nor SIGKILL reach
    the container and the engine's stop call never returns. Our HTTP deadline (api_timeout + timeout)
    ends it as StopTimeout; the container is still running. (SIGKILL reaches even cgroup-frozen tasks on
    this kernel, so a frozen container is not enough.)"""
    c = docker_run(unique_name("hung"), SLEEP)
    controller = DockerController(base_url=docker_engine.socket_url, api_timeout=2)
    with hung_runtime(c) as pid:
        t0 = time.monotonic()
        with pytest.raises(StopTimeout) as err:
            controller.stop(c.id, timeout=1)
        took = time.monotonic() - t0
        assert os.path.exists(f"/proc/{pid}"), "the container's process should still be alive"
    msg = str(err.value)
    assert msg.startswith(f"container {c.name} ({c.id[:12]}) did not stop within 1 s"), msg
    assert "\n" not in msg
    assert isinstance(err.value, ControlError)
    assert took < 10, f"StopTimeout came after {took:.1f} s"
    # once the runtime moves again, the engine's pending stop completes
    deadline = time.monotonic() + 30
    while _state(docker_engine, c.id)["Running"] and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _state(docker_engine, c.id)["Running"]
    controller.close()


def test_kill(docker_engine, docker_run, controller) -> None:
    c = docker_run(unique_name("victim"), STUBBORN)
    t0 = time.monotonic()
    controller.kill(c.id)
    c.wait(timeout=10)
    assert time.monotonic() - t0 < wall_limit(5, defect=10)  # a stop would wait its 10 s
    state = _state(docker_engine, c.id)
    assert state["Status"] == "exited"
    assert state["ExitCode"] == 137


def test_stop_or_kill_an_exited_container_is_not_an_error(docker_engine, docker_run, controller) -> None:
    c = docker_run(unique_name("done"), "true")
    c.wait(timeout=30)
    controller.stop(c.id, timeout=1)  # the engine answers 304 Not Modified
    controller.kill(c.id)  # 409 "is not running": the goal is met
    assert _state(docker_engine, c.id)["Status"] == "exited"


def test_already_gone(docker_engine, docker_run, controller) -> None:
    c = docker_run(unique_name("gone"), SLEEP)
    docker_engine.client.api.remove_container(c.id, force=True)
    with pytest.raises(ControlError) as err:
        controller.stop(c.id)
    assert str(err.value) == f"container {c.id[:12]} is already gone"
    with pytest.raises(ControlError) as err:
        controller.kill(c.id)
    assert str(err.value) == f"container {c.id[:12]} is already gone"
    assert not isinstance(err.value, StopTimeout)


def test_removed_while_stopping_is_success(docker_engine, docker_run, controller) -> None:
    """`docker run --rm` containers disappear when they stop: that is a completed stop, not an error."""
    c = docker_run(unique_name("rm"), POLITE, auto_remove=True)
    controller.stop(c.id, timeout=5)
    with pytest.raises(docker.errors.NotFound):
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            docker_engine.client.api.inspect_container(c.id)
            time.sleep(0.1)


def test_project_containers(docker_engine, docker_run, controller, bystander) -> None:
    def compose(project: str, service: str):
        return docker_run(
            unique_name(f"{project}-{service}"),
            SLEEP,
            labels={"com.docker.compose.project": project, "com.docker.compose.service": service},
        )

    whisper = compose("audio-lab", "whisper")
    tts = compose("audio-lab", "tts")
    other = bystander  # other-lab's whisper: a service of the same name in another project
    stopped = compose("audio-lab", "old")
    stopped.kill()
    stopped.wait(timeout=10)

    found = controller.project_containers("audio-lab")
    assert [c.id for c in found] == [tts.id, whisper.id]  # by service: tts, whisper
    assert [c.compose_service for c in found] == ["tts", "whisper"]
    assert all(c.compose_project == "audio-lab" and c.status == "running" for c in found)
    assert found[0].name == tts.name and found[0].image == docker_engine.image
    assert other.id not in {c.id for c in found}
    assert controller.project_containers("no-such-project") == []

    for c in found:
        controller.stop(c.id, timeout=1)
    assert controller.project_containers("audio-lab") == []
    assert [c.id for c in controller.project_containers("other-lab")] == [other.id]


def test_missing_socket(docker_engine) -> None:
    url = docker_engine.missing_socket_url()
    ctl = DockerController(base_url=url)
    with pytest.raises(ControlError) as err:
        ctl.stop("0" * 64)
    assert str(err.value) == (
        f"Docker socket {url[len('unix://') :]} not found — is the Docker engine running?"
    )
    with pytest.raises(ControlError):
        ctl.project_containers("audio-lab")


def test_engine_not_answering(docker_engine) -> None:
    url = docker_engine.dead_socket_url()
    with pytest.raises(ControlError) as err:
        DockerController(base_url=url).kill("0" * 64)
    assert str(err.value) == f"Docker engine stopped answering: connection refused on {url[len('unix://') :]}"


def _stop_as_nobody(url: str, cid: str) -> tuple[int, str, str]:
    try:
        DockerController(base_url=url).stop(cid)
    except ControlError as exc:
        return os.getuid(), type(exc).__name__, str(exc)
    return os.getuid(), "", ""


def test_permission_denied_names_the_docker_group(docker_engine, bystander) -> None:
    c = bystander
    uid, kind, msg = run_as_user(_stop_as_nobody, docker_engine.socket_url, c.id)
    assert uid == 65534
    assert kind == "ControlError"
    assert msg == f"permission denied on {docker_engine.socket_path} — {GROUP_HINT}"
    assert _state(docker_engine, c.id)["Running"]


def _stop_in_thread(ctl: DockerController, cid: str, timeout: float) -> tuple[threading.Thread, list]:
    outcome: list = []

    def stop() -> None:
        try:
            ctl.stop(cid, timeout=timeout)
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=stop, daemon=True)
    worker.start()
    return worker, outcome


def test_engine_restarted_gracefully_mid_stop(restartable_engine: DockerEngine) -> None:
    """`systemctl restart docker` while a stop waits out its grace period: dockerd stops its containers on
    the way down (SIGKILL after its --shutdown-timeout) and answers the stop before it exits, so the stop
    succeeds and the container is exited when the engine is back."""
    c = restartable_engine.run(unique_name("graceful"), STUBBORN)
    ctl = DockerController(base_url=restartable_engine.socket_url)
    worker, outcome = _stop_in_thread(ctl, c.id, timeout=20)
    time.sleep(1.0)
    restartable_engine.restart()
    worker.join(timeout=40)
    assert not worker.is_alive()
    assert outcome == [None]
    assert restartable_engine.client.api.inspect_container(c.id)["State"]["Running"] is False
    ctl.close()


def test_engine_crashed_mid_stop(restartable_engine: DockerEngine) -> None:
    """dockerd dies (SIGKILL) while a stop is in flight: one readable line, not a StopTimeout, and the same
    controller works again once the engine is back."""
    c = restartable_engine.run(unique_name("mid-stop"), STUBBORN)
    ctl = DockerController(base_url=restartable_engine.socket_url)
    worker, outcome = _stop_in_thread(ctl, c.id, timeout=20)
    time.sleep(1.0)  # the stop is waiting out its 20 s of SIGTERM grace
    restartable_engine.crash()
    worker.join(timeout=10)
    assert not worker.is_alive()
    assert len(outcome) == 1 and outcome[0] is not None, outcome
    err = outcome[0]
    assert isinstance(err, ControlError) and not isinstance(err, StopTimeout), repr(err)
    assert str(err) == (
        "Docker engine stopped answering: the engine closed the connection mid-request (restarted?)"
    )

    # the socket file is still there but nobody listens
    with pytest.raises(ControlError) as again:
        ctl.kill(c.id)
    assert str(again.value) == (
        f"Docker engine stopped answering: connection refused on {restartable_engine.socket_path}"
    )

    restartable_engine.start()
    ctl.kill(c.id)  # without live-restore dockerd stopped it on start-up already: still no error
    after = restartable_engine.run(unique_name("after-crash"), POLITE)
    ctl.stop(after.id, timeout=5)
    assert restartable_engine.client.api.inspect_container(after.id)["State"]["Status"] == "exited"
    ctl.close()
