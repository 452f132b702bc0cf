"""Write schema/snapshot.schema.json: the JSON Schema of a snapshot as `sparktop --once --json` prints it and
`sparktop serve` serves it at /snapshot.json, generated from the pydantic model. Run it after changing
sparktop/core/snapshot.py: tests/unit/test_snapshot_schema.py fails while the file is stale."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sparktop.core.snapshot import snapshot_json_schema  # noqa: E402

PATH = ROOT / "schema" / "snapshot.schema.json"


def main() -> int:
    PATH.parent.mkdir(exist_ok=True)
    PATH.write_text(json.dumps(snapshot_json_schema(), indent=2, sort_keys=True) + "\n")
    print(f"wrote {PATH.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
