"""The columns of the containers and processes tables, one `ColumnSpec` each, in their default order.

Their one definition: the tables draw these (ui/widgets/tables.py), the rows fill them (session/rows.py), and
the config accepts exactly these names (settings/config.py), so a column added here is valid in config.toml at
once. Imports nothing of sparktop, so the settings can use it.
"""

from __future__ import annotations

from dataclasses import dataclass

# The column a machine may be unable to fill at all: hidden (with the reason on the GPU panel), never 0s.
SM_COLUMN = "sm"


@dataclass(frozen=True)
class ColumnSpec:
    key: str
    label: str
    kind: str = "text"  # "text" | "bytes" | "rate" | "number" | "percent"
    max_width: int | None = None  # longer text is cut with "…"
    # Kept in a narrow terminal, where the other columns go (rightmost first) rather than be cut in half.
    essential: bool = False

    @property
    def numeric(self) -> bool:
        return self.kind != "text"


CONTAINER_COLUMN_SPECS: dict[str, ColumnSpec] = {
    c.key: c
    for c in (
        ColumnSpec("name", "container", max_width=32, essential=True),
        ColumnSpec("project", "project"),
        ColumnSpec("service", "service"),
        ColumnSpec("status", "status"),
        ColumnSpec("image", "image", max_width=32),
        ColumnSpec("id", "id"),
        ColumnSpec("cpu", "CPU", "bytes", essential=True),  # each cell names its unit, as btop does
        ColumnSpec("gpu", "GPU", "bytes", essential=True),
        ColumnSpec(SM_COLUMN, "sm", "percent"),
        ColumnSpec("total", "total", "bytes", essential=True),
        ColumnSpec("trend", "trend", "rate"),
        ColumnSpec("pss", "PSS", "bytes"),
        ColumnSpec("anon", "anon", "bytes"),
        ColumnSpec("file", "file", "bytes"),
        ColumnSpec("shmem", "shmem", "bytes"),
        ColumnSpec("limit", "limit", "bytes"),
        ColumnSpec("pids", "procs", "number"),
    )
}

PROCESS_COLUMN_SPECS: dict[str, ColumnSpec] = {
    c.key: c
    for c in (
        ColumnSpec("pid", "PID", "number", essential=True),
        ColumnSpec("name", "process", max_width=16, essential=True),
        ColumnSpec("container", "container", max_width=18),
        ColumnSpec("user", "user"),
        ColumnSpec("cpu_pct", "CPU", "percent"),
        ColumnSpec("rss", "RSS", "bytes", essential=True),
        ColumnSpec("pss", "PSS", "bytes"),
        ColumnSpec("gpu", "GPU", "bytes", essential=True),
        ColumnSpec(SM_COLUMN, "sm", "percent"),
        ColumnSpec("total", "total", "bytes", essential=True),
        ColumnSpec("trend", "trend", "rate"),
        ColumnSpec("command", "command", max_width=72),
    )
}

__all__ = ["CONTAINER_COLUMN_SPECS", "PROCESS_COLUMN_SPECS", "SM_COLUMN", "ColumnSpec"]
