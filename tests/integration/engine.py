"""A real, private Docker engine for the integration tests.

`DockerEngine` starts `dockerd` as root on a socket, data root, exec root and pid file of its own under a
fresh temporary directory, with `--bridge=none --iptables=false --ip6tables=false`, so it cannot collide with
another engine on the machine (the system one, or a second test session) and needs no network. It imports a
tiny image built from the static `/bin/busybox` (the engine API behind `docker import`; no registry is
reachable) and runs containers with `network_mode="none"`.

Everything that can go wrong while starting raises `EngineError` with the tail of dockerd's log: the fixture
turns that into a test failure, never a skip.

Permission denied for root: root passes every file permission check (CAP_DAC_OVERRIDE), so a socket with mode
000 is still reachable. `run_as_user()` forks the test process and drops to `nobody` (no supplementary groups)
before calling the probe; the engine's socket is `root:docker 0660` (or `root:root`), exactly what a user
outside the docker group meets on a real machine.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import itertools
import os
import pickle
import shutil
import signal
import socket
import subprocess
import tarfile
import tempfile
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import docker
import docker.errors
import docker.models.containers

# docker-py's high-level run() does not pass StopTimeout through (the low-level create does): allow it.
if "stop_timeout" not in docker.models.containers.RUN_CREATE_KWARGS:
    docker.models.containers.RUN_CREATE_KWARGS.append("stop_timeout")

DOCKERD = shutil.which("dockerd") or "/usr/sbin/dockerd"
BUSYBOX = "/bin/busybox"
IMAGE = "sparktop-test/busybox:latest"
# What the `lab` fixture's /dev/shm container holds: far above an idle container's few MB, and small beside
# the MemAvailable floors of the guard tests on other workers (200 MB came and went with each module's lab).
SHM_BYTES = 64_000_000
TMP_PREFIX = "sparktop-docker-"
# Applets the tests rely on; `busybox --list` adds the rest when it is available.
APPLETS = (
    "sh",
    "sleep",
    "head",
    "cat",
    "echo",
    "kill",
    "ps",
    "true",
    "ls",
    "dd",
    "mkdir",
    "rm",
    "env",
    "top",
)


_names = itertools.count(1)


def unique_name(stem: str) -> str:
    """Container names must be unique per engine: `stem-<n>`."""
    return f"{stem}-{os.getpid()}-{next(_names)}"


class EngineError(RuntimeError):
    """The private engine could not be started or used; str() says why, with dockerd's log tail."""


# --- the busybox image --------------------------------------------------------------------------------------


def busybox_applets(busybox: str = BUSYBOX) -> list[str]:
    try:
        out = subprocess.run(
            [busybox, "--list"], capture_output=True, text=True, timeout=10, check=True
        ).stdout
        names = {line.strip() for line in out.splitlines() if line.strip() and "/" not in line}
    except (OSError, subprocess.SubprocessError):
        names = set()
    return sorted(names | set(APPLETS))


def busybox_rootfs_tar(busybox: str = BUSYBOX) -> bytes:
    """A root filesystem tar: /bin/busybox, one symlink per applet, and the usual empty directories."""
    if not os.path.isfile(busybox):
        raise EngineError(f"{busybox} not found: install busybox-static (apt-get install busybox-static)")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, mode in (
            ("bin", 0o755),
            ("etc", 0o755),
            ("tmp", 0o1777),
            ("root", 0o700),
            ("dev", 0o755),
            ("proc", 0o555),
            ("sys", 0o555),
            ("var", 0o755),
        ):
            info = tarfile.TarInfo(name)
            info.type = tarfile.DIRTYPE
            info.mode = mode
            tar.addfile(info)
        tar.add(busybox, arcname="bin/busybox", recursive=False)
        for applet in busybox_applets(busybox):
            if applet == "busybox":
                continue
            info = tarfile.TarInfo(f"bin/{applet}")
            info.type = tarfile.SYMTYPE
            info.linkname = "busybox"
            info.mode = 0o777
            tar.addfile(info)
        passwd = b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n"
        info = tarfile.TarInfo("etc/passwd")
        info.size = len(passwd)
        info.mode = 0o644
        tar.addfile(info, io.BytesIO(passwd))
    return buf.getvalue()


# --- the engine ---------------------------------------------------------------------------------------------


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _pid_running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's zombie may wait a while for init to reap it)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _stray_processes(root: Path) -> list[tuple[int, list[str]]]:
    """Processes whose command line names a path under `root`: this engine's dockerd, containerd, shims."""
    needle = str(root).rstrip("/") + "/"
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                argv = [a.decode(errors="replace") for a in fh.read().split(b"\0") if a]
        except OSError:
            continue
        if any(needle in a for a in argv):
            found.append((int(entry), argv))
    return found


def _children(pid: int) -> list[int]:
    kids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                if int(fh.read().rsplit(")", 1)[1].split()[1]) == pid:
                    kids.append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    return kids


def kill_strays(root: Path) -> list[int]:
    """SIGKILL what an engine rooted at `root` left running (after a crash): each shim's container init
    first (its PID namespace goes with it), then the shims, containerd and dockerd; then remove the
    containers' empty cgroup directories. Only processes that name `root` are touched."""
    killed = []
    strays = _stray_processes(root)
    for pid, argv in strays:
        if argv and argv[0].endswith(("containerd-shim-runc-v2", "containerd-shim")):
            for child in _children(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child, signal.SIGKILL)
                    killed.append(child)
    ids = []
    for pid, argv in strays:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        if "-id" in argv[:-1]:
            ids.append(argv[argv.index("-id") + 1])
    if ids:
        time.sleep(0.2)
        for cid in ids:
            for cgdir in Path("/sys/fs/cgroup").glob(f"*/docker/{cid}"):
                with contextlib.suppress(OSError):
                    cgdir.rmdir()
    return killed


def _mounts_under(root: Path) -> list[str]:
    prefix = str(root).rstrip("/") + "/"
    found = []
    try:
        with open("/proc/self/mountinfo") as fh:
            for line in fh:
                mount_point = line.split()[4].replace("\\040", " ")
                if mount_point.startswith(prefix):
                    found.append(mount_point)
    except OSError:
        pass
    return sorted(found, key=len, reverse=True)


def _remove_tree(root: Path) -> None:
    for mount_point in _mounts_under(root):
        subprocess.run(["umount", "-l", mount_point], capture_output=True, check=False)
    shutil.rmtree(root, ignore_errors=True)


def wait_for_shm_fill(container: Any, nbytes: int = SHM_BYTES, timeout: float = 30.0) -> None:
    """Until the container's /dev/shm/x holds `nbytes` (seen from inside): `docker run -d` returns as soon as
    the container starts, long before `head` has written 200 MB."""
    deadline = time.monotonic() + timeout
    while True:
        out = container.exec_run(["sh", "-c", "ls -l /dev/shm/x"]).output.decode(errors="replace")
        parts = out.split()
        if len(parts) > 4 and parts[4].isdigit() and int(parts[4]) >= nbytes:
            return
        if time.monotonic() > deadline:
            raise EngineError(f"/dev/shm not filled within {timeout:g} s: {out!r}")
        time.sleep(0.1)


def _ppid(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as fh:
        return int(fh.read().rsplit(")", 1)[1].split()[1])


@contextlib.contextmanager
def hung_runtime(container: Any) -> Iterator[int]:
    """A hung runtime for the block: the container's containerd shim SIGSTOPped, so neither SIGTERM nor
    SIGKILL reach the container and the engine's stop call never returns (SIGKILL reaches even
    cgroup-frozen tasks on this kernel, so a frozen container is not enough). Yields the container's PID;
    the shim is SIGCONTed when the block ends."""
    container.reload()
    pid = container.attrs["State"]["Pid"]
    shim = _ppid(pid)
    with open(f"/proc/{shim}/cmdline", "rb") as fh:
        assert b"containerd-shim" in fh.read()
    os.kill(shim, signal.SIGSTOP)
    try:
        yield pid
    finally:
        os.kill(shim, signal.SIGCONT)


def engines_dir() -> Path:
    """Where this checkout's test engines live: one directory per checkout, so that a run reaps only what an
    earlier run of the same checkout left behind, never the engines of other checkouts' suites running at
    the same time on this machine."""
    checkout = str(Path(__file__).resolve().parents[2])
    tag = hashlib.sha1(checkout.encode()).hexdigest()[:10]
    path = Path(tempfile.gettempdir()) / f"sparktop-engines-{os.geteuid()}-{tag}"
    path.mkdir(mode=0o711, exist_ok=True)
    if path.is_symlink() or path.stat().st_uid != os.geteuid():
        raise EngineError(f"{path} is not ours: remove it, or set TMPDIR")
    path.chmod(0o711)  # other users reach the sockets inside (run_as_user), as under /tmp
    return path


def reap_stale_engines(base: Path | None = None) -> list[str]:
    """Remove the directories (and stray shims) of earlier test engines of this checkout (`engines_dir()`)
    whose dockerd is gone (a session that was killed). A live dockerd's directory, or one active in the last
    5 minutes, is left alone; nothing outside `base` is looked at."""
    removed = []
    base = base or engines_dir()
    for root in base.glob(f"{TMP_PREFIX}*"):
        pidfile = root / "docker.pid"
        try:
            pid = int(pidfile.read_text().strip())
        except (OSError, ValueError):
            pid = None
        if pid is not None and _pid_alive(pid):
            continue
        try:
            quiet_s = time.time() - max(root.stat().st_mtime, (root / "dockerd.log").stat().st_mtime)
        except OSError:
            quiet_s = time.time() - root.stat().st_mtime
        if quiet_s < 300:
            continue  # maybe an engine starting or restarting right now, in another session
        kill_strays(root)
        _remove_tree(root)
        removed.append(str(root))
    return removed


class DockerEngine:
    """One private dockerd: `start()`, `stop()`, `restart()`, `crash()`; `run()` for containers; `close()`
    removes everything."""

    def __init__(self, root: Path | None = None, image: str = IMAGE, shutdown_timeout: int = 3) -> None:
        self.root = Path(root) if root else Path(tempfile.mkdtemp(prefix=TMP_PREFIX, dir=engines_dir()))
        self.root.mkdir(parents=True, exist_ok=True)
        # Other users must be able to reach the socket's inode, so that `run_as_user` meets the socket's own
        # permissions (a real "permission denied"), not the directory's.
        self.root.chmod(0o711)
        self.socket_path = self.root / "docker.sock"
        self.socket_url = f"unix://{self.socket_path}"
        self.data_root = self.root / "data"
        self.exec_root = self.root / "exec"
        self.pidfile = self.root / "docker.pid"
        self.log_path = self.root / "dockerd.log"
        self.image = image
        self.shutdown_timeout = shutdown_timeout
        self.proc: subprocess.Popen[bytes] | None = None
        self.client: docker.DockerClient | None = None
        self.startup_s: float | None = None  # seconds from exec to the first answered ping, last start
        self.import_s: float | None = None
        self._containers: list[str] = []  # ids started through run(), removed by remove_all()

    # -- life cycle

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no dockerd log)"
        return "\n".join(text.splitlines()[-lines:])

    def start(self, timeout: float = 60.0) -> DockerEngine:
        if self.running:
            return self
        if not os.path.isfile(DOCKERD) or not os.access(DOCKERD, os.X_OK):
            raise EngineError(
                f"dockerd not found at {DOCKERD}: install docker.io (apt-get install docker.io)"
            )
        if os.geteuid() != 0:
            raise EngineError("the Docker integration tests start dockerd and must run as root")
        for path in (self.data_root, self.exec_root):
            path.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()
        cmd = [
            DOCKERD,
            "--host",
            self.socket_url,
            "--data-root",
            str(self.data_root),
            "--exec-root",
            str(self.exec_root),
            "--pidfile",
            str(self.pidfile),
            "--bridge=none",
            "--iptables=false",
            "--ip6tables=false",
            "--ip-masq=false",
            f"--shutdown-timeout={self.shutdown_timeout}",
            "--log-level=info",
        ]
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child, closed below
        started = time.monotonic()
        try:
            self.proc = subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )
        except OSError as exc:
            raise EngineError(f"cannot start {DOCKERD}: {exc}") from exc
        finally:
            log.close()
        deadline = started + timeout
        last_error: Exception | None = None
        while True:
            if self.proc.poll() is not None:
                raise EngineError(
                    f"dockerd exited with status {self.proc.returncode} while starting.\n"
                    f"command: {' '.join(cmd)}\n--- dockerd log ({self.log_path}) ---\n{self.log_tail()}"
                )
            if self.socket_path.exists():
                try:
                    probe = docker.APIClient(base_url=self.socket_url, version="auto", timeout=2)
                    try:
                        if probe.ping():
                            break
                    finally:
                        probe.close()
                except Exception as exc:
                    last_error = exc
            if time.monotonic() > deadline:
                self._terminate()
                raise EngineError(
                    f"dockerd did not answer on {self.socket_url} within {timeout:.0f} s"
                    f" (last error: {last_error}).\n--- dockerd log ({self.log_path}) ---\n{self.log_tail()}"
                )
            time.sleep(0.05)
        self.startup_s = time.monotonic() - started
        if self.client is None:
            self.client = docker.DockerClient(base_url=self.socket_url, timeout=60)
        self._ensure_image()
        return self

    def _ensure_image(self) -> None:
        assert self.client is not None
        try:
            self.client.images.get(self.image)
            return
        except docker.errors.ImageNotFound:
            pass
        repository, _, tag = self.image.rpartition(":")
        t0 = time.monotonic()
        try:
            self.client.api.import_image_from_data(busybox_rootfs_tar(), repository=repository, tag=tag)
            self.client.images.get(self.image)
        except docker.errors.DockerException as exc:
            raise EngineError(f"cannot import the busybox image: {exc}\n{self.log_tail()}") from exc
        self.import_s = time.monotonic() - t0

    def _terminate(self, kill_after: float = 30.0) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=kill_after)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc = None

    def stop(self) -> None:
        """Stop dockerd the way `systemctl stop docker` does (SIGTERM). Without live-restore it stops its
        containers first (SIGTERM, SIGKILL after `shutdown_timeout` s) and removes its socket."""
        self._terminate(kill_after=self.shutdown_timeout + 30)

    def restart(self, timeout: float = 60.0) -> None:
        self.stop()
        self.start(timeout=timeout)

    def crash(self) -> None:
        """SIGKILL dockerd, as if it crashed: in-flight requests are cut, the socket file stays behind, the
        containers keep running under their shims. Its containerd dies with it (parent-death signal); its
        stale pid file is removed so that `start()` launches a fresh one, which adopts the running shims."""
        if self.proc is None:
            return
        containerd_pidfile = self.exec_root / "containerd" / "containerd.pid"
        try:
            containerd_pid = int(containerd_pidfile.read_text().strip())
        except (OSError, ValueError):
            containerd_pid = None
        self.proc.kill()
        self.proc.wait(timeout=30)
        self.proc = None
        if containerd_pid is not None:
            deadline = time.monotonic() + 10
            while _pid_running(containerd_pid) and time.monotonic() < deadline:
                time.sleep(0.05)
        with contextlib.suppress(FileNotFoundError):
            containerd_pidfile.unlink()

    # -- containers

    def run(
        self,
        name: str,
        cmd: str | list[str],
        labels: dict[str, str] | None = None,
        shm_size: str | int | None = None,
        **kw: Any,
    ) -> docker.models.containers.Container:
        """`docker run -d --network none --stop-timeout 2 --name NAME [--shm-size] [--label ...] IMAGE CMD`;
        removed by `remove_all()` / `close()`."""
        if self.client is None:
            raise EngineError("the engine is not started")
        kw.setdefault("network_mode", "none")
        kw.setdefault("detach", True)
        # The grace dockerd gives the container when it shuts down or restores after a crash (default 10 s);
        # a stop through the API passes its own timeout and is not affected.
        kw.setdefault("stop_timeout", 2)
        container = self.client.containers.run(
            self.image, cmd, name=name, labels=labels or {}, shm_size=shm_size, **kw
        )
        self._containers.append(container.id)
        return container

    def remove(self, ids: Iterable[str]) -> None:
        if self.client is None or not self.running:
            return
        for cid in ids:
            with contextlib.suppress(docker.errors.NotFound, docker.errors.APIError):
                self.client.api.remove_container(cid, force=True)

    def remove_all(self) -> None:
        """Remove every container of this engine (the ones from run() and any other left behind)."""
        if self.client is None or not self.running:
            return
        ids = set(self._containers)
        with contextlib.suppress(docker.errors.DockerException):
            ids.update(c["Id"] for c in self.client.api.containers(all=True))
        self.remove(ids)
        self._containers.clear()

    def close(self) -> None:
        """Remove containers, stop dockerd, unmount what it left and delete the directory."""
        try:
            with contextlib.suppress(Exception):
                self.remove_all()
            if self.client is not None:
                with contextlib.suppress(Exception):
                    self.client.close()
            self._terminate()
            kill_strays(self.root)
        finally:
            _remove_tree(self.root)

    # -- endpoints that fail in known ways

    def missing_socket_url(self) -> str:
        """A unix socket URL whose path does not exist."""
        return f"unix://{self.root / 'no-such-docker.sock'}"

    def dead_socket_url(self) -> str:
        """A socket file nobody accepts on (bound, never listening): connect() gets ECONNREFUSED, as after
        dockerd was killed without removing its socket."""
        path = self.root / "dead-docker.sock"
        if not path.exists():
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.bind(str(path))
            sock.close()
        return f"unix://{path}"

    def __enter__(self) -> DockerEngine:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


# --- running a probe as an unprivileged user ----------------------------------------------------------------


def run_as_user(
    fn: Callable[..., Any],
    *args: Any,
    uid: int = 65534,
    gid: int = 65534,
    timeout: float = 60.0,
    **kwargs: Any,
) -> Any:
    """Call fn(*args, **kwargs) in a forked child running as uid/gid (default nobody) with no supplementary
    groups, and return its (pickled) result; an exception in the child is raised here as EngineError with
    the child's traceback. Import what fn needs before calling: the child may not read root-only files."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        status = 0
        try:
            os.close(read_fd)
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            try:
                payload = pickle.dumps(("ok", fn(*args, **kwargs)))
            except BaseException:
                payload = pickle.dumps(("error", traceback.format_exc()))
            with os.fdopen(write_fd, "wb") as fh:
                fh.write(payload)
        except BaseException:
            status = 1
        finally:
            os._exit(status)
    os.close(write_fd)
    chunks = []
    deadline = time.monotonic() + timeout
    with os.fdopen(read_fd, "rb") as fh:
        while True:
            chunk = fh.read(65536)
            if not chunk:
                break
            chunks.append(chunk)
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise EngineError(f"the probe running as uid {uid} did not finish within {timeout:.0f} s")
        time.sleep(0.01)
    if not chunks:
        raise EngineError(f"the probe running as uid {uid} died without an answer (status {status})")
    kind, value = pickle.loads(b"".join(chunks))
    if kind == "error":
        raise EngineError(f"the probe running as uid {uid} failed:\n{value}")
    return value
