"""schema/snapshot.schema.json is the published contract of `--once --json` and /snapshot.json (issue #25 item
12): generated from the pydantic model, never stale, and what sparktop prints validates against it."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from sparktop.commands.main import main
from sparktop.core.snapshot import SNAPSHOT_VERSION, snapshot_json_schema

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "schema" / "snapshot.schema.json"


def published() -> dict:
    return json.loads(SCHEMA_PATH.read_text())


def test_the_published_schema_is_the_models_own() -> None:
    # After a change to sparktop/core/snapshot.py: python scripts/snapshot_schema.py
    assert published() == json.loads(json.dumps(snapshot_json_schema())), "schema/ is stale"


def test_the_schema_names_the_version_a_client_reads() -> None:
    schema = published()
    assert schema["$id"] == f"sparktop-snapshot-v{SNAPSHOT_VERSION}"
    assert schema["properties"]["version"]["default"] == SNAPSHOT_VERSION
    jsonschema.Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("scenario", ["everything", "servers", "discrete"])
def test_once_json_validates_against_the_published_schema(
    scenario: str, capsys: pytest.CaptureFixture
) -> None:
    assert main(["--demo", scenario, "--once", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    jsonschema.Draft202012Validator(published()).validate(printed)
    assert printed["version"] == SNAPSHOT_VERSION


def test_the_schema_refuses_what_is_not_a_snapshot() -> None:
    validator = jsonschema.Draft202012Validator(published())
    assert not validator.is_valid({"version": 1, "timestamp": "yesterday"})
    assert not validator.is_valid({"version": 1})  # no memory, no timestamp
