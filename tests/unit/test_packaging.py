"""`pip install .` (README's first command) installs only the packages pyproject.toml lists; the tests run
on an editable install, which would hide a package missing from that list. So every package is listed."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_package_is_listed_for_a_plain_install() -> None:
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {
        ".".join(init.parent.relative_to(ROOT).parts) for init in (ROOT / "sparktop").rglob("__init__.py")
    }
    assert found - listed == set(), f"not installed by `pip install .`: {sorted(found - listed)}"
