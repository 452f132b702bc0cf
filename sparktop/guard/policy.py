"""Which listed thing the guard stops: the first rule of the `[guard]` table's `stop` list, in the user's
order, that matches something present in the snapshot. Never anything unlisted."""

from __future__ import annotations

import fnmatch

from pydantic import BaseModel, Field

from sparktop.core.snapshot import ContainerInfo, ProcessInfo, Snapshot
from sparktop.settings.guard import StopRule


class Target(BaseModel):
    """What a rule matched in a snapshot: containers (one, or a compose project's) or one host process."""

    rule: str
    label: str
    containers: list[ContainerInfo] = Field(default_factory=list)
    process: ProcessInfo | None = None
    bytes: int = 0


def _matches(pattern: str, *values: str | None) -> bool:
    return any(v is not None and fnmatch.fnmatchcase(v, pattern) for v in values)


def find_target(rules: list[StopRule], snapshot: Snapshot, skip: set[str] | None = None) -> Target | None:
    """The first rule, in the user's order, that matches something present in `snapshot`. Never anything
    unlisted. `skip`: labels already being stopped."""
    skip = skip or set()
    sizes = {c.key: c.total for c in (snapshot.accounting.consumers if snapshot.accounting else [])}
    for rule in rules:
        if rule.container:
            for c in snapshot.containers:
                if c.name and _matches(rule.container, c.name) and c.label not in skip:
                    return Target(
                        rule=rule.describe(),
                        label=c.label,
                        containers=[c],
                        bytes=sizes.get(f"container:{c.id}", 0),
                    )
        elif rule.compose:
            members = [c for c in snapshot.containers if c.compose_project == rule.compose]
            if members and f"compose {rule.compose}" not in skip:
                total = sum(sizes.get(f"container:{c.id}", 0) for c in members)
                return Target(
                    rule=rule.describe(), label=f"compose {rule.compose}", containers=members, bytes=total
                )
        elif rule.process:
            found = [
                p
                for p in snapshot.processes
                if p.container_id is None and _matches(rule.process, p.name, p.cmdline) and p.pid != 1
            ]
            found = [p for p in found if f"{p.name} ({p.pid})" not in skip]
            if found:
                biggest = max(found, key=lambda p: (p.rss + (p.gpu_bytes or 0), -p.pid))
                return Target(
                    rule=rule.describe(),
                    label=f"{biggest.name} ({biggest.pid})",
                    process=biggest,
                    bytes=biggest.rss + (biggest.gpu_bytes or 0),
                )
    return None
