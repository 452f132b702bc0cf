"""`--root DIR` on a tree someone else wrote (issue 32 item 9): a FIFO where a file should be made `--once`
(and serve and guard, on their first sample) hang for ever, and a link out of the tree made sparktop read a
file of the machine it runs on (DIR/etc/hostname -> /etc/shadow became the hostname). Only regular files are
read, never through a link that leaves the tree, and never more than a bound."""

from __future__ import annotations

import contextlib
import json
import os
import threading
import tracemalloc
from pathlib import Path

import pytest

from sparktop.collect import tree_files
from sparktop.collect.host_paths import HostPaths
from sparktop.collect.tree_files import NotRegularFile, read_bytes
from sparktop.sources.live import LiveSource
from tests.fixtures.cli import run_main
from tests.fixtures.trees import HOST_CONTAINER, host_tree

SECRET = "TOP-SECRET-not-the-hosts"


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """A file outside the tree, standing for /etc/shadow of the machine sparktop runs on."""
    path = tmp_path / "outside" / "shadow"
    path.parent.mkdir()
    path.write_text(f"{SECRET}\nroot:$6$hash:19000::::::\n")
    return path


def once_json(root: Path, fifo: Path | None = None, wait_s: float = 30) -> tuple[int, dict, str]:
    """`sparktop --root ROOT --once --json` in this process (a fresh interpreter each cost ~0.5 s of CPU).
    A reader waiting on `fifo` (the defect: open() waits for a writer) is let go after `wait_s` by a writer
    that opens and closes it, as often as it waits, and the test fails: never a hung worker."""
    stop, waited = threading.Event(), threading.Event()

    def let_go() -> None:
        if stop.wait(wait_s):
            return
        while not stop.wait(0.1):
            with contextlib.suppress(OSError):  # ENXIO: nobody is waiting on it
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # type: ignore[arg-type]
                waited.set()

    watchdog = threading.Thread(target=let_go, daemon=True)
    if fifo is not None:
        watchdog.start()
    try:
        done = run_main("--root", str(root), "--once", "--json")
    finally:
        stop.set()
    assert not waited.is_set(), f"--once waited on the FIFO {fifo} for {wait_s:g} s"
    return done.returncode, json.loads(done.stdout or "{}"), done.stderr


def replace(path: Path, how: str, target: Path | None = None) -> None:
    path.unlink(missing_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    if how == "fifo":
        os.mkfifo(path)
    else:
        assert target is not None
        path.symlink_to(target)


@pytest.mark.parametrize("name", ["proc/meminfo", "proc/stat", "proc/pressure/memory", "proc/4321/stat"])
def test_a_fifo_in_the_tree_is_refused_not_waited_on(tmp_path: Path, name: str) -> None:
    root = host_tree(tmp_path / "host")
    replace(root / name, "fifo")
    code, snapshot, stderr = once_json(root, fifo=root / name)  # hung for ever: open() waited for a writer
    assert "Traceback" not in stderr, stderr
    if name == "proc/meminfo":
        assert code != 0 or any("not a regular file" in e for e in snapshot.get("errors", [])), stderr
        assert "not a regular file" in stderr + json.dumps(snapshot)
    else:
        assert code == 0, stderr
    if name == "proc/4321/stat":
        assert {p["pid"] for p in snapshot["processes"]} == {77}  # the process it stood for is not shown


@pytest.mark.parametrize("rss", ["-1", "lots", "9" * 5000], ids=["negative", "word", "5000-digits"])
def test_garbage_rss_in_a_process_stat_skips_that_process(tmp_path: Path, rss: str) -> None:
    """The RSS is stat's field 24 (statm is not read): garbage there (or a line cut by the reader's bound)
    leaves that process out of the tick, and the rest of the snapshot stands."""
    root = host_tree(tmp_path / "host")
    path = root / "proc" / "4321" / "stat"
    head, _, rest = path.read_text().rpartition(") ")
    fields = rest.split()
    fields[21] = rss
    path.write_text(f"{head}) " + " ".join(fields) + "\n")
    (root / "proc" / "4321" / "statm").write_text("1 2 3 4 5 6 7\n")  # sound, and not what counts
    code, snapshot, stderr = once_json(root)
    assert code == 0 and "Traceback" not in stderr, stderr
    assert {p["pid"] for p in snapshot["processes"]} == {77}
    assert snapshot["memory"]["total"] == 100 * 1024**3


def test_a_hostname_that_links_out_of_the_tree_is_not_read(tmp_path: Path, secret: Path) -> None:
    root = host_tree(tmp_path / "host")
    replace(root / "etc" / "hostname", "link", secret)
    code, snapshot, stderr = once_json(root)
    assert code == 0, stderr
    assert SECRET not in json.dumps(snapshot) and SECRET not in stderr
    assert snapshot["hostname"] != "" and "\n" not in snapshot["hostname"]
    # a directory on the way that links out is not followed either
    (root / "etc" / "hostname").unlink()
    (root / "etc").rmdir()
    (root / "etc").symlink_to(secret.parent)
    secret.with_name("hostname").write_text(SECRET)
    assert SECRET not in json.dumps(once_json(root)[1])


def test_a_hostname_file_is_read_to_a_bound(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    with (root / "etc" / "hostname").open("w") as hostname:
        hostname.write("spark-host\n" + "x" * 4096)
        hostname.truncate(64 * 1024**2)  # 64 MiB, the rest a hole: writing them was most of this test's CPU
    tracemalloc.start()
    try:
        assert HostPaths(root).hostname() == "spark-host"
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1024**2, f"{peak} bytes allocated to read a host name"


def test_process_files_that_link_out_of_the_tree_are_not_read(tmp_path: Path, secret: Path) -> None:
    root = host_tree(tmp_path / "host")
    replace(root / "proc" / "4321" / "cmdline", "link", secret)
    # a whole process directory linking to this machine's own process 1
    (root / "proc" / "1").symlink_to("/proc/1")
    scope = f"system.slice/docker-{HOST_CONTAINER}.scope"
    cgroup_file = root / "sys" / "fs" / "cgroup" / scope / "memory.current"
    replace(cgroup_file, "link", secret)
    code, snapshot, stderr = once_json(root)
    assert code == 0, stderr
    text = json.dumps(snapshot)
    assert SECRET not in text
    assert {p["pid"] for p in snapshot["processes"]} == {4321, 77}  # not this machine's process 1
    (container,) = snapshot["containers"]
    assert (container["memory"] or {}).get("usage") in (None, 0)


@pytest.mark.parametrize("command", ["serve", "guard"])
def test_the_first_sample_of_serve_and_guard_does_not_hang(tmp_path: Path, command: str) -> None:
    """Both take their first sample through the Sampler before anything else: it hung on the FIFO."""
    root = host_tree(tmp_path / "host")
    replace(root / "proc" / "meminfo", "fifo")
    sampler = LiveSource(host=HostPaths(root), collectors=[])
    result: dict[str, object] = {}

    def sample() -> None:
        try:
            result["snapshot"] = sampler.sample()
        except Exception as exc:  # what the first sample raises is the finding
            result["error"] = exc

    job = threading.Thread(target=sample, daemon=True)
    job.start()
    job.join(30)
    assert not job.is_alive(), f"{command}'s first sample still waiting on a FIFO after 30 s"
    said = str(result.get("error") or getattr(result.get("snapshot"), "errors", ""))
    assert "not a regular file" in said
    sampler.close()


# --- the reader itself ------------------------------------------------------------------------------------


def test_read_bytes_refuses_what_is_not_a_regular_file_inside(tmp_path: Path, secret: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "file").write_text("inside\n")
    (tree / "inside-link").symlink_to("sub")  # a link that stays inside: followed by openat2
    (tree / "out").symlink_to(secret.parent)
    os.mkfifo(tree / "fifo")
    beneath = str(tree)
    assert read_bytes(f"{tree}/sub/file", 100, beneath) == b"inside\n"
    assert read_bytes(f"{tree}/sub/file", 3, beneath) == b"ins"
    with pytest.raises(NotRegularFile):
        read_bytes(f"{tree}/fifo", 100, beneath)
    with pytest.raises(NotRegularFile):
        read_bytes(f"{tree}/sub", 100, beneath)
    with pytest.raises(OSError, match="out of"):
        read_bytes(f"{tree}/out/shadow", 100, beneath)
    with pytest.raises(OSError, match="out of"):
        read_bytes(f"{tree}/sub/../../outside/shadow", 100, beneath)
    with pytest.raises(OSError, match="symbolic link"):
        read_bytes(f"{tree}/inside-link", 100, beneath)  # the last component is never a link


def test_without_openat2_the_walk_follows_no_link(tmp_path: Path, secret: Path, monkeypatch) -> None:
    """An older kernel, or a seccomp filter without openat2: each component is opened without following."""
    monkeypatch.setattr(tree_files, "_openat2_works", False)
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "file").write_text("inside\n")
    (tree / "out").symlink_to(secret.parent)
    os.mkfifo(tree / "sub" / "fifo")
    beneath = str(tree)
    assert read_bytes(f"{tree}/sub/file", 100, beneath) == b"inside\n"
    with pytest.raises(OSError, match="symbolic link on the way"):
        read_bytes(f"{tree}/out/shadow", 100, beneath)
    with pytest.raises(OSError, match="out of"):
        read_bytes(f"{tree}/sub/../out/shadow", 100, beneath)
    with pytest.raises(NotRegularFile):
        read_bytes(f"{tree}/sub/fifo", 100, beneath)


def test_the_docker_socket_is_looked_for_inside_the_root(tmp_path: Path) -> None:
    """On a host mounted at DIR, DIR/var/run is a link to /run: the host's /run, i.e. DIR/run, not the
    container's own. A socket linking to /var/run/docker.sock must not reach this machine's engine."""
    root = host_tree(tmp_path / "host")
    (root / "var" / "run").rmdir()
    (root / "run").mkdir()
    (root / "var" / "run").symlink_to("/run")
    assert HostPaths(root).docker_url == f"unix://{root}/run/docker.sock"
    (root / "run" / "docker.sock").symlink_to("/var/run/docker.sock")  # back to itself, inside the root
    assert "too many symbolic links" in (HostPaths(root).docker_url or "")
    (root / "run" / "docker.sock").unlink()
    (root / "run" / "docker.sock").symlink_to("../../../../../../../../engine.sock")  # .. stops at the root
    assert HostPaths(root).docker_url == f"unix://{root}/engine.sock"
    code, snapshot, stderr = once_json(root)
    assert code == 0, stderr
    assert f"{root}/engine.sock" in (snapshot["docker"]["reason"] or "")
