"""Pick the snapshot source the user asked for: live (default), demo or replay."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sparktop.sources.snapshot_source import SnapshotSource

if TYPE_CHECKING:
    from sparktop.settings.config import Config


class SourceError(Exception):
    """The requested source cannot be opened; str() is one line for the user."""


def open_source(
    demo: str | None = None, replay: str | None = None, seed: int = 0, config: Config | None = None
) -> SnapshotSource:
    """The source for the command-line flags: `--demo [SCENARIO]`, `--replay FILE` or, by default, live
    (its add-on collectors made with the user's `config`: the model servers it lists, say)."""
    if demo is not None and replay is not None:
        raise SourceError("choose one of --demo and --replay")
    if demo is not None:
        from sparktop.sources.demo import DemoSource

        try:
            return DemoSource(scenario=demo, seed=seed)
        except ValueError as exc:
            raise SourceError(str(exc)) from exc
    if replay is not None:
        from sparktop.sources.replay import ReplaySource

        path = Path(replay)
        if not path.is_file():
            raise SourceError(f"{path}: no such recording")
        try:
            return ReplaySource(path)
        except (OSError, ValueError) as exc:
            raise SourceError(f"{path}: {exc}") from exc
    from sparktop.sources.live import LiveSource

    return LiveSource(config=config)
