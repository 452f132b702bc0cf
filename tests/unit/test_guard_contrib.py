"""contrib/sparktop-guard.service starts a valid `sparktop guard` that may write its state directory."""

from __future__ import annotations

import configparser
import shlex
from pathlib import Path

from sparktop.guard.cli import _parser

UNIT = Path(__file__).resolve().parents[2] / "contrib" / "sparktop-guard.service"


def test_guard_unit_runs_a_valid_guard_that_can_write_its_state() -> None:
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment, method-assign]
    unit.read(UNIT)
    argv = shlex.split(unit["Service"]["ExecStart"])
    assert argv[0].endswith("sparktop") and argv[1] == "guard"
    opts = _parser().parse_args(argv[2:])
    assert not opts.dry_run and opts.interval == 1
    service = unit["Service"]
    assert service["ProtectSystem"] == "strict"
    assert "/root/.local/state/sparktop" in service["ReadWritePaths"].split()  # black box, guard.json, log
    assert int(service["OOMScoreAdjust"]) < 0  # not the OOM killer's victim in the crisis it warns about
    assert unit["Install"]["WantedBy"] == "multi-user.target"
