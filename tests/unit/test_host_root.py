"""`--root DIR`: sparktop in a container reads the host mounted at DIR (issue #25 item 8): its /proc, cgroup
tree, Docker socket and hostname, tested on a whole host tree under another root."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fixtures.cli import run_main
from tests.fixtures.trees import HOST_CONTAINER, host_tree


def once_json(*args: str) -> dict:
    done = run_main(*args, "--once", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_once_reads_the_host_under_root(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    snapshot = once_json("--root", str(root))
    assert snapshot["hostname"] == "spark-host"  # the host's name, not this container's
    assert snapshot["memory"]["total"] == 100 * 1024**3 and snapshot["memory"]["available"] == 40 * 1024**3
    assert {p["pid"] for p in snapshot["processes"]} == {4321, 77}
    (container,) = snapshot["containers"]
    assert container["id"] == HOST_CONTAINER and container["pids"] == [4321]
    assert container["memory"]["usage"] == 3 * 1024**3  # read from the host's cgroup tree under the root
    # The Docker socket is looked for under the root too: none is mounted here, and the reason names it.
    assert f"{root}/var/run/docker.sock" in (snapshot["docker"]["reason"] or "")


def test_a_root_without_a_proc_is_a_usage_error(tmp_path: Path) -> None:
    done = run_main("--root", str(tmp_path), "--once")
    assert done.returncode == 3
    assert (
        done.stderr.strip()
        == f"sparktop: --root: {tmp_path}/proc is not a directory: mount the host's /proc there"
    )


def test_serve_takes_the_root_too(tmp_path: Path) -> None:
    from sparktop.commands.common import load_settings
    from sparktop.commands.main import build_parser, parse_command_line

    root = host_tree(tmp_path / "host")
    args = ["serve", "--root", str(root)]
    parser = build_parser(args)
    config, _ = load_settings(parser.command_parsers["serve"], parse_command_line(parser, args))
    assert config.host_root == str(root)
