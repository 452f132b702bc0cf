"""contrib/'s systemd units: each starts a valid sparktop command, passes `systemd-analyze verify`, scores OK
(at most 4.5) in `systemd-analyze security --offline`, and writes its state where systemd creates it (issue
#25 item 6: the guard named a ReadWritePaths= directory that a fresh machine lacks, the exporter lost its
footprints to ProtectHome=read-only and listened on 0.0.0.0)."""

from __future__ import annotations

import configparser
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sparktop.commands import guard, serve
from sparktop.commands.common import command_parser
from sparktop.commands.serve import parse_listen
from sparktop.settings.files import state_dir

CONTRIB = Path(__file__).resolve().parents[2] / "contrib"
UNITS = ("sparktop-exporter.service", "sparktop-guard.service")
SYSTEMD_ANALYZE = (
    shutil.which("systemd-analyze") or "systemd-analyze"
)  # Debian's systemd (.ci/run installs it)
MAX_EXPOSURE = 4.5  # systemd-analyze calls 4.5 and below "OK"


def read_unit(name: str) -> configparser.ConfigParser:
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment, method-assign]
    unit.read(CONTRIB / name)
    return unit


def installed_copy(name: str, tmp_path: Path) -> Path:
    """The unit as a user installs it: ExecStart pointing at this environment's sparktop."""
    sparktop = Path(sys.executable).parent / "sparktop"
    text = (CONTRIB / name).read_text()
    text = re.sub(r"^ExecStart=\S+", f"ExecStart={sparktop}", text, flags=re.MULTILINE)
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("name", UNITS)
def test_the_unit_passes_systemd_analyze_verify(name: str, tmp_path: Path) -> None:
    path = installed_copy(name, tmp_path)
    result = subprocess.run(
        [SYSTEMD_ANALYZE, "verify", "--man=no", str(path)], capture_output=True, text=True, timeout=60
    )
    problems = [line for line in (result.stdout + result.stderr).splitlines() if name in line]
    assert result.returncode == 0 and not problems, result.stdout + result.stderr


@pytest.mark.parametrize("name", UNITS)
def test_the_unit_scores_ok_in_systemd_analyze_security(name: str, tmp_path: Path) -> None:
    path = installed_copy(name, tmp_path)
    result = subprocess.run(
        [SYSTEMD_ANALYZE, "security", "--offline=true", "--no-pager", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    found = re.search(r"Overall exposure level for \S+: ([0-9.]+)", result.stdout)
    assert found, result.stdout + result.stderr
    assert float(found.group(1)) <= MAX_EXPOSURE, result.stdout


def unit_environment(service: configparser.SectionProxy) -> dict[str, str]:
    env = dict(word.split("=", 1) for word in shlex.split(service["Environment"]))
    return {key: value.replace("%S", "/var/lib") for key, value in env.items()}  # %S: the system's state root


@pytest.mark.parametrize("name", UNITS)
def test_the_unit_writes_its_state_where_systemd_creates_it(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = read_unit(name)["Service"]
    assert "ReadWritePaths" not in service  # a fresh machine lacks the directory: 226/NAMESPACE
    assert service["StateDirectory"] == "sparktop" and service["StateDirectoryMode"] == "0700"
    for key, value in unit_environment(service).items():  # the service's environment, in this process
        monkeypatch.setenv(key, value)
    assert state_dir() == Path("/var/lib/sparktop")  # what StateDirectory=sparktop creates


def test_the_exporter_unit_runs_a_valid_serve_on_loopback() -> None:
    unit = read_unit("sparktop-exporter.service")
    argv = shlex.split(unit["Service"]["ExecStart"])
    assert argv[0].endswith("sparktop") and argv[1] == "serve"
    host, port = parse_listen(
        command_parser("sparktop serve", serve.add_arguments).parse_args(argv[2:]).listen
    )
    assert (host, port) == ("127.0.0.1", 9877)  # /snapshot.json names every consumer: not for the network
    assert unit["Service"]["IPAddressAllow"] == "localhost"
    assert unit["Install"]["WantedBy"] == "multi-user.target"


def test_the_guard_unit_runs_a_valid_guard_that_outlives_the_crisis() -> None:
    unit = read_unit("sparktop-guard.service")
    argv = shlex.split(unit["Service"]["ExecStart"])
    assert argv[0].endswith("sparktop") and argv[1] == "guard"
    opts = command_parser("sparktop guard", guard.add_arguments).parse_args(argv[2:])
    assert not opts.dry_run and opts.interval == 1
    assert "CAP_KILL" in unit["Service"]["CapabilityBoundingSet"].split()  # it may signal a listed process
    assert (
        int(unit["Service"]["OOMScoreAdjust"]) < 0
    )  # not the OOM killer's victim in the crisis it warns about
    assert unit["Install"]["WantedBy"] == "multi-user.target"
